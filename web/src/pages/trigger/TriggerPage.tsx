import { useEffect, useRef, useState, type FormEvent } from 'react';
import { Trans, useTranslation } from 'react-i18next';
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
  const { t } = useTranslation(['trigger', 'common']);
  const dagId = Number(useParams().dagId);
  const navigate = useNavigate();
  const allowed = useCan('trigger');
  const dag = useAsync(`dag:${dagId}`, (signal) => getDag(dagId, { signal }));
  if (!allowed) {
    return (
      <div className="page">
        <ErrorBox title={t('page.notAllowed')} error={new Error(t('page.needsOperator'))} />
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
        <Link to="/dags">{t('common:nav.dags')}</Link> /{' '}
        <Link to={`/dags/${dagId}`} translate="no">
          {dag.data.name}
        </Link>{' '}
        /
      </div>
      <h1>
        <Trans t={t} i18nKey="page.title" values={{ dag: dag.data.name }} components={{ dag: <span translate="no" /> }} />
      </h1>
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
  const { t } = useTranslation('trigger');
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
        <span>{t('form.bizDate')}</span>
        <input
          type="date"
          className="input"
          value={bizDate}
          onChange={(e) => setBizDate(e.target.value)}
          data-testid="trigger-biz-date"
        />
        <span className="hint">{t('form.bizDateHint')}</span>
      </label>
      <fieldset className="fieldset">
        <legend>{t('form.parameters')}</legend>
        {rows.length === 0 && <div className="muted small">{t('form.noParameters')}</div>}
        {rows.map((row, i) => (
          <div key={i} className="param-row">
            {row.default !== undefined ? (
              <span className="param-name mono" translate="no">
                {row.name}
              </span>
            ) : (
              <input
                className="input mono param-name"
                placeholder={t('form.paramName')}
                value={row.name}
                onChange={(e) => setRow(i, { name: e.target.value })}
                data-testid="trigger-param-name"
              />
            )}
            <input
              className="input mono grow"
              translate="no"
              value={row.value}
              onChange={(e) => setRow(i, { value: e.target.value })}
              data-testid={`trigger-param-${row.name || i}`}
            />
            {row.default !== undefined ? (
              row.value !== row.default ? (
                <button
                  type="button"
                  className="btn btn-sm"
                  onClick={() => setRow(i, { value: row.default })}
                  title={t('form.defaultValue', { value: row.default })}
                >
                  {t('form.reset')}
                </button>
              ) : (
                <span className="muted small">{t('form.isDefault')}</span>
              )
            ) : (
              <button
                type="button"
                className="btn btn-sm"
                onClick={() => setRows((rs) => rs.filter((_, j) => j !== i))}
                aria-label={t('form.remove')}
                title={t('form.remove')}
              >
                ×
              </button>
            )}
          </div>
        ))}
        <button type="button" className="btn btn-sm" onClick={() => setRows((rs) => [...rs, { name: '', value: '' }])}>
          {t('form.addParameter')}
        </button>
        <div className="hint">{t('form.parametersHint')}</div>
      </fieldset>
      <InlineError error={error} />
      {phase === 'waiting' && answer && (
        <div className="banner banner-info">
          <Trans
            t={t}
            i18nKey="form.waiting"
            values={{ runKey: answer.runKey, bizDate: answer.bizDate }}
            components={{ code: <code translate="no" /> }}
          />
        </div>
      )}
      {phase === 'lost' && answer && (
        <div className="banner banner-warn">
          <Trans
            t={t}
            i18nKey="form.lost"
            values={{ runKey: answer.runKey }}
            components={{ code: <code translate="no" />, history: <Link to={`/dags/${dagId}?tab=runs`} /> }}
          />
        </div>
      )}
      <div className="form-actions">
        <Link to={`/dags/${dagId}`} className="btn">
          {t('form.cancel')}
        </Link>
        <button type="submit" className="btn btn-primary" disabled={phase === 'sending' || phase === 'waiting'} data-testid="trigger-submit">
          {phase === 'sending'
            ? t('form.triggering')
            : phase === 'waiting'
              ? t('form.waitingForRun')
              : t('form.submit')}
        </button>
      </div>
    </form>
  );
}
