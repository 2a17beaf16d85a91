import type { QueueDto } from '../../api/types';

/** Messages in a queue's bands that no runner has taken yet. */
export function backlogTotal(queue: QueueDto): number {
  return queue.backlog.reduce((n, band) => n + band.pending, 0);
}

/** Queues with tasks waiting and no live runner to take them. */
export function starvedQueues(queues: QueueDto[]): QueueDto[] {
  return queues.filter((q) => q.unserved && (q.queuedTasks > 0 || backlogTotal(q) > 0));
}
