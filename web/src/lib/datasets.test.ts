import { describe, expect, it } from 'vitest';
import { conditionDatasets, describeCondition } from './datasets';

describe('data schedule conditions', () => {
  it('read as a sentence, groups in parentheses', () => {
    expect(describeCondition('ods.orders')).toBe('ods.orders');
    expect(describeCondition({ all: ['dwd.orders', 'ods.users'] })).toBe('dwd.orders and ods.users');
    expect(describeCondition({ any: ['a', 'b'] })).toBe('any of (a, b)');
    expect(describeCondition({ all: ['a', { any: ['b', { all: ['c', 'd'] }] }] })).toBe(
      'a and any of (b, (c and d))',
    );
  });

  it('name each dataset once', () => {
    expect(conditionDatasets({ all: ['a', { any: ['b', 'a'] }, 'c'] })).toEqual(['a', 'b', 'c']);
  });
});
