// The side panel of the canvas editor: the selected task's fields, by type.

import { useEffect, useState } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import { validateCondition } from '../../api/endpoints';
import type { DependencyDef, MapDef, SwitchCaseDef, TaskDef, ValidateConditionResponse } from '../../api/types';
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
/** The strategies of docs/DAG_FORMAT.md, "Strategies", in the API's words. */
const STRATEGIES: NonNullable<TaskDef['strategy']>[] = [
  'ALL_SUCCESS',
  'ONE_SUCCESS',
  'NONE_FAILED',
  'ONE_FAILED',
  'ALL_FAILED',
  'ALL_DONE',
];

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
  const { t } = useTranslation('editor');
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
        translate="no"
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
      {bad && <span className="field-error">{t('task.notJson', { error: bad })}</span>}
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

/** A dependency the canvas does not draw: the task as the file names it, and when it is awaited. */
function OtherDependency({ dep }: { dep: DependencyDef }) {
  const { t } = useTranslation('editor');
  if (typeof dep === 'string') return <span translate="no">{dep}</span>;
  const what = `${dep.task}${dep.type && dep.type !== 'STRONG' ? ` ${dep.type}` : ''}`;
  const key = dep.offsetDay
    ? dep.previousRun
      ? 'task.dependency.offsetPreviousRun'
      : 'task.dependency.offset'
    : dep.previousRun
      ? 'task.dependency.previousRun'
      : null;
  if (!key) return <span translate="no">{what}</span>;
  return <Trans t={t} i18nKey={key} values={{ dep: what, offset: dep.offsetDay }} components={{ name: <span translate="no" /> }} />;
}

