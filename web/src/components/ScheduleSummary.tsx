import { useTranslation } from 'react-i18next';
import type { ScheduleDto } from '../api/types';
import { describeCondition } from '../lib/datasets';
import { formatZoned, relativeTime } from '../lib/format';

/** One schedule in a line: what fires it, and when next. */
export function ScheduleLine({ schedule, now }: { schedule: ScheduleDto; now: number }) {
  const { t } = useTranslation('dag');
  const paused = !schedule.enabled;
  let what: string;
  let title: string | undefined;
  // A cron schedule's description comes from the API (in English); its bare
  // expression, shown when it has none, is not translated.
  let fromServer = false;
  let named = false;
  if (schedule.kind === 'EVENT') {
    what = t('summary.event', { name: schedule.eventName ?? '?' });
  } else if (schedule.kind === 'AFTER') {
    what = t('summary.after', { name: schedule.after ?? '?' });
  } else if (schedule.kind === 'DATA') {
    what = schedule.on ? t('summary.on', { condition: describeCondition(schedule.on) }) : t('summary.onDatasets');
  } else {
    what = schedule.cronDescription ?? schedule.cronExpression ?? 'cron';
    named = !schedule.cronDescription;
    fromServer = !named;
    title = t('summary.cronTitle', { cron: schedule.cronExpression ?? '', zone: schedule.timezone });
  }
  return (
    <div className={`sched-line${paused ? ' paused' : ''}`} title={title}>
      <span className="sched-what" translate={named ? 'no' : undefined} data-server-text={fromServer || undefined}>
        {what}
      </span>
      {paused ? (
        <span className="tag tag-muted">{t('summary.paused')}</span>
      ) : (
        schedule.nextFireTime && (
          <span className="sched-next muted" title={formatZoned(schedule.nextFireTime)}>
            {t('summary.next', { when: relativeTime(schedule.nextFireTime, now) })}
          </span>
        )
      )}
    </div>
  );
}
