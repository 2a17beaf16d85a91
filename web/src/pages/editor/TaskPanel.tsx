// The side panel of the canvas editor: the selected task's fields, by type.

import { useState } from 'react';
import type { TaskDef } from '../../api/types';
import {
  changeSensorCheck,
  changeType,
  mainField,
  SENSOR_CHECKS,
  sensorCheck,
  TASK_TYPES,
  typeOf,
  type EditorTaskType,
  type Problem,
  type SensorCheck,
} from './canvasModel';

const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'];

const SENSOR_CHECK_LABELS: Record<SensorCheck, string> = {
  dataset: 'a dataset partition has an event',
  sql: 'a SQL query returns a row',
  http: 'a URL answers with success',
  file: 'a file or glob exists',
  dag: "another DAG's task succeeded",
};

/** A text field holding JSON, committed when it parses. */
function JsonField({
  label,
  value,
  onChange,
  placeholder,
  rows = 3,
}: {
  label: string;
  value: unknown;
  onChange: (v: unknown) => void;
  placeholder?: string;
  rows?: number;
}) {
  const [text, setText] = useState(() => (value === undefined ? '' : JSON.stringify(value, null, 2)));
  const [bad, setBad] = useState<string | null>(null);
  return (
    <label className="field">
      <span>{label}</span>
      <textarea
        className="input mono"
        rows={rows}
        value={text}
        placeholder={placeholder}
        spellCheck={false}
        onChange={(e) => {
          setText(e.target.value);
          if (!e.target.value.trim()) {
            setBad(null);
            onChange(undefined);
            return;
          }
          try {
            onChange(JSON.parse(e.target.value));
            setBad(null);
          } catch (err) {
            setBad((err as Error).message);
          }
        }}
      />
      {bad && <span className="field-error">not JSON yet: {bad}</span>}
    </label>
  );
}

/** `a=1` lines ⇄ `{ a: "1" }`. */
function paramsText(params: Record<string, string> | undefined): string {
  return Object.entries(params ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
}
function parseParams(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) out[line.slice(0, at).trim()] = line.slice(at + 1);
  }
  return out;
}

