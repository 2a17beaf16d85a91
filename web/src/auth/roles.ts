// Who may do what in the UI: the one place the buttons ask. It mirrors the
// API's route table (api/src/routes/table.rs): reads are a viewer's, running
// and stopping things an operator's, changing what runs an admin's. A
// button whose action the role may not take is not rendered at all.

import type { Role } from '../api/types';

export type Action =
  /** Start a manual run. */
  | 'trigger'
  /** Start runs for a range of business dates. */
  | 'backfill'
  /** Kill a run or a task instance. */
  | 'kill'
  /** Rerun a finished run (all tasks or the failed ones). */
  | 'rerun'
  /** Clear task instances back to PENDING. */
  | 'clear'
  /** Mark task instances SUCCESS or FAILED. */
  | 'mark'
  /** Put a DAG online or offline. */
  | 'toggleOnline'
  /** Pause or resume a schedule. */
  | 'toggleSchedule'
  /** Create, change or remove a schedule. */
  | 'editSchedule'
  /** Change a DAG's definition or canvas. */
  | 'editDag'
  /** Create a DAG. */
  | 'createDag'
  /** Read the audit log. */
  | 'viewAudit'
  /** Announce a dataset written outside DataJump. */
  | 'announceDataset';

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };

/** The least role each action needs. */
export const NEEDS: Record<Action, Role> = {
  trigger: 'operator',
  backfill: 'operator',
  kill: 'operator',
  rerun: 'operator',
  clear: 'operator',
  mark: 'operator',
  toggleOnline: 'operator',
  toggleSchedule: 'operator',
  editSchedule: 'admin',
  editDag: 'admin',
  createDag: 'admin',
  viewAudit: 'admin',
  announceDataset: 'operator',
};

/** Whether a caller of `role` may take `action` (no role: nothing). */
export function can(role: Role | null | undefined, action: Action): boolean {
  if (!role || !(role in RANK)) return false;
  return RANK[role] >= RANK[NEEDS[action]];
}
