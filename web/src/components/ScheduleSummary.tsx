import { useTranslation } from 'react-i18next';
import type { ScheduleDto } from '../api/types';
import { describeCron } from '../lib/cronWords';
import { describeCondition } from '../lib/datasets';
import { formatZoned, relativeTime } from '../lib/format';

/** One schedule in a line: what fires it, and when next. */
export function ScheduleLine({ schedule, now }: { schedule: ScheduleDto; now: number }) {
  const { t, i18n } = useTranslation('dag');
  const paused = !schedule.enabled;
  let what: string;
  let title: string | undefined;
  // A cron schedule's description is the API's English or the reader's
  // language's; its bare expression, shown when it has neither, is not
  // translated.
  let fromServer = false;
  let named = false;
  if (schedule.kind === 'EVENT') {
    what = t('summary.event', { name: schedule.eventName ?? '?' });
  } else if (schedule.kind === 'AFTER') {
    what = t('summary.after', { name: schedule.after ?? '?' });
  } else if (schedule.kind === 'DATA') {
    what = schedule.on ? t('summary.on', { condition: describeCondition(schedule.on) }) : t('summary.onDatasets');
  } else {
    const words = describeCron(schedule.cronExpression, schedule.cronDescription, i18n.language);
    what = words?.text ?? schedule.cronExpression ?? 'cron';
    named = !words;
    fromServer = words?.fromServer ?? false;
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