const list = (text: string) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export function TaskPanel({
  task,
  problems,
  onChange,
  onDelete,
  readOnly,
}: {
  task: TaskDef;
  problems: Problem[];
  onChange: (task: TaskDef) => void;
  onDelete: () => void;
  readOnly: boolean;
}) {
  const type = typeOf(task);
  const field = mainField(task);
  const content = (task.content ?? {}) as Record<string, unknown>;
  const set = (patch: Partial<TaskDef>) => onChange({ ...task, ...patch });
  const setContent = (patch: Record<string, unknown>) => {
    const next = { ...content, ...patch };
    for (const [k, v] of Object.entries(next)) if (v === undefined || v === '') delete next[k];
    set({ content: Object.keys(next).length ? next : undefined });
  };
  const [paramText, setParamText] = useState(() => paramsText(task.params));
  const otherDeps = task.dependsOn ?? [];

  return (
    <div className="task-panel" data-testid="task-panel">
      <div className="side-head">
        <h3>Task</h3>
        {!readOnly && (
          <button type="button" className="btn btn-sm btn-ghost-danger" onClick={onDelete} data-testid="task-delete">
            Delete task
          </button>
        )}
      </div>
      {problems.length > 0 && (
        <ul className="node-problems" data-testid="task-problems">
          {problems.map((p, i) => (
            <li key={i}>{p.message}</li>
          ))}
        </ul>
      )}
      <fieldset disabled={readOnly} className="fieldset-plain">
        <label className="field">
          <span>Name</span>
          <input className="input mono" value={task.name} onChange={(e) => set({ name: e.target.value })} data-testid="task-name" />
        </label>
        <label className="field">
          <span>Type</span>
          <select
            className="input"
            value={type}
            onChange={(e) => onChange(changeType(task, e.target.value as EditorTaskType))}
            data-testid="task-type"
          >
            {TASK_TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>Description</span>
          <input className="input" value={task.description ?? ''} onChange={(e) => set({ description: e.target.value || undefined })} />
        </label>

        {type === 'SQL' && (
          <label className="field">
            <span>Datasource</span>
            <input className="input mono" value={task.datasource ?? ''} placeholder="dw" onChange={(e) => set({ datasource: e.target.value || undefined })} data-testid="task-datasource" />
          </label>
        )}
        {field && (
          <label className="field">
            <span>{type === 'SHELL' ? (field === 'script' ? 'Script (bash)' : 'Command (bash)') : type === 'PYTHON' ? 'Script (python3)' : 'SQL'}</span>
            <textarea
              className="input mono code-input"
              rows={type === 'SHELL' ? 5 : 9}
              spellCheck={false}
              value={task[field] ?? ''}
              onChange={(e) => set({ [field]: e.target.value })}
              placeholder={type === 'SQL' ? "SELECT count(*) FROM orders WHERE dt = '${bizdate}';" : type === 'PYTHON' ? 'print("hello")' : 'echo "loading $DJ_BIZ_DATE"'}
              data-testid="task-command"
            />
          </label>
        )}
        {type === 'SQL' && (
          <label className="check">
            <input type="checkbox" checked={content.transaction === true} onChange={(e) => setContent({ transaction: e.target.checked || undefined })} />
            run every statement in one transaction
          </label>
        )}
        {(type === 'SPARK' || type === 'FLINK') && (
          <JsonField
            key={type}
            label={type === 'SPARK' ? 'Content (JSON): jar, py_file or sql, and Spark settings' : 'Content (JSON): jar or py_file, and Flink settings'}
            value={task.content}
            rows={8}
            onChange={(v) => set({ content: (v ?? {}) as TaskDef['content'] })}
            placeholder={
              type === 'SPARK'
                ? '{ "py_file": "/jobs/orders.py", "master": "yarn", "deploy_mode": "cluster", "app_args": ["${bizdate}"] }'
                : '{ "jar": "/jobs/stream.jar", "run_mode": "yarn-application", "parallelism": 4 }'
            }
          />
        )}
        {type === 'SENSOR' && <SensorFields content={content} replace={(c) => set({ content: c as TaskDef['content'] })} />}
        {type === 'HTTP' && (
          <>
            <div className="form-row">
              <label className="field" style={{ flex: '0 0 90px' }}>
                <span>Method</span>
                <select className="input" value={String(content.method ?? 'GET')} onChange={(e) => setContent({ method: e.target.value })}>
                  {HTTP_METHODS.map((m) => (
                    <option key={m}>{m}</option>
                  ))}
                </select>
              </label>
              <label className="field grow">
                <span>URL</span>
                <input
                  className="input mono"
                  value={String(content.url ?? '')}
                  placeholder="https://api.example.com/sync?date=${bizdate}"
                  onChange={(e) => setContent({ url: e.target.value })}
                  data-testid="task-command"
                />
              </label>
            </div>
            <JsonField label="Headers (JSON object)" value={content.headers} onChange={(v) => setContent({ headers: v })} placeholder={'{ "Authorization": "Bearer ${secret:api_token}" }'} />
            <JsonField label="Body (JSON)" value={content.body} onChange={(v) => setContent({ body: v })} />
            <div className="form-row">
              <label className="field">
                <span>Success codes</span>
                <input
                  className="input mono"
                  placeholder="any 2xx"
                  defaultValue={Array.isArray(content.success_codes) ? (content.success_codes as number[]).join(', ') : ''}
                  onChange={(e) => {
                    const codes = list(e.target.value).map(Number).filter(Number.isFinite);
                    setContent({ success_codes: codes.length ? codes : undefined });
                  }}
                />
              </label>
              <label className="field">
                <span>Request timeout (s)</span>
                <input
                  className="input"
                  type="number"
                  min={1}
                  value={content.request_timeout === undefined ? '' : String(content.request_timeout)}
                  onChange={(e) => setContent({ request_timeout: e.target.value ? Number(e.target.value) : undefined })}
                />
              </label>
            </div>
            <label className="field">
              <span>Secret headers</span>
              <input
                className="input mono"
                placeholder="X-Token, X-Other"
                defaultValue={Array.isArray(content.secret_headers) ? (content.secret_headers as string[]).join(', ') : ''}
                onChange={(e) => {
                  const names = list(e.target.value);
                  setContent({ secret_headers: names.length ? names : undefined });
                }}
              />
              <span className="hint">Their values must come from a secret: ${'{'}secret:NAME{'}'}.</span>
            </label>
          </>
        )}

        {type !== 'SENSOR' && (
          <label className="field">
            <span>Writes datasets</span>
            <input
              className="input mono"
              placeholder="dw.orders/${bizdate}, dw.users"
              defaultValue={(task.outputs ?? []).join(', ')}
              onChange={(e) => {
                const names = list(e.target.value);
                set({ outputs: names.length ? names : undefined });
              }}
              data-testid="task-outputs"
            />
            <span className="hint">Recorded as dataset events when it succeeds; data schedules start on them.</span>
          </label>
        )}

        <details className="more" open={false}>
          <summary>Scheduling and retries</summary>
          <div className="form-row">
            <label className="field">
              <span>Priority (1–10)</span>
              <input className="input" type="number" min={1} max={10} value={task.priority ?? ''} placeholder="5" onChange={(e) => set({ priority: e.target.value ? Number(e.target.value) : undefined })} />
            </label>
            <label className="field">
              <span>Queue</span>
              <input className="input mono" value={task.queue ?? ''} placeholder="default" onChange={(e) => set({ queue: e.target.value || undefined })} />
            </label>
          </div>
          <div className="form-row">
            <label className="field">
              <span>Timeout (s, 0 none)</span>
              <input className="input" type="number" min={0} value={task.timeout ?? ''} placeholder="3600" onChange={(e) => set({ timeout: e.target.value ? Number(e.target.value) : undefined })} />
            </label>
            <label className="field">
              <span>Strategy</span>
              <select className="input" value={task.strategy ?? 'ALL_SUCCESS'} onChange={(e) => set({ strategy: e.target.value as TaskDef['strategy'] })}>
                <option value="ALL_SUCCESS">ALL_SUCCESS</option>
                <option value="ONE_SUCCESS">ONE_SUCCESS</option>
                <option value="NONE">NONE</option>
              </select>
            </label>
          </div>
          <div className="form-row">
            <label className="field">
              <span>Retries</span>
              <input
                className="input"
                type="number"
                min={0}
                value={task.retry?.max ?? ''}
                placeholder="3"
                onChange={(e) => set({ retry: { ...task.retry, max: e.target.value ? Number(e.target.value) : undefined } })}
              />
            </label>
            <label className="field">
              <span>Retry interval (s)</span>
              <input
                className="input"
                type="number"
                min={0}
                value={task.retry?.interval ?? ''}
                placeholder="60"
                onChange={(e) => set({ retry: { ...task.retry, interval: e.target.value ? Number(e.target.value) : undefined } })}
              />
            </label>
          </div>
          <label className="check">
            <input type="checkbox" checked={task.enabled !== false} onChange={(e) => set({ enabled: e.target.checked })} />
            enabled (a disabled task ends SKIPPED)
          </label>
          <label className="field">
            <span>Parameters (name=value per line)</span>
            <textarea
              className="input mono"
              rows={3}
              value={paramText}
              onChange={(e) => {
                setParamText(e.target.value);
                set({ params: parseParams(e.target.value) });
              }}
            />
          </label>
        </details>
        {otherDeps.length > 0 && (
          <div className="small">
            <div className="muted">Also waits for (not drawn):</div>
            <ul className="plain-list mono">
              {otherDeps.map((d, i) => (
                <li key={i}>
                  {typeof d === 'string'
                    ? d
                    : `${d.task}${d.type && d.type !== 'STRONG' ? ` ${d.type}` : ''}${d.offsetDay ? ` day ${d.offsetDay}` : ''}${d.previousRun ? ' previous run' : ''}`}
                </li>
              ))}
            </ul>
          </div>
        )}
      </fieldset>
    </div>
  );
}

/** A SENSOR's check (one of five kinds) and how it waits between checks. */
function SensorFields({ content, replace }: { content: Record<string, unknown>; replace: (content: Record<string, unknown>) => void }) {
  const check = sensorCheck(content);
  // Unlike other types' content, an emptied check stays (as '') so the
  // chosen kind of check does not change under the user.
  const setContent = (patch: Record<string, unknown>) => {
    const next = { ...content, ...patch };
    for (const [k, v] of Object.entries(next)) if (v === undefined) delete next[k];
    replace(next);
  };
  const http = (content.http ?? {}) as Record<string, unknown>;
  const number = (key: string) => (content[key] === undefined ? '' : String(content[key]));
  const setNumber = (key: string, text: string) => setContent({ [key]: text ? Number(text) : undefined });
  return (
    <>
      <label className="field">
        <span>Wait until</span>
        <select className="input" value={check} onChange={(e) => replace(changeSensorCheck(content, e.target.value as SensorCheck))} data-testid="sensor-check">
          {SENSOR_CHECKS.map((c) => (
            <option key={c} value={c}>
              {SENSOR_CHECK_LABELS[c]}
            </option>
          ))}
        </select>
      </label>
      {check === 'dataset' && (
        <label className="field">
          <span>Dataset (and partition)</span>
          <input className="input mono" value={String(content.dataset ?? '')} placeholder="ods.orders/${bizdate}" onChange={(e) => setContent({ dataset: e.target.value })} data-testid="task-command" />
        </label>
      )}
      {check === 'file' && (
        <label className="field">
          <span>File path or glob</span>
          <input className="input mono" value={String(content.file ?? '')} placeholder="/landing/${bizdate}/*.csv" onChange={(e) => setContent({ file: e.target.value })} data-testid="task-command" />
        </label>
      )}
      {check === 'http' && (
        <label className="field">
          <span>URL (GET, any 2xx)</span>
          <input className="input mono" value={String(http.url ?? '')} placeholder="https://api.example.com/ready?date=${bizdate}" onChange={(e) => setContent({ http: { ...http, url: e.target.value } })} data-testid="task-command" />
        </label>
      )}
      {check === 'sql' && (
        <>
          <label className="field">
            <span>Datasource</span>
            <input className="input mono" value={String(content.datasource ?? '')} placeholder="dw" onChange={(e) => setContent({ datasource: e.target.value })} />
          </label>
          <label className="field">
            <span>SQL (ready when it returns a row)</span>
            <textarea className="input mono code-input" rows={4} spellCheck={false} value={String(content.sql ?? '')} placeholder="SELECT 1 FROM loads WHERE dt = '${bizdate}'" onChange={(e) => setContent({ sql: e.target.value })} data-testid="task-command" />
          </label>
        </>
      )}
      {check === 'dag' && (
        <>
          <div className="form-row">
            <label className="field">
              <span>DAG</span>
              <input className="input mono" value={String(content.dag ?? '')} onChange={(e) => setContent({ dag: e.target.value })} data-testid="task-command" />
            </label>
            <label className="field">
              <span>Task</span>
              <input className="input mono" value={String(content.task ?? '')} onChange={(e) => setContent({ task: e.target.value })} />
            </label>
          </div>
          <div className="form-row">
            <label className="field">
              <span>Day offset</span>
              <input className="input" type="number" value={number('offset_day')} placeholder="0" onChange={(e) => setNumber('offset_day', e.target.value)} />
            </label>
            <label className="field">
              <span>Days that must succeed</span>
              <input className="input" type="number" min={1} value={number('days')} placeholder="1" onChange={(e) => setNumber('days', e.target.value)} />
            </label>
          </div>
        </>
      )}
      <div className="form-row">
        <label className="field">
          <span>Check every (s)</span>
          <input className="input" type="number" min={1} value={number('poke_interval')} placeholder="60" onChange={(e) => setNumber('poke_interval', e.target.value)} />
        </label>
        <label className="field">
          <span>Give up after (s)</span>
          <input className="input" type="number" min={1} value={number('sensor_timeout')} placeholder="86400" onChange={(e) => setNumber('sensor_timeout', e.target.value)} />
        </label>
      </div>
      <label className="check">
        <input type="checkbox" checked={content.mode === 'poke'} onChange={(e) => setContent({ mode: e.target.checked ? 'poke' : undefined })} />
        keep the runner slot between checks (poke mode)
      </label>
      <label className="check">
        <input type="checkbox" checked={content.soft_fail === true} onChange={(e) => setContent({ soft_fail: e.target.checked || undefined })} />
        end SKIPPED, not TIMEOUT, when it gives up
      </label>
      <label className="check">
        <input type="checkbox" checked={content.exponential_backoff === true} onChange={(e) => setContent({ exponential_backoff: e.target.checked || undefined })} />
        double the wait after each check that finds nothing
      </label>
    </>
  );
}
