import { cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryRouter } from 'react-router';
import { patchRecentRuns } from '../pages/dags/DagListPage';
import { RunStrip } from './RunStrip';
import { StatusBadge } from './Status';

afterEach(cleanup);

describe('status components', () => {
  it('shows a badge with its status', () => {
    render(<StatusBadge status="UP_FOR_RETRY" testId="st" />);
    const badge = screen.getByTestId('st');
    expect(badge.textContent).toBe('up for retry');
    expect(badge.dataset.status).toBe('UP_FOR_RETRY');
    expect(badge.className).toContain('st-up_for_retry');
  });

  it('draws recent runs oldest first, each linking to its run', () => {
    render(
      <MemoryRouter>
        <RunStrip
          runs={[
            { id: 3, status: 'RUNNING', bizDate: '2026-11-03' },
            { id: 2, status: 'FAILED', bizDate: '2026-11-02' },
          ]}
          slots={4}
        />
      </MemoryRouter>,
    );
    const runs = screen.getAllByTestId('strip-run');
    expect(runs.map((a) => a.getAttribute('href'))).toEqual(['/runs/2', '/runs/3']);
    expect(runs.map((a) => a.dataset.status)).toEqual(['FAILED', 'RUNNING']);
  });
});

describe('the DAG list strip', () => {
  const ev = (id: number, status: 'RUNNING' | 'SUCCESS') => ({
    id, dagId: 1, dagVersion: 1, status, bizDate: '2026-11-0' + (id % 9), runKey: 'k', triggerType: 'MANUAL',
    startTime: '2026-11-01T00:00:00Z', endTime: null,
  });

  it('adds a new run first and keeps ten', () => {
    const runs = Array.from({ length: 10 }, (_, i) => ({ id: 10 - i, status: 'SUCCESS' as const, bizDate: 'd' }));
    const next = patchRecentRuns(runs, ev(11, 'RUNNING'));
    expect(next).toHaveLength(10);
    expect(next[0]).toMatchObject({ id: 11, status: 'RUNNING' });
    expect(next.some((r) => r.id === 1)).toBe(false);
  });

  it('updates a shown run in place', () => {
    const runs = [{ id: 5, status: 'RUNNING' as const, bizDate: 'd' }];
    expect(patchRecentRuns(runs, ev(5, 'SUCCESS'))[0]!.status).toBe('SUCCESS');
    expect(patchRecentRuns(runs, ev(5, 'RUNNING'))).toBe(runs);
  });
});