export function TaskPanel({
  task,
  branches,
  problems,
  onChange,
  onDelete,
  readOnly,
}: {
  task: TaskDef;
  /** The tasks an edge from this one leads to (a SWITCH's branches). */
  branches: string[];
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
  const { t } = useTranslation('editor');

  return (
    <div className="task-panel" data-testid="task-panel">
      <div className="side-head">
        <h3>{t('task.title')}</h3>
        {!readOnly && (
          <button type="button" className="btn btn-sm btn-ghost-danger" onClick={onDelete} data-testid="task-delete">
            {t('task.delete')}
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
          <span>{t('task.name')}</span>
          <input className="input mono" value={task.name} onChange={(e) => set({ name: e.target.value })} data-testid="task-name" />
        </label>
        <label className="field">
          <span>{t('task.type')}</span>
          <select
            className="input"
            value={type}
            onChange={(e) => onChange(changeType(task, e.target.value as EditorTaskType))}
            translate="no"
            data-testid="task-type"
          >
            {TASK_TYPES.map((option) => (
              <option key={option} value={option}>
                {option}
              </option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>{t('task.description')}</span>
          <input className="input" value={task.description ?? ''} onChange={(e) => set({ description: e.target.value || undefined })} />
        </label>

        {type === 'SQL' && (
          <label className="field">
            <span>{t('task.datasource')}</span>
            <input className="input mono" value={task.datasource ?? ''} placeholder="dw" translate="no" onChange={(e) => set({ datasource: e.target.value || undefined })} data-testid="task-datasource" />
          </label>
        )}
        {field && (
          <label className="field">
            <span>
              {type === 'SHELL'
                ? field === 'script'
                  ? t('task.scriptBash')
                  : t('task.commandBash')
                : type === 'PYTHON'
                  ? t('task.scriptPython')
                  : t('task.sql')}
            </span>
            <textarea
              className="input mono code-input"
              rows={type === 'SHELL' ? 5 : 9}
              spellCheck={false}
              value={task[field] ?? ''}
              onChange={(e) => set({ [field]: e.target.value })}
              placeholder={type === 'SQL' ? "SELECT count(*) FROM orders WHERE dt = '${bizdate}';" : type === 'PYTHON' ? 'print("hello")' : 'echo "loading $DJ_BIZ_DATE"'}
              translate="no"
              data-testid="task-command"
            />
          </label>
        )}
        {type === 'SQL' && (
          <label className="check">
            <input type="checkbox" checked={content.transaction === true} onChange={(e) => setContent({ transaction: e.target.checked || undefined })} />
            {t('task.transaction')}
          </label>
        )}
        {(type === 'SPARK' || type === 'FLINK') && (
          <JsonField
            key={type}
            label={type === 'SPARK' ? t('task.sparkContent') : t('task.flinkContent')}
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
        {type === 'SWITCH' && <SwitchFields task={task} branches={branches} set={set} />}
        {type === 'HTTP' && (
          <>
            <div className="form-row">
              <label className="field" style={{ flex: '0 0 90px' }}>
                <span>{t('task.http.method')}</span>
                <select className="input" value={String(content.method ?? 'GET')} onChange={(e) => setContent({ method: e.target.value })} translate="no">
                  {HTTP_METHODS.map((m) => (
                    <option key={m}>{m}</option>
                  ))}
                </select>
              </label>
              <label className="field grow">
                <span>{t('task.http.url')}</span>
                <input
                  className="input mono"
                  value={String(content.url ?? '')}
                  placeholder="https://api.example.com/sync?date=${bizdate}"
                  translate="no"
                  onChange={(e) => setContent({ url: e.target.value })}
                  data-testid="task-command"
                />
              </label>
            </div>
            <JsonField label={t('task.http.headers')} value={content.headers} onChange={(v) => setContent({ headers: v })} placeholder={'{ "Authorization": "Bearer ${secret:api_token}" }'} />
            <JsonField label={t('task.http.body')} value={content.body} onChange={(v) => setContent({ body: v })} />
            <div className="form-row">
              <label className="field">
                <span>{t('task.http.successCodes')}</span>
                <input
                  className="input mono"
                  placeholder={t('task.http.anySuccess')}
                  defaultValue={Array.isArray(content.success_codes) ? (content.success_codes as number[]).join(', ') : ''}
                  onChange={(e) => {
                    const codes = list(e.target.value).map(Number).filter(Number.isFinite);
                    setContent({ success_codes: codes.length ? codes : undefined });
                  }}
                />
              </label>
              <label className="field">
                <span>{t('task.http.requestTimeout')}</span>
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
              <span>{t('task.http.secretHeaders')}</span>
              <input
                className="input mono"
                placeholder="X-Token, X-Other"
                translate="no"
                defaultValue={Array.isArray(content.secret_headers) ? (content.secret_headers as string[]).join(', ') : ''}
                onChange={(e) => {
                  const names = list(e.target.value);
                  setContent({ secret_headers: names.length ? names : undefined });
                }}
              />
              <span className="hint">{t('task.http.secretHint', { syntax: '${secret:NAME}' })}</span>
            </label>
          </>
        )}

        {type !== 'SENSOR' && type !== 'SWITCH' && (
          <label className="field">
            <span>{t('task.outputs')}</span>
            <input
              className="input mono"
              placeholder="dw.orders/${bizdate}, dw.users"
              translate="no"
              defaultValue={(task.outputs ?? []).join(', ')}
              onChange={(e) => {
                const names = list(e.target.value);
                set({ outputs: names.length ? names : undefined });
              }}
              data-testid="task-outputs"
            />
            <span className="hint">{t('task.outputsHint')}</span>
          </label>
        )}

        {type !== 'SWITCH' && <MapFields task={task} set={set} />}

        <details className="more" open={false}>
          <summary>{t('task.more')}</summary>
          <div className="form-row">
            <label className="field">
              <span>{t('task.priority')}</span>
              <input className="input" type="number" min={1} max={10} value={task.priority ?? ''} placeholder="5" onChange={(e) => set({ priority: e.target.value ? Number(e.target.value) : undefined })} />
            </label>
            <label className="field">
              <span>{t('task.queue')}</span>
              <input className="input mono" value={task.queue ?? ''} placeholder="default" translate="no" onChange={(e) => set({ queue: e.target.value || undefined })} />
            </label>
          </div>
          <div className="form-row">
            <label className="field">
              <span>{t('task.timeout')}</span>
              <input className="input" type="number" min={0} value={task.timeout ?? ''} placeholder="3600" onChange={(e) => set({ timeout: e.target.value ? Number(e.target.value) : undefined })} />
            </label>
            <label className="field">
              <span>{t('task.strategy')}</span>
              <select className="input" value={task.strategy ?? 'ALL_SUCCESS'} onChange={(e) => set({ strategy: e.target.value as TaskDef['strategy'] })} translate="no">
                {STRATEGIES.map((strategy) => (
                  <option key={strategy} value={strategy}>
                    {strategy}
                  </option>
                ))}
              </select>
            </label>
          </div>
          <div className="form-row">
            <label className="field">
              <span>{t('task.retries')}</span>
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
              <span>{t('task.retryInterval')}</span>
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
            {t('task.enabled')}
          </label>
          <label className="check">
            <input
              type="checkbox"
              checked={task.allowFailure === true}
              onChange={(e) => set({ allowFailure: e.target.checked || undefined })}
              data-testid="task-allow-failure"
            />
            {t('task.allowFailure')}
          </label>
          <label className="field">
            <span>{t('task.params')}</span>
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
            <div className="muted">{t('task.otherDeps')}</div>
            <ul className="plain-list mono">
              {otherDeps.map((d, i) => (
                <li key={i}>
                  <OtherDependency dep={d} />
                </li>
              ))}
            </ul>
          </div>
        )}
      </fieldset>
    </div>
  );
}

/** How a map's `over` reads in its field: a reference as written, a list as JSON. */
function overText(over: MapDef['over'] | undefined): string {
  if (over === undefined) return '';
  return typeof over === 'string' ? over : JSON.stringify(over);
}

/**
 * `map`: run once per item of a list (docs/DAG_FORMAT.md, "Map"). The list
 * is a reference (`${task.output.name}`, `${param}`) or written out as JSON;
 * the API checks the reference and the items when the DAG is saved.
 */
function MapFields({ task, set }: { task: TaskDef; set: (patch: Partial<TaskDef>) => void }) {
  const { t } = useTranslation('editor');
  const map = task.map ?? null;
  const [text, setText] = useState(() => overText(map?.over));
  const [bad, setBad] = useState<string | null>(null);
  const setMap = (patch: Partial<MapDef>) => set({ map: { over: '', ...map, ...patch } });
  const number = (value: string) => (value.trim() ? Number(value) : undefined);
  return (
    <div className="map-fields" data-testid="map-fields">
      <label className="check">
        <input
          type="checkbox"
          checked={map !== null}
          onChange={(e) => {
            set({ map: e.target.checked ? { over: '' } : undefined });
            setText('');
            setBad(null);
          }}
          data-testid="task-map"
        />
        {t('map.toggle')}
      </label>
      {map && (
        <>
          <label className="field">
            <span>{t('map.over')}</span>
            <input
              className="input mono"
              value={text}
              placeholder='${list_tables.output.tables}'
              translate="no"
              spellCheck={false}
              onChange={(e) => {
                const typed = e.target.value;
                setText(typed);
                if (!typed.trim().startsWith('[')) {
                  setBad(null);
                  setMap({ over: typed.trim() });
                  return;
                }
                try {
                  const list: unknown = JSON.parse(typed);
                  if (!Array.isArray(list)) throw new Error(t('map.notAList'));
                  setBad(null);
                  setMap({ over: list });
                } catch (err) {
                  setBad((err as Error).message);
                }
              }}
              data-testid="task-map-over"
            />
            {bad ? (
              <span className="field-error" data-testid="task-map-over-error">
                {t('task.notJson', { error: bad })}
              </span>
            ) : (
              <span className="hint">
                <Trans
                  t={t}
                  i18nKey="map.overHint"
                  values={{ output: '${list_tables.output.tables}', param: '${tables}', list: '["orders", "users"]' }}
                  components={{ code: <code translate="no" /> }}
                />
              </span>
            )}
          </label>
          <div className="form-row">
            <label className="field">
              <span>{t('map.maxParallel')}</span>
              <input
                className="input"
                type="number"
                min={1}
                max={1000}
                value={map.maxParallel ?? ''}
                placeholder="16"
                onChange={(e) => setMap({ maxParallel: number(e.target.value) })}
                data-testid="task-map-max-parallel"
              />
            </label>
            <label className="field">
              <span>{t('map.maxItems')}</span>
              <input
                className="input"
                type="number"
                min={1}
                max={10000}
                value={map.maxItems ?? ''}
                placeholder="1000"
                onChange={(e) => setMap({ maxItems: number(e.target.value) })}
                data-testid="task-map-max-items"
              />
            </label>
          </div>
          <p className="hint">
            <Trans
              t={t}
              i18nKey="map.itemHint"
              values={{ env: '$DJ_MAP_ITEM', shell: '${map.item:shell}', bare: '${map.item}' }}
              components={{ code: <code translate="no" /> }}
            />
          </p>
        </>
      )}
    </div>
  );
}

/** Ticks for the tasks a case (or the default) runs, among the SWITCH's children. */
function BranchChoice({
  branches,
  chosen,
  onChange,
  testId,
}: {
  branches: string[];
  chosen: string[];
  onChange: (names: string[]) => void;
  testId: string;
}) {
  // A name no edge leads to any more stays listed, so it can be unticked.
  const shown = [...branches, ...chosen.filter((name) => !branches.includes(name))];
  return (
    <div className="branch-choice" data-testid={testId}>
      {shown.map((name) => (
        <label key={name} className="check" translate="no">
          <input
            type="checkbox"
            checked={chosen.includes(name)}
            onChange={(e) =>
              onChange(e.target.checked ? [...chosen, name] : chosen.filter((other) => other !== name))
            }
          />
          {name}
        </label>
      ))}
    </div>
  );
}

/** What the API says of a condition as it is typed: valid and what it reads, or why not. */
function ConditionCheck({ when }: { when: string }) {
  const { t } = useTranslation('editor');
  const [answer, setAnswer] = useState<ValidateConditionResponse | null>(null);
  useEffect(() => {
    if (!when.trim()) return;
    const abort = new AbortController();
    const timer = window.setTimeout(() => {
      validateCondition({ condition: when }, { signal: abort.signal })
        .then(setAnswer)
        .catch(() => setAnswer(null));
    }, 300);
    return () => {
      window.clearTimeout(timer);
      abort.abort();
      setAnswer(null);
    };
  }, [when]);
  if (!when.trim()) return null;
  if (!answer) return <span className="hint">{t('switch.checking')}</span>;
  if (!answer.valid) {
    return (
      <span className="field-error" translate="no" data-testid="switch-condition-error">
        {answer.error}
      </span>
    );
  }
  return (
    <span className="hint" data-testid="switch-condition-ok">
      {answer.reads.length ? t('switch.reads', { reads: answer.reads.join(', ') }) : t('switch.readsNothing')}
    </span>
  );
}

/** A SWITCH's cases, each a condition and the children it runs, and its default. */
function SwitchFields({
  task,
  branches,
  set,
}: {
  task: TaskDef;
  branches: string[];
  set: (patch: Partial<TaskDef>) => void;
}) {
  const { t } = useTranslation('editor');
  const cases = task.cases ?? [];
  const setCase = (i: number, patch: Partial<SwitchCaseDef>) =>
    set({ cases: cases.map((c, j) => (j === i ? { ...c, ...patch } : c)) });
  return (
    <div className="switch-fields" data-testid="switch-fields">
      <p className="hint">{t('switch.engineDecides')}</p>
      <div className="muted small">{t('switch.cases')}</div>
      <p className="hint">{t('switch.casesHint')}</p>
      {branches.length === 0 && <p className="hint">{t('switch.noChildren')}</p>}
      {cases.map((c, i) => (
        <fieldset key={i} className="switch-case" data-testid={`switch-case-${i + 1}`}>
          <legend>{t('switch.case', { n: i + 1 })}</legend>
          <label className="field">
            <span>{t('switch.when')}</span>
            <textarea
              className="input mono"
              rows={2}
              spellCheck={false}
              translate="no"
              value={c.when}
              placeholder={t('switch.whenPlaceholder')}
              onChange={(e) => setCase(i, { when: e.target.value })}
              data-testid={`switch-when-${i + 1}`}
            />
            <ConditionCheck when={c.when} />
          </label>
          <div className="field">
            <span>{t('switch.then')}</span>
            <BranchChoice branches={branches} chosen={c.then} onChange={(then) => setCase(i, { then })} testId={`switch-then-${i + 1}`} />
          </div>
          <button
            type="button"
            className="btn btn-sm btn-ghost-danger"
            onClick={() => set({ cases: cases.filter((_, j) => j !== i) })}
            aria-label={t('switch.removeCase', { n: i + 1 })}
          >
            {t('switch.removeCase', { n: i + 1 })}
          </button>
        </fieldset>
      ))}
      <button type="button" className="btn btn-sm" onClick={() => set({ cases: [...cases, { when: '', then: [] }] })} data-testid="switch-add-case">
        {t('switch.addCase')}
      </button>
      <div className="field">
        <span>{t('switch.default')}</span>
        <BranchChoice
          branches={branches}
          chosen={task.default ?? []}
          onChange={(names) => set({ default: names.length ? names : undefined })}
          testId="switch-default"
        />
      </div>
      <p className="hint" translate="no">
        {t('switch.spellings')}
      </p>
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
  const { t } = useTranslation('editor');
  return (
    <>
      <label className="field">
        <span>{t('sensor.waitUntil')}</span>
        <select className="input" value={check} onChange={(e) => replace(changeSensorCheck(content, e.target.value as SensorCheck))} data-testid="sensor-check">
          {SENSOR_CHECKS.map((c) => (
            <option key={c} value={c}>
              {t(`sensor.checks.${c}`)}
            </option>
          ))}
        </select>
      </label>
      {check === 'dataset' && (
        <label className="field">
          <span>{t('sensor.dataset')}</span>
          <input className="input mono" value={String(content.dataset ?? '')} placeholder="ods.orders/${bizdate}" translate="no" onChange={(e) => setContent({ dataset: e.target.value })} data-testid="task-command" />
        </label>
      )}
      {check === 'file' && (
        <label className="field">
          <span>{t('sensor.file')}</span>
          <input className="input mono" value={String(content.file ?? '')} placeholder="/landing/${bizdate}/*.csv" translate="no" onChange={(e) => setContent({ file: e.target.value })} data-testid="task-command" />
        </label>
      )}
      {check === 'http' && (
        <label className="field">
          <span>{t('sensor.url')}</span>
          <input className="input mono" value={String(http.url ?? '')} placeholder="https://api.example.com/ready?date=${bizdate}" translate="no" onChange={(e) => setContent({ http: { ...http, url: e.target.value } })} data-testid="task-command" />
        </label>
      )}
      {check === 'sql' && (
        <>
          <label className="field">
            <span>{t('task.datasource')}</span>
            <input className="input mono" value={String(content.datasource ?? '')} placeholder="dw" translate="no" onChange={(e) => setContent({ datasource: e.target.value })} />
          </label>
          <label className="field">
            <span>{t('sensor.sql')}</span>
            <textarea className="input mono code-input" rows={4} spellCheck={false} value={String(content.sql ?? '')} placeholder="SELECT 1 FROM loads WHERE dt = '${bizdate}'" translate="no" onChange={(e) => setContent({ sql: e.target.value })} data-testid="task-command" />
          </label>
        </>
      )}
      {check === 'dag' && (
        <>
          <div className="form-row">
            <label className="field">
              <span>{t('sensor.dag')}</span>
              <input className="input mono" value={String(content.dag ?? '')} onChange={(e) => setContent({ dag: e.target.value })} data-testid="task-command" />
            </label>
            <label className="field">
              <span>{t('sensor.task')}</span>
              <input className="input mono" value={String(content.task ?? '')} onChange={(e) => setContent({ task: e.target.value })} />
            </label>
          </div>
          <div className="form-row">
            <label className="field">
              <span>{t('sensor.offsetDay')}</span>
              <input className="input" type="number" value={number('offset_day')} placeholder="0" onChange={(e) => setNumber('offset_day', e.target.value)} />
            </label>
            <label className="field">
              <span>{t('sensor.days')}</span>
              <input className="input" type="number" min={1} value={number('days')} placeholder="1" onChange={(e) => setNumber('days', e.target.value)} />
            </label>
          </div>
        </>
      )}
      <div className="form-row">
        <label className="field">
          <span>{t('sensor.pokeInterval')}</span>
          <input className="input" type="number" min={1} value={number('poke_interval')} placeholder="60" onChange={(e) => setNumber('poke_interval', e.target.value)} />
        </label>
        <label className="field">
          <span>{t('sensor.timeout')}</span>
          <input className="input" type="number" min={1} value={number('sensor_timeout')} placeholder="86400" onChange={(e) => setNumber('sensor_timeout', e.target.value)} />
        </label>
      </div>
      <label className="check">
        <input type="checkbox" checked={content.mode === 'poke'} onChange={(e) => setContent({ mode: e.target.checked ? 'poke' : undefined })} />
        {t('sensor.pokeMode')}
      </label>
      <label className="check">
        <input type="checkbox" checked={content.soft_fail === true} onChange={(e) => setContent({ soft_fail: e.target.checked || undefined })} />
        {t('sensor.softFail')}
      </label>
      <label className="check">
        <input type="checkbox" checked={content.exponential_backoff === true} onChange={(e) => setContent({ exponential_backoff: e.target.checked || undefined })} />
        {t('sensor.backoff')}
      </label>
    </>
  );
}
