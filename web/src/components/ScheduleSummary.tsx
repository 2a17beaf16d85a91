import type { ScheduleDto } from '../api/types';
import { describeCondition } from '../lib/datasets';
import { formatZoned, relativeTime } from '../lib/format';

/** One schedule in a line: what fires it, and when next. */
export function ScheduleLine({ schedule, now }: { schedule: ScheduleDto; now: number }) {
  const paused = !schedule.enabled;
  let what: string;
  let title: string | undefined;
  if (schedule.kind === 'EVENT') {
    what = `event ${schedule.eventName ?? '?'}`;
  } else if (schedule.kind === 'AFTER') {
    what = `after ${schedule.after ?? '?'}`;
  } else if (schedule.kind === 'DATA') {
    what = schedule.on ? `on ${describeCondition(schedule.on)}` : 'on datasets';
  } else {
    what = schedule.cronDescription ?? schedule.cronExpression ?? 'cron';
    title = `${schedule.cronExpression ?? ''} (${schedule.timezone})`;
  }
  return (
    <div className={`sched-line${paused ? ' paused' : ''}`} title={title}>
      <span className="sched-what">{what}</span>
      {paused ? (
        <span className="tag tag-muted">paused</span>
      ) : (
        schedule.nextFireTime && (
          <span className="sched-next muted" title={formatZoned(schedule.nextFireTime)}>
            next {relativeTime(schedule.nextFireTime, now)}
          </span>
        )
      )}
    </div>
  );
}
