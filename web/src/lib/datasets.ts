// A data schedule's condition (docs/DAG_FORMAT.md "Datasets and data
// schedules") as people read it, and the datasets it names.

import i18next from 'i18next';
import type { Condition } from '../api/types';

/**
 * `dwd.orders and ods.users`, `any of (a, b)`, nested groups in parentheses,
 * in the UI's language (the dataset names as written).
 */
export function describeCondition(condition: Condition): string {
  return describe(condition, true);
}

function describe(condition: Condition, top: boolean): string {
  if (typeof condition === 'string') return condition;
  if ('all' in condition) {
    const parts = condition.all.map((c) => describe(c, false));
    const text = parts.length ? parts.reduce((left, right) => i18next.t('datasets:condition.and', { left, right })) : '';
    return top || parts.length === 1 ? text : `(${text})`;
  }
  const parts = condition.any.map((c) => describe(c, false));
  return parts.length === 1
    ? parts.join('')
    : i18next.t('datasets:condition.anyOf', { items: parts.join(i18next.t('datasets:condition.separator')) });
}

/** Every dataset a condition names, once each, in the order written. */
export function conditionDatasets(condition: Condition): string[] {
  const seen: string[] = [];
  const walk = (c: Condition) => {
    if (typeof c === 'string') {
      if (!seen.includes(c)) seen.push(c);
    } else if ('all' in c) {
      c.all.forEach(walk);
    } else {
      c.any.forEach(walk);
    }
  };
  walk(condition);
  return seen;
}
