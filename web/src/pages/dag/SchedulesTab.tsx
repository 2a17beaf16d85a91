import type { TFunction } from 'i18next';
import { useState } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import { Link } from 'react-router';
import { describeCron } from '../../lib/cronWords';
import { errorMessage } from '../../api/client';
import { deleteSchedule, listSchedules, setScheduleEnabled } from '../../api/endpoints';
import type { DagDetail, ScheduleDto } from '../../api/types';
import { useCan } from '../../auth/session';
import { ConfirmDialog } from '../../components/Modal';
import { Empty, ErrorBox, InlineError, Loading } from '../../components/States';
import { conditionDatasets, describeCondition } from '../../lib/datasets';
import { formatZoned, relativeTime } from '../../lib/format';
import { useAsync, useNow } from '../../lib/hooks';
import { ScheduleForm } from './ScheduleForm';

const CATCHUPS = ['none', 'latest', 'all'] as const;

/** What fires a schedule: its cron expression, event, upstream DAG or datasets. */
function ScheduleTrigger({ s }: { s: ScheduleDto }) {
  const { t } = useTranslation('dag');
  const code = { code: <code translate="no" /> };
  if (s.kind === 'EVENT') {
    return (
      <span>
        <Trans t={t} i18nKey="schedules.event" values={{ name: s.eventName }} components={code} />
      </span>
    );
  }
  if (s.kind === 'AFTER') {
    return (
      <span>
        <Trans t={t} i18nKey="schedules.afterDag" values={{ name: s.after }} components={code} />
      </span>
    );
  }
  if (s.kind === 'DATA' && s.on) {
    return (
      <span>
        <Trans t={t} i18nKey="schedules.whenWritten" values={{ condition: describeCondition(s.on) }} components={code} />
        {s.onUpdate === 'rerun' && <span className="muted"> {t('schedules.rerunsOnRestatement')}</span>}{' '}
        {conditionDatasets(s.on).map((name) => (
          <Link key={name} to={`/datasets/${encodeURIComponent(name)}`} className="small" translate="no">
            {name}{' '}
          </Link>
        ))}
      </span>
    );
  }
  return <code translate="no">{s.cronExpression}</code>;
}

/** A schedule's dates, business-date offset and (cron) catch-up, in a line. */
function scheduleWindow(s: ScheduleDto, t: TFunction<'dag'>): string {
  const parts = [
    s.startDate || s.endDate ? `${s.startDate ?? '…'} → ${s.endDate ?? '…'}` : t('schedules.always'),
    t('schedules.offset', { offset: s.bizDateOffset }),
  ];
  if (s.kind === 'CRON') {
    const known = CATCHUPS.find((c) => c === s.catchup);
    parts.push(t('schedules.catchup', { catchup: known ? t(`catchup.${known}`) : s.catchup }));
  }
  return parts.join(' · ');
}

