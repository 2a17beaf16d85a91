// The side panel of the canvas editor when no task is selected: the DAG's
// own fields and its parameters, saved with the canvas.

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
  const rows = settings.params;
  const rowErrors = paramErrors(rows);
  const runsBad = !maxActiveRunsOk(settings.maxActiveRuns);
  const setRows = (params: ParamRow[]) => onChange({ params });
  const setRow = (i: number, change: Partial<ParamRow>) =>
    setRows(rows.map((r, j) => (j === i ? { ...r, ...change } : r)));

  return (
    <div className="task-panel" data-testid="dag-settings">
      <h3>DAG settings</h3>
      {dag && (
        <dl className="kv">
          <dt>Name</dt>
          <dd className="mono">{dag.name}</dd>
          <dt>Version</dt>
          <dd>v{dag.version}</dd>
          <dt>Tasks</dt>
          <dd>{taskCount}</dd>
          <dt>Online</dt>
          <dd>
            <OnlineToggle dagId={dag.id} online={settings.online} onChanged={(d) => onOnline(d.online)} />
          </dd>
        </dl>
      )}
      <fieldset disabled={readOnly} className="fieldset-plain">
        {!dag && (
          <label className="field">
            <span>Name</span>
            <input
              className="input mono"
              value={settings.name}
              onChange={(e) => onChange({ name: e.target.value })}
              placeholder="nightly_orders"
              data-testid="dag-name-input"
            />
          </label>
        )}
        <label className="field">
          <span>Description</span>
          <input className="input" value={settings.description} onChange={(e) => onChange({ description: e.target.value })} data-testid="dag-description-input" />
        </label>
        <div className="form-row">
          <label className="field">
            <span>Owner</span>
            <input className="input" value={settings.owner} onChange={(e) => onChange({ owner: e.target.value })} data-testid="dag-owner-input" />
          </label>
          <label className="field">
            <span>Max active runs</span>
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
            {runsBad && <span className="field-error">a whole number, at least 1</span>}
          </label>
        </div>
        {!dag && (
          <label className="check">
            <input type="checkbox" checked={settings.online} onChange={(e) => onChange({ online: e.target.checked })} data-testid="dag-online-input" />
            online (its schedules fire it)
          </label>
        )}
        <fieldset className="fieldset" data-testid="dag-params">
          <legend>Parameters</legend>
          {rows.length === 0 && <div className="muted small">No parameters.</div>}
          {rows.map((row, i) => (
            <div key={i}>
              <div className="param-row">
                <input
                  className="input mono param-name"
                  placeholder="name"
                  value={row.name}
                  onChange={(e) => setRow(i, { name: e.target.value })}
                  aria-invalid={rowErrors[i] !== null}
                  data-testid="dag-param-name"
                />
                <input
                  className="input mono grow"
                  placeholder="value"
                  value={row.value}
                  onChange={(e) => setRow(i, { value: e.target.value })}
                  data-testid="dag-param-value"
                />
                <button
                  type="button"
                  className="btn btn-sm"
                  onClick={() => setRows(rows.filter((_, j) => j !== i))}
                  aria-label={`Remove parameter ${row.name}`}
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
            + Add parameter
          </button>
          <div className="hint">
            Tasks read them as <code>{'${name}'}</code>; a task's or a trigger's own value of the same name wins.
          </div>
        </fieldset>
      </fieldset>
      <div className="hint">
        Add tasks, then drag from a task's right handle to another's left handle: the second runs after the first. Select
        a task to edit it; Delete removes the selection. Schedules are set on the DAG's Schedules tab.
      </div>
    </div>
  );
}
