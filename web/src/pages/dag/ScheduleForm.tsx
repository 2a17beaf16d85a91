import { useState, type FormEvent } from 'react';
import { useTranslation } from 'react-i18next';
import { createSchedule, updateSchedule } from '../../api/endpoints';
import type { ScheduleBody, ScheduleDto, ScheduleKind } from '../../api/types';
import { CronPreview } from '../../components/CronPreview';
import { Modal } from '../../components/Modal';
import { InlineError } from '../../components/States';

/** Creates a schedule, or changes one (`schedule` given). */
export function ScheduleForm({
  dagId,
  schedule,
  onSaved,
  onClose,
}: {
  dagId: number;
  schedule?: ScheduleDto;
  onSaved: (s: ScheduleDto) => void;
  onClose: () => void;
}) {
  const { t } = useTranslation('dag');
  const [name, setName] = useState(schedule?.name ?? '');
  const [kind, setKind] = useState<ScheduleKind>(schedule?.kind ?? 'CRON');
  const [cron, setCron] = useState(schedule?.cronExpression ?? '');
  const [eventName, setEventName] = useState(schedule?.eventName ?? '');
  const [after, setAfter] = useState(schedule?.after ?? '');
  const [timezone, setTimezone] = useState(schedule?.timezone ?? '');
  const [startDate, setStartDate] = useState(schedule?.startDate ?? '');
  const [endDate, setEndDate] = useState(schedule?.endDate ?? '');
  const [catchup, setCatchup] = useState(schedule?.catchup ?? 'latest');
  const [offset, setOffset] = useState(String(schedule?.bizDateOffset ?? -1));
  const [enabled, setEnabled] = useState(schedule?.enabled ?? true);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const body: ScheduleBody = { enabled };
    if (!schedule) body.name = name.trim();
    if (kind === 'CRON') body.cronExpression = cron.trim();
    if (kind === 'EVENT') body.eventName = eventName.trim();
    if (kind === 'AFTER') body.after = after.trim();
    if (timezone.trim()) body.timezone = timezone.trim();
    if (startDate) body.startDate = startDate;
    if (endDate) body.endDate = endDate;
    if (kind === 'CRON') body.catchup = catchup;
    if (offset.trim() !== '' && Number.isFinite(Number(offset))) body.bizDateOffset = Number(offset);
    setBusy(true);
    setError(null);
    try {
      const saved = schedule
        ? await updateSchedule(dagId, schedule.scheduleId, body)
        : await createSchedule(dagId, body);
      onSaved(saved);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal
      title={schedule ? t('scheduleForm.editTitle', { name: schedule.name }) : t('scheduleForm.newTitle')}
      onClose={onClose}
      wide
    >
      <form className="form" onSubmit={submit} data-testid="schedule-form">
        <div className="form-row">
          <label className="field">
            <span>{t('scheduleForm.name')}</span>
            <input
              className="input"
              value={name}
              disabled={!!schedule}
              onChange={(e) => setName(e.target.value)}
              placeholder="nightly"
              translate="no"
              required
              data-testid="schedule-name"
            />
          </label>
          <label className="field">
            <span>{t('scheduleForm.firesOn')}</span>
            <select className="input" value={kind} onChange={(e) => setKind(e.target.value as ScheduleKind)} data-testid="schedule-kind">
              <option value="CRON">{t('scheduleForm.kindCron')}</option>
              <option value="EVENT">{t('scheduleForm.kindEvent')}</option>
              <option value="AFTER">{t('scheduleForm.kindAfter')}</option>
            </select>
          </label>
        </div>
        {kind === 'CRON' && (
          <>
            <div className="form-row">
              <label className="field grow">
                <span>{t('scheduleForm.cron')}</span>
                <input
                  className="input mono"
                  value={cron}
                  onChange={(e) => setCron(e.target.value)}
                  placeholder="0 0 2 * * ?"
                  translate="no"
                  required
                  data-testid="schedule-cron"
                />
              </label>
              <label className="field">
                <span>{t('scheduleForm.timezone')}</span>
                <input
                  className="input"
                  value={timezone}
                  onChange={(e) => setTimezone(e.target.value)}
                  placeholder={t('scheduleForm.timezoneDefault')}
                />
              </label>
            </div>
            <CronPreview expression={cron} timezone={timezone} />
          </>
        )}
        {kind === 'EVENT' && (
          <label className="field">
            <span>{t('scheduleForm.eventName')}</span>
            <input
              className="input mono"
              value={eventName}
              onChange={(e) => setEventName(e.target.value)}
              placeholder="orders.ready"
              translate="no"
              required
            />
            <span className="hint">{t('scheduleForm.eventHint')}</span>
          </label>
        )}
        {kind === 'AFTER' && (
          <label className="field">
            <span>{t('scheduleForm.upstream')}</span>
            <input
              className="input mono"
              value={after}
              onChange={(e) => setAfter(e.target.value)}
              placeholder="ods_orders"
              translate="no"
              required
            />
            <span className="hint">{t('scheduleForm.afterHint')}</span>
          </label>
        )}
        <div className="form-row">
          <label className="field">
            <span>{t('scheduleForm.startDate')}</span>
            <input className="input" type="date" value={startDate} onChange={(e) => setStartDate(e.target.value)} />
          </label>
          <label className="field">
            <span>{t('scheduleForm.endDate')}</span>
            <input className="input" type="date" value={endDate} onChange={(e) => setEndDate(e.target.value)} />
          </label>
          {kind === 'CRON' && (
            <label className="field">
              <span>{t('scheduleForm.catchup')}</span>
              <select className="input" value={catchup} onChange={(e) => setCatchup(e.target.value)}>
                <option value="none">{t('catchup.none')}</option>
                <option value="latest">{t('catchup.latest')}</option>
                <option value="all">{t('catchup.all')}</option>
              </select>
            </label>
          )}
          <label className="field">
            <span>{t('scheduleForm.offset')}</span>
            <input className="input" type="number" value={offset} onChange={(e) => setOffset(e.target.value)} />
          </label>
        </div>
        <label className="check">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} />
          {t('scheduleForm.enabled')}
        </label>
        <InlineError error={error} />
        <div className="form-actions">
          <button type="button" className="btn" onClick={onClose}>
            {t('scheduleForm.cancel')}
          </button>
          <button type="submit" className="btn btn-primary" disabled={busy} data-testid="schedule-save">
            {busy ? t('scheduleForm.saving') : t('scheduleForm.save')}
          </button>
        </div>
      </form>
    </Modal>
  );
}