export function SchedulesTab({ dag }: { dag: DagDetail }) {
  const { t } = useTranslation('dag');
  const list = useAsync(`schedules:${dag.id}`, (signal) => listSchedules(dag.id, { signal }));
  const canToggle = useCan('toggleSchedule');
  const canEdit = useCan('editSchedule') && !dag.sourceFile;
  const now = useNow(30_000);
  const [editing, setEditing] = useState<ScheduleDto | 'new' | null>(null);
  const [removing, setRemoving] = useState<ScheduleDto | null>(null);
  const [busy, setBusy] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);

  const replace = (s: ScheduleDto) =>
    list.setData((page) => {
      const at = page.items.findIndex((x) => x.scheduleId === s.scheduleId);
      if (at < 0) return { ...page, items: [...page.items, s], total: page.total + 1 };
      const items = [...page.items];
      items[at] = s;
      return { ...page, items };
    });

  const toggle = async (s: ScheduleDto) => {
    setBusy(s.scheduleId);
    setError(null);
    try {
      replace(await setScheduleEnabled(dag.id, s.scheduleId, !s.enabled));
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
    }
  };

  if (!list.data) {
    return list.error ? <ErrorBox error={list.error} onRetry={list.reload} /> : <Loading label={t('schedules.loading')} />;
  }
  return (
    <div>
      {dag.sourceFile && (
        <div className="banner banner-info">
          <Trans
            t={t}
            i18nKey="schedules.fileBanner"
            values={{ file: dag.sourceFile }}
            components={{ file: <code translate="no" /> }}
          />
        </div>
      )}
      <div className="toolbar">
        <span className="muted small">{t('schedules.count', { n: list.data.total })}</span>
        <div className="spacer" />
        {canEdit && (
          <button type="button" className="btn btn-primary btn-sm" onClick={() => setEditing('new')} data-testid="schedule-add">
            {t('schedules.add')}
          </button>
        )}
      </div>
      <InlineError error={error} />
      {list.data.items.length === 0 ? (
        <Empty>{t('schedules.empty')}</Empty>
      ) : (
        <div className="table-scroll">
          <table className="table" data-testid="schedules-table">
            <thead>
              <tr>
                <th>{t('schedules.enabled')}</th>
                <th>{t('schedules.name')}</th>
                <th>{t('schedules.trigger')}</th>
                <th>{t('schedules.meaning')}</th>
                <th>{t('schedules.zone')}</th>
                <th>{t('schedules.nextFire')}</th>
                <th>{t('schedules.window')}</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.data.items.map((s) => (
                <tr key={s.scheduleId} data-testid="schedule-row" data-schedule={s.name} className={s.enabled ? '' : 'row-offline'}>
                  <td>
                    {canToggle ? (
                      <button
                        type="button"
                        role="switch"
                        aria-checked={s.enabled}
                        className={`switch${s.enabled ? ' on' : ''}`}
                        disabled={busy === s.scheduleId}
                        onClick={() => toggle(s)}
                        title={s.enabled ? t('schedules.pause') : t('schedules.resume')}
                        data-testid="schedule-toggle"
                      >
                        <span className="switch-knob" />
                      </button>
                    ) : (
                      <span className={`tag ${s.enabled ? 'tag-on' : 'tag-muted'}`}>{s.enabled ? t('schedules.on') : t('schedules.paused')}</span>
                    )}
                  </td>
                  <td className="mono" translate="no">
                    {s.name}
                  </td>
                  <td>
                    <ScheduleTrigger s={s} />
                  </td>
                  <CronWordsCell expression={s.cronExpression} english={s.cronDescription} />
                  <td className="small" translate="no">
                    {s.timezone}
                  </td>
                  <td className="small">
                    {s.nextFireTime ? (
                      <span>
                        <span translate="no">{formatZoned(s.nextFireTime)}</span> <span className="muted">({relativeTime(s.nextFireTime, now)})</span>
                      </span>
                    ) : (
                      <span className="muted">{s.enabled ? '—' : t('schedules.paused')}</span>
                    )}
                  </td>
                  <td className="small muted">{scheduleWindow(s, t)}</td>
                  <td className="col-actions">
                    {canEdit && (
                      <>
                        {s.kind === 'DATA' ? (
                          <span className="muted small" title={t('schedules.dataEditTitle')}>
                            {t('schedules.dataEdit')}
                          </span>
                        ) : (
                          <button type="button" className="btn btn-sm" onClick={() => setEditing(s)}>
                            {t('schedules.edit')}
                          </button>
                        )}
                        <button type="button" className="btn btn-sm btn-ghost-danger" onClick={() => setRemoving(s)}>
                          {t('schedules.remove')}
                        </button>
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {editing && (
        <ScheduleForm
          dagId={dag.id}
          schedule={editing === 'new' ? undefined : editing}
          onClose={() => setEditing(null)}
          onSaved={(s) => {
            replace(s);
            setEditing(null);
          }}
        />
      )}
      {removing && (
        <RemoveSchedule
          dagId={dag.id}
          schedule={removing}
          onClose={() => setRemoving(null)}
          onRemoved={() => {
            setRemoving(null);
            list.reload();
          }}
        />
      )}
    </div>
  );
}

function RemoveSchedule({
  dagId,
  schedule,
  onClose,
  onRemoved,
}: {
  dagId: number;
  schedule: ScheduleDto;
  onClose: () => void;
  onRemoved: () => void;
}) {
  const { t } = useTranslation('dag');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  return (
    <ConfirmDialog
      title={t('schedules.removeTitle')}
      message={
        <Trans
          t={t}
          i18nKey="schedules.removeMessage"
          values={{ name: schedule.name }}
          components={{ code: <code translate="no" /> }}
        />
      }
      confirmLabel={t('schedules.remove')}
      danger
      busy={busy}
      error={error && <div className="inline-error">{error}</div>}
      onClose={onClose}
      testId="confirm-button"
      onConfirm={async () => {
        setBusy(true);
        try {
          await deleteSchedule(dagId, schedule.scheduleId);
          onRemoved();
        } catch (e) {
          setError(errorMessage(e));
          setBusy(false);
        }
      }}
    />
  );
}

/** A schedule's cron expression in the reader's words, or a dash. */
function CronWordsCell({ expression, english }: { expression?: string | null; english?: string | null }) {
  const { i18n } = useTranslation();
  const words = describeCron(expression, english, i18n.language);
  if (!words) {
    return (
      <td>
        <span className="muted">—</span>
      </td>
    );
  }
  return <td data-server-text={words.fromServer || undefined}>{words.text}</td>;
}
