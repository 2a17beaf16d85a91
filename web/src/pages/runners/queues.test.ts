import { describe, expect, it } from 'vitest';
import type { QueueDto } from '../../api/types';
import { backlogTotal, starvedQueues } from './queues';

const queue = (over: Partial<QueueDto>): QueueDto => ({
  queue: 'q',
  runners: 0,
  slots: 0,
  queuedTasks: 0,
  runningTasks: 0,
  backlog: [],
  dags: 0,
  unserved: true,
  ...over,
});

describe('queues', () => {
  it('adds up what waits in every band', () => {
    const q = queue({
      backlog: [
        { priority: 8, pending: 2, ackPending: 1 },
        { priority: 5, pending: 3, ackPending: 0 },
      ],
    });
    expect(backlogTotal(q)).toBe(5);
  });

  it('names only unserved queues where something waits', () => {
    const starved = starvedQueues([
      queue({ queue: 'idle' }),
      queue({ queue: 'waiting', queuedTasks: 2 }),
      queue({ queue: 'left-behind', backlog: [{ priority: 5, pending: 1, ackPending: 0 }] }),
      queue({ queue: 'served', unserved: false, runners: 1, queuedTasks: 9 }),
    ]);
    expect(starved.map((q) => q.queue)).toEqual(['waiting', 'left-behind']);
  });
});
