// The side panel of the canvas editor when no task is selected: the DAG's
// own fields and its parameters, saved with the canvas.

import { Trans, useTranslation } from 'react-i18next';
import type { DagDetail } from '../../api/types';
import { OnlineToggle } from '../../components/OnlineToggle';
import { maxActiveRunsOk, paramErrors, type DagSettings, type ParamRow } from './canvasModel';

export function DagSettingsPanel({
  dag,
  settings,
  taskCount,
  onChange,
  onOnline,
  readOnly,
}: {
  dag: DagDetail | null;
  settings: DagSettings;
  taskCount: number;
  onChange: (patch: Partial<DagSettings>) => void;
  /** An existing DAG was switched online or offline (already stored). */
  onOnline: (online: boolean) => void;
  readOnly: boolean;
}) {
  const { t } = useTranslation('editor');
  const rows = settings.params;
  const rowErrors = paramErrors(rows, t);
  const runsBad = !maxActiveRunsOk(settings.maxActiveRuns);
  const setRows = (params: ParamRow[]) => onChange({ params });
  const setRow = (i: number, change: Partial<ParamRow>) =>
    setRows(rows.map((r, j) => (j === i ? { ...r, ...change } : r)));

  return (
    <div className="task-panel" data-testid="dag-settings">
      <h3>{t('settings.title')}</h3>
      {dag && (
        <dl className="kv">
          <dt>{t('settings.name')}</dt>
          <dd className="mono" translate="no">
            {dag.name}
          </dd>
          <dt>{t('settings.version')}</dt>
          <dd>{t('settings.versionValue', { version: dag.version })}</dd>
          <dt>{t('settings.tasks')}</dt>
          <dd>{taskCount}</dd>
          <dt>{t('settings.online')}</dt>
          <dd>
            <OnlineToggle dagId={dag.id} online={settings.online} onChanged={(d) => onOnline(d.online)} />
          </dd>
        </dl>
      )}
      <fieldset disabled={readOnly} className="fieldset-plain">
        {!dag && (
          <label className="field">
            <span>{t('settings.name')}</span>
            <input
              className="input mono"
              value={settings.name}
              onChange={(e) => onChange({ name: e.target.value })}
              placeholder="nightly_orders"
              translate="no"
              data-testid="dag-name-input"
            />
          </label>
        )}
        <label className="field">
          <span>{t('settings.description')}</span>
          <input className="input" value={settings.description} onChange={(e) => onChange({ description: e.target.value })} data-testid="dag-description-input" />
        </label>
        <div className="form-row">
          <label className="field">
            <span>{t('settings.owner')}</span>
            <input className="input" value={settings.owner} onChange={(e) => onChange({ owner: e.target.value })} data-testid="dag-owner-input" />
          </label>
          <label className="field">
            <span>{t('settings.maxActiveRuns')}</span>
            <input
              className="input"
              type="number"
              min={1}
              step={1}
              value={settings.maxActiveRuns}
              onChange={(e) => onChange({ maxActiveRuns: e.target.value })}
              aria-invalid={runsBad}
              data-testid="dag-max-active-runs"
            />
            {runsBad && <span className="field-error">{t('settings.maxActiveRunsError')}</span>}
          </label>
          <label className="field">
            <span>{t('settings.priority')}</span>
            <select
              className="input"
              value={settings.priority}
              onChange={(e) => onChange({ priority: e.target.value })}
              data-testid="dag-priority"
            >
              <option value="">
                {dag && dag.priority == null
                  ? t('settings.priorityFromRootsNow', { priority: dag.firePriority })
                  : t('settings.priorityFromRoots')}
              </option>
              {Array.from({ length: 10 }, (_, i) => String(10 - i)).map((level) => (
                <option key={level} value={level}>
                  {level}
                </option>
              ))}
            </select>
          </label>
        </div>
        <div className="hint">{t('settings.priorityHint')}</div>
        {!dag && (
          <label className="check">
            <input type="checkbox" checked={settings.online} onChange={(e) => onChange({ online: e.target.checked })} data-testid="dag-online-input" />
            {t('settings.onlineNew')}
          </label>
        )}
        <fieldset className="fieldset" data-testid="dag-params">
          <legend>{t('settings.params.title')}</legend>
          {rows.length === 0 && <div className="muted small">{t('settings.params.none')}</div>}
          {rows.map((row, i) => (
            <div key={i}>
              <div className="param-row">
                <input
                  className="input mono param-name"
                  placeholder={t('settings.params.name')}
                  value={row.name}
                  onChange={(e) => setRow(i, { name: e.target.value })}
                  aria-invalid={rowErrors[i] !== null}
                  data-testid="dag-param-name"
                />
                <input
                  className="input mono grow"
                  placeholder={t('settings.params.value')}
                  value={row.value}
                  onChange={(e) => setRow(i, { value: e.target.value })}
                  data-testid="dag-param-value"
                />
                <button
                  type="button"
                  className="btn btn-sm"
                  onClick={() => setRows(rows.filter((_, j) => j !== i))}
                  aria-label={t('settings.params.remove', { name: row.name })}
                  data-testid="dag-param-remove"
                >
                  ×
                </button>
              </div>
              {rowErrors[i] && (
                <span className="field-error" data-testid="dag-param-error">
                  {rowErrors[i]}
                </span>
              )}
            </div>
          ))}
          <button type="button" className="btn btn-sm" onClick={() => setRows([...rows, { name: '', value: '' }])} data-testid="dag-param-add">
            {t('settings.params.add')}
          </button>
          <div className="hint">
            <Trans
              t={t}
              i18nKey="settings.params.hint"
              values={{ syntax: '${name}' }}
              components={{ code: <code translate="no" /> }}
            />
          </div>
        </fieldset>
      </fieldset>
      <div className="hint">
        {t('settings.help')}
      </div>
    </div>
  );
}
