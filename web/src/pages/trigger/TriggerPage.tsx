import { useEffect, useRef, useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { isNotFound } from '../../api/client';
import { getDag, getRunByKey, triggerDag } from '../../api/endpoints';
import type { TriggerResponse } from '../../api/types';
import { useCan } from '../../auth/session';
import { ErrorBox, InlineError, Loading } from '../../components/States';
import { useAsync } from '../../lib/hooks';
import { paramsToSend, type ParamRow } from './triggerParams';

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = window.setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      window.clearTimeout(t);
      reject(new DOMException('aborted', 'AbortError'));
    });
  });

/** The run a trigger started, once a resolver has created it (null after ~15 s). */
async function waitForRun(answer: TriggerResponse, signal: AbortSignal): Promise<number | null> {
  if (answer.instanceId) return answer.instanceId;
  for (let i = 0; i < 30; i++) {
    try {
      const run = await getRunByKey(answer.runKey, { signal });
      return run.id;
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    await sleep(500, signal);
  }
  return null;
}

export function TriggerPage() {
  const dagId = Number(useParams().dagId);
  const navigate = useNavigate();
  const allowed = useCan('trigger');
  const dag = useAsync(`dag:${dagId}`, (signal) => getDag(dagId, { signal }));
  if (!allowed) {
    return (
      <div className="page">
        <ErrorBox title="Not allowed" error={new Error('Triggering a run needs the operator role.')} />
      </div>
    );
  }
  if (!dag.data) {
    return <div className="page">{dag.error ? <ErrorBox error={dag.error} onRetry={dag.reload} /> : <Loading />}</div>;
  }
  const defaults = Object.entries(dag.data.params ?? {}).map(([name, value]) => ({
    name,
    value: String(value),
    default: String(value),
  }));
  return (
    <div className="page page-narrow">
      <div className="crumbs">
        <Link to="/dags">DAGs</Link> / <Link to={`/dags/${dagId}`}>{dag.data.name}</Link> /
      </div>
      <h1>Trigger {dag.data.name}</h1>
      <TriggerForm
        key={dag.data.id}
        dagId={dagId}
        defaults={defaults}
        onDone={(runId) => navigate(`/runs/${runId}`)}
      />
    </div>
  );
}

function TriggerForm({
  dagId,
  defaults,
  onDone,
}: {
  dagId: number;
  defaults: ParamRow[];
  onDone: (runId: number) => void;
}) {
  const [rows, setRows] = useState<ParamRow[]>(defaults);
  const [bizDate, setBizDate] = useState('');
  const [phase, setPhase] = useState<'idle' | 'sending' | 'waiting' | 'lost'>('idle');
  const [answer, setAnswer] = useState<TriggerResponse | null>(null);
  const [error, setError] = useState<unknown>(null);
  const abort = useRef<AbortController | null>(null);
  useEffect(() => () => abort.current?.abort(), []);

  const setRow = (i: number, change: Partial<ParamRow>) =>
    setRows((rs) => rs.map((r, j) => (j === i ? { ...r, ...change } : r)));

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    setPhase('sending');
    const controller = new AbortController();
    abort.current = controller;
    try {
      const params = paramsToSend(rows);
      const sent = await triggerDag(dagId, {
        params: Object.keys(params).length ? params : undefined,
        bizDate: bizDate || undefined,
      });
      setAnswer(sent);
      setPhase('waiting');
      const runId = await waitForRun(sent, controller.signal);
      if (runId) onDone(runId);
      else setPhase('lost');
    } catch (err) {
      if (err instanceof DOMException && err.name === 'AbortError') return;
      setError(err);
      setPhase('idle');
    }
  };

  return (
    <form className="form card" onSubmit={submit} data-testid="trigger-form">
      <label className="field">
        <span>Business date</span>
        <input
          type="date"
          className="input"
          value={bizDate}
          onChange={(e) => setBizDate(e.target.value)}
          data-testid="trigger-biz-date"
        />
        <span className="hint">Left empty: the date a fire of the DAG's schedule would have now.</span>
      </label>
      <fieldset className="fieldset">
        <legend>Parameters</legend>
        {rows.length === 0 && <div className="muted small">This DAG declares no parameters.</div>}
        {rows.map((row, i) => (
          <div key={i} className="param-row">
            {row.default !== undefined ? (
              <span className="param-name mono">{row.name}</span>
            ) : (
              <input
                className="input mono param-name"
                placeholder="name"
                value={row.name}
                onChange={(e) => setRow(i, { name: e.target.value })}
                data-testid="trigger-param-name"
              />
            )}
            <input
              className="input mono grow"
              value={row.value}
              onChange={(e) => setRow(i, { value: e.target.value })}
              data-testid={`trigger-param-${row.name || i}`}
            />
            {row.default !== undefined ? (
              row.value !== row.default ? (
                <button type="button" className="btn btn-sm" onClick={() => setRow(i, { value: row.default })} title={`default: ${row.default}`}>
                  reset
                </button>
              ) : (
                <span className="muted small">default</span>
              )
            ) : (
              <button type="button" className="btn btn-sm" onClick={() => setRows((rs) => rs.filter((_, j) => j !== i))}>
                ×
              </button>
            )}
          </div>
        ))}
        <button type="button" className="btn btn-sm" onClick={() => setRows((rs) => [...rs, { name: '', value: '' }])}>
          + Add parameter
        </button>
        <div className="hint">Only parameters you change or add are sent; the others keep the DAG's values.</div>
      </fieldset>
      <InlineError error={error} />
      {phase === 'waiting' && answer && (
        <div className="banner banner-info">
          Triggered <code>{answer.runKey}</code> ({answer.bizDate}); waiting for a resolver to create the run…
        </div>
      )}
      {phase === 'lost' && answer && (
        <div className="banner banner-warn">
          The run <code>{answer.runKey}</code> was accepted but no resolver has created it yet. It appears in the{' '}
          <Link to={`/dags/${dagId}?tab=runs`}>run history</Link> once one does.
        </div>
      )}
      <div className="form-actions">
        <Link to={`/dags/${dagId}`} className="btn">
          Cancel
        </Link>
        <button type="submit" className="btn btn-primary" disabled={phase === 'sending' || phase === 'waiting'} data-testid="trigger-submit">
          {phase === 'sending' ? 'Triggering…' : phase === 'waiting' ? 'Waiting for the run…' : '▶ Trigger run'}
        </button>
      </div>
    </form>
  );
}
