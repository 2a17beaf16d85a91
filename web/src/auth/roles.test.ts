import { describe, expect, it } from 'vitest';
import { can, NEEDS, type Action } from './roles';

const ALL = Object.keys(NEEDS) as Action[];

describe('the role rule', () => {
  it('lets a viewer only read', () => {
    for (const action of ALL) expect(can('viewer', action)).toBe(false);
  });

  it('lets an operator run and stop things but not edit definitions', () => {
    for (const action of ['trigger', 'backfill', 'kill', 'rerun', 'clear', 'mark', 'toggleOnline', 'toggleSchedule'] as Action[]) {
      expect(can('operator', action)).toBe(true);
    }
    for (const action of ['editDag', 'createDag', 'editSchedule', 'viewAudit'] as Action[]) {
      expect(can('operator', action)).toBe(false);
    }
  });

  it('lets an admin do everything', () => {
    for (const action of ALL) expect(can('admin', action)).toBe(true);
  });

  it('gives nothing without a known role', () => {
    expect(can(null, 'trigger')).toBe(false);
    expect(can(undefined, 'trigger')).toBe(false);
    expect(can('root' as never, 'trigger')).toBe(false);
  });
});
