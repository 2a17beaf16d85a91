// What the server said, in the user's language: a problem's stable code is
// looked up in the `problems` catalogue and its values filled in; a code
// the catalogue lacks, or none, keeps the server's English words
// (docs/ARCHITECTURE.md, "Two languages"). A problem of a DAG file names
// its place (`task`, `schedule` or `path`), said before its words.

import i18next from 'i18next';
import type { Problem } from '../api/types';
import { statusLabel } from './status';

/** The words for `problem`, or `english` when the catalogue has none. */
export function sayProblem(problem: Problem | null | undefined, english: string): string {
  if (!problem) return english;
  const key = `problems:${problem.code}`;
  if (!i18next.exists(key)) return english;
  const params: Record<string, string> = { ...problem.params };
  // The field at fault and a task's status are named in the reader's words too.
  const field = params.field;
  if (field && i18next.exists(`problems:fields.${field}`)) {
    params.field = i18next.t(`problems:fields.${field}` as never);
  }
  if (params.status) params.status = statusLabel(params.status);
  return placeOf(params) + i18next.t(key as never, params);
}

/**
 * Where a problem of a DAG file is (a task, a schedule, a field's path),
 * said before it: the one `params` a problem names its place by.
 */
function placeOf(params: Record<string, string>): string {
  for (const place of ['task', 'schedule', 'path'] as const) {
    if (params[place] !== undefined) return i18next.t(`problems:at.${place}` as never, params);
  }
  return '';
}
