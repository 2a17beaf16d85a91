import { type FormEvent, useState } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import { Link, useParams } from 'react-router';
import { errorMessage } from '../../api/client';
import { announceDataset, getDataset, listDatasetEvents } from '../../api/endpoints';
import type { AnnouncedDto } from '../../api/types';
import { useCan } from '../../auth/session';
import { Pager } from '../../components/Pager';
import { Empty, ErrorBox, Loading } from '../../components/States';
import { relativeTime } from '../../lib/format';
import { useAsync, useNow } from '../../lib/hooks';
import { useDagIds } from './dagIds';
import { DagLink } from './links';
import { Time } from '../../components/Time';

const PAGE_SIZE = 20;

/** The metadata an example shows: JSON, not words. */
const METADATA_EXAMPLE = '{"rows": 1200}';

/** One dataset: its lineage (who writes it → it → whom it starts), its events, and an announce form. */
export function DatasetPage() {
  const { t } = useTranslation('datasets');
  const name = decodeURIComponent(useParams().name ?? '');
  const dataset = useAsync(`dataset:${name}`, (signal) => getDataset(name, { signal }));
  const [page, setPage] = useState(1);
  const [partition, setPartition] = useState('');
  const events = useAsync(`dataset-events:${name}:${page}:${partition}`, (signal) =>
    listDatasetEvents(name, { page, pageSize: PAGE_SIZE, partition: partition || undefined }, { signal }),
  );
  const dagIds = useDagIds();
  const now = useNow(30_000);
  const canAnnounce = useCan('announceDataset');
  const reload = () => {
    dataset.reload();
    events.reload();
  };

  return (
    <div className="page">
      <div className="page-head">
        <h1>
          <Link to="/datasets" className="muted">
            {t('list.title')}
          </Link>{' '}
          /{' '}
          <span className="mono" translate="no">
            {name}
          </span>
        </h1>
      </div>
      {dataset.error ? (
        <ErrorBox error={dataset.error} onRetry={dataset.reload} />
      ) : !dataset.data ? (
        <Loading label={t('dataset.loading')} />
      ) : (
        <div className="panel" data-testid="lineage">
          <div className="panel-head">
            <strong>{t('lineage.title')}</strong>
            <span className="muted small">{t('lineage.hint')}</span>
          </div>
          <div className="lineage">
            <div className="lineage-col">
              <div className="lineage-title">{t('lineage.writtenBy')}</div>
              {dataset.data.producers.length === 0 && <div className="lineage-node muted">{t('lineage.outside')}</div>}
              {dataset.data.producers.map((p) => (
                <div key={`${p.dag}/${p.task}`} className="lineage-node" data-testid="lineage-producer">
                  <DagLink name={p.dag} ids={dagIds} />
                  <span className="muted">
                    {' / '}
                    <span translate="no">{p.task}</span>
                  </span>
                  {p.partition && (
                    <div className="mono small muted">{t('lineage.partition', { partition: p.partition })}</div>
                  )}
                </div>
              ))}
            </div>
            <div className="lineage-arrow" aria-hidden>
              →
            </div>
            <div className="lineage-col">
              <div className="lineage-title">{t('lineage.dataset')}</div>
              <div className="lineage-node lineage-self">
                <span className="mono" translate="no">
                  {dataset.data.name}
                </span>
                <div className="small muted">
                  {dataset.data.lastEvent
                    ? t('lineage.eventsLast', {
                        count: dataset.data.events,
                        when: relativeTime(dataset.data.lastEvent.createdAt, now),
                      })
                    : t('lineage.events', { count: dataset.data.events })}
                </div>
              </div>
            </div>
            <div className="lineage-arrow" aria-hidden>
              →
            </div>
            <div className="lineage-col">
              <div className="lineage-title">{t('lineage.starts')}</div>
              {dataset.data.consumers.length === 0 && <div className="lineage-node muted">{t('lineage.noDataSchedule')}</div>}
              {dataset.data.consumers.map((c) => (
                <div key={`${c.dag}/${c.schedule}`} className="lineage-node" data-testid="lineage-consumer">
                  <DagLink name={c.dag} ids={dagIds} />
                  <span className="muted">
                    {' '}
                    <Trans
                      t={t}
                      i18nKey="lineage.schedule"
                      values={{ schedule: c.schedule }}
                      components={{ name: <span translate="no" /> }}
                    />
                  </span>
                  {!c.active && <span className="tag tag-muted">{t('lineage.paused')}</span>}
                </div>
              ))}
            </div>
          </div>
        </div>
      )}
      {canAnnounce && <AnnounceForm name={name} onDone={reload} />}
      <div className="panel">
        <div className="panel-head">
          <strong>{t('events.title')}</strong>
          <span className="muted small">{t('events.hint')}</span>
          <div className="spacer" />
          <input
            className="input input-sm events-filter"
            placeholder={t('events.filter')}
            value={partition}
            onChange={(e) => {
              setPartition(e.target.value.trim());
              setPage(1);
            }}
            data-testid="events-partition"
          />
        </div>
        {events.error ? (
          <ErrorBox error={events.error} onRetry={events.reload} />
        ) : !events.data ? (
          <Loading label={t('events.loading')} />
        ) : events.data.items.length === 0 ? (
          <Empty>{partition ? t('events.emptyPartition', { partition }) : t('events.empty')}</Empty>
        ) : (
          <>
            <div className="table-scroll">
              <table className="table" data-testid="dataset-events">
                <thead>
                  <tr>
                    <th>{t('events.columns.written')}</th>
                    <th>{t('events.columns.partition')}</th>
                    <th>{t('events.columns.by')}</th>
                    <th>{t('events.columns.run')}</th>
                    <th>{t('events.columns.metadata')}</th>
                  </tr>
                </thead>
                <tbody>
                  {events.data.items.map((e) => (
                    <tr key={e.id}>
                      <td className="mono small nowrap" title={relativeTime(e.createdAt, now)}>
                        <Time iso={e.createdAt} />
                      </td>
                      <td className="mono" translate="no">
                        {e.partition ?? <span className="muted">—</span>}
                      </td>
                      <td>
                        <span className="tag">{t(`events.source.${e.source}`)}</span>
                      </td>
                      <td className="small">
                        {e.dagRunId ? <Link to={`/runs/${e.dagRunId}`}>{t('events.run', { id: e.dagRunId })}</Link> : <span className="muted">—</span>}
                      </td>
                      <td
                        className="mono small ellipsis max-w-260"
                        title={e.metadata ? JSON.stringify(e.metadata) : ''}
                        translate="no"
                      >
                        {e.metadata ? JSON.stringify(e.metadata) : ''}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager page={page} pageSize={PAGE_SIZE} total={events.data.total} onPage={setPage} />
          </>
        )}
      </div>
    </div>
  );
}

/** Why an announcement was not sent, or what the API answered instead. */
type AnnounceProblem = { kind: 'notJson' } | { kind: 'notObject' } | { kind: 'api'; message: string };

/** Announce that the dataset (or a partition) was written outside DataJump. */
function AnnounceForm({ name, onDone }: { name: string; onDone: () => void }) {
  const { t } = useTranslation(['datasets', 'common']);
  const [partition, setPartition] = useState('');
  const [metadata, setMetadata] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<AnnounceProblem | null>(null);
  const [done, setDone] = useState<AnnouncedDto | null>(null);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    setDone(null);
    let parsed: unknown;
    if (metadata.trim()) {
      try {
        parsed = JSON.parse(metadata);
      } catch {
        setError({ kind: 'notJson' });
        return;
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        setError({ kind: 'notObject' });
        return;
      }
    }
    setBusy(true);
    try {
      const answer = await announceDataset(name, {
        partition: partition.trim() || undefined,
        metadata: parsed,
      });
      setDone(answer);
      onDone();
    } catch (err) {
      setError({ kind: 'api', message: errorMessage(err) });
    } finally {
      setBusy(false);
    }
  };

  const problem =
    error === null
      ? null
      : error.kind === 'api'
        ? error.message
        : t(`announce.${error.kind}`, { example: METADATA_EXAMPLE });
  const values = done && {
    id: done.event.id,
    partition: done.event.partition,
    dags: done.starts.join(t('common:list.separator')),
  };
  const recorded = done
    ? done.event.partition
      ? done.starts.length === 0
        ? 'announce.recordedPartition'
        : 'announce.recordedPartitionStarted'
      : done.starts.length === 0
        ? 'announce.recorded'
        : 'announce.recordedStarted'
    : null;

  return (
    <form className="panel announce" onSubmit={submit} data-testid="announce-form">
      <div className="panel-head">
        <strong>{t('announce.title')}</strong>
        <span className="muted small">{t('announce.hint')}</span>
      </div>
      <div className="announce-row">
        <input
          className="input"
          placeholder={t('announce.partition')}
          value={partition}
          onChange={(e) => setPartition(e.target.value)}
          data-testid="announce-partition"
        />
        <input
          className="input mono"
          placeholder={t('announce.metadata', { example: METADATA_EXAMPLE })}
          value={metadata}
          onChange={(e) => setMetadata(e.target.value)}
          data-testid="announce-metadata"
        />
        <button type="submit" className="btn btn-primary" disabled={busy}>
          {busy ? t('announce.busy') : t('announce.submit')}
        </button>
      </div>
      {problem && <div className="inline-error announce-msg">{problem}</div>}
      {recorded && values && (
        <div className="announce-msg" data-testid="announce-result">
          <Trans
            t={t}
            i18nKey={recorded}
            values={values}
            components={{ partition: <span className="mono" translate="no" />, dags: <span translate="no" /> }}
          />
        </div>
      )}
    </form>
  );
}
