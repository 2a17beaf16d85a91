import { useState, type FormEvent } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import { Link, useParams } from 'react-router';
import { errorMessage } from '../../api/client';
import { backfill, getDag } from '../../api/endpoints';
import type { BackfillRequest, BackfillResponse, Reprocess } from '../../api/types';
import { useCan } from '../../auth/session';
import { ErrorBox, InlineError, Loading } from '../../components/States';
import { previewText, skipReason } from '../../lib/backfill';
import { today } from '../../lib/format';
import { useAsync, useDebounced } from '../../lib/hooks';

const DATE = /^\d{4}-\d{2}-\d{2}$/;

export function BackfillPage() {
  const { t } = useTranslation(['backfill', 'common']);
  const dagId = Number(useParams().dagId);
  const allowed = useCan('backfill');
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
      <BackfillForm dagId={dagId} maxActiveRuns={dag.data.maxActiveRuns} />
    </div>
  );
}

function BackfillForm({ dagId, maxActiveRuns }: { dagId: number; maxActiveRuns: number }) {
  const { t } = useTranslation('backfill');
  const [from, setFrom] = useState(today());
  const [to, setTo] = useState(today());
  const [parallel, setParallel] = useState('');
  const [reprocess, setReprocess] = useState<Reprocess>('none');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<BackfillResponse | null>(null);

  const body: BackfillRequest | null =
    DATE.test(from) && DATE.test(to) && from <= to
      ? {
          from,
          to,
          reprocess,
          ...(parallel.trim() && Number(parallel) > 0 ? { maxActiveRuns: Number(parallel) } : {}),
        }
      : null;
  const settled = useDebounced(body ? JSON.stringify(body) : null, 350);
  const preview = useAsync(settled && !done ? `preview:${dagId}:${settled}` : null, (signal) =>
    backfill(dagId, JSON.parse(settled!) as BackfillRequest, true, { signal }),
  );

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!body) return;
    setBusy(true);
    setError(null);
    try {
      setDone(await backfill(dagId, body, false));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  if (done) {
    return (
      <div className="card" data-testid="backfill-result">
        <h2>{t('result.title')}</h2>
        <p>{previewText(done)}</p>
        {done.runs.length > 0 && (
          <ul className="plain-list mono small">
            {done.runs.map((r) => (
              <li key={r.runKey}>
                {r.bizDate} {r.reprocessed ? t('result.again') : ''}{' '}
                <span className="muted" translate="no">
                  {r.runKey}
                </span>
              </li>
            ))}
          </ul>
        )}
        <div className="form-actions">
          <button type="button" className="btn" onClick={() => setDone(null)}>
            {t('result.another')}
          </button>
          <Link to={`/dags/${dagId}?tab=grid`} className="btn btn-primary">
            {t('result.watch')}
          </Link>
        </div>
      </div>
    );
  }

  const invalid = !body ? (from > to ? t('form.toBeforeFrom') : t('form.giveBothDates')) : null;
  return (
    <form className="form card" onSubmit={submit} data-testid="backfill-form">
      <div className="form-row">
        <label className="field">
          <span>{t('form.from')}</span>
          <input type="date" className="input" value={from} onChange={(e) => setFrom(e.target.value)} required data-testid="backfill-from" />
        </label>
        <label className="field">
          <span>{t('form.to')}</span>
          <input type="date" className="input" value={to} onChange={(e) => setTo(e.target.value)} required data-testid="backfill-to" />
        </label>
        <label className="field">
          <span>{t('form.parallel')}</span>
          <input
            type="number"
            min={1}
            max={1000}
            className="input"
            value={parallel}
            placeholder={t('form.parallelDefault', { max: maxActiveRuns })}
            onChange={(e) => setParallel(e.target.value)}
            data-testid="backfill-parallel"
          />
        </label>
      </div>
      <label className="field">
        <span>{t('form.reprocess')}</span>
        <select className="input" value={reprocess} onChange={(e) => setReprocess(e.target.value as Reprocess)} data-testid="backfill-reprocess">
          <option value="none">{t('form.reprocessNone')}</option>
          <option value="failed">{t('form.reprocessFailed')}</option>
          <option value="all">{t('form.reprocessAll')}</option>
        </select>
      </label>
      <div className="preview" data-testid="backfill-preview" aria-live="polite">
        {invalid ? (
          <span className="muted">{invalid}</span>
        ) : preview.error ? (
          <span className="inline-error">{errorMessage(preview.error)}</span>
        ) : preview.data ? (
          <>
            <div className={preview.loading ? 'stale' : ''}>{previewText(preview.data)}</div>
            {preview.data.skipped.length > 5 && (
              <details className="small">
                <summary>{t('form.everySkipped')}</summary>
                <ul className="plain-list mono">
                  {preview.data.skipped.map((s) => (
                    <li key={s.bizDate}>
                      {s.bizDate} {skipReason(s)}
                    </li>
                  ))}
                </ul>
              </details>
            )}
          </>
        ) : (
          <span className="muted">{t('form.checking')}</span>
        )}
      </div>
      <InlineError error={error} />
      <div className="form-actions">
        <Link to={`/dags/${dagId}`} className="btn">
          {t('form.cancel')}
        </Link>
        <button
          type="submit"
          className="btn btn-primary"
          disabled={busy || !body || (preview.data ? preview.data.runs.length === 0 : false)}
          data-testid="backfill-submit"
        >
          {busy ? t('form.starting') : t('form.start')}
        </button>
      </div>
    </form>
  );
}
