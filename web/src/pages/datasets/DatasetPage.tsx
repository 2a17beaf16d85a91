import { type FormEvent, useState } from 'react';
import { Link, useParams } from 'react-router';
import { errorMessage } from '../../api/client';
import { announceDataset, getDataset, listDatasetEvents } from '../../api/endpoints';
import type { AnnouncedDto } from '../../api/types';
import { useCan } from '../../auth/session';
import { Pager } from '../../components/Pager';
import { Empty, ErrorBox, Loading } from '../../components/States';
import { formatTime, relativeTime } from '../../lib/format';
import { useAsync, useNow } from '../../lib/hooks';
import { useDagIds } from './dagIds';
import { DagLink } from './links';

const PAGE_SIZE = 20;

/** One dataset: its lineage (who writes it → it → whom it starts), its events, and an announce form. */
export function DatasetPage() {
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
            Datasets
          </Link>{' '}
          / <span className="mono">{name}</span>
        </h1>
      </div>
      {dataset.error ? (
        <ErrorBox error={dataset.error} onRetry={dataset.reload} />
      ) : !dataset.data ? (
        <Loading label="Loading the dataset…" />
      ) : (
        <div className="panel" data-testid="lineage">
          <div className="panel-head">
            <strong>Lineage</strong>
            <span className="muted small">the tasks that write it, and the DAGs its events start</span>
          </div>
          <div className="lineage">
            <div className="lineage-col">
              <div className="lineage-title">Written by</div>
              {dataset.data.producers.length === 0 && <div className="lineage-node muted">outside DataJump</div>}
              {dataset.data.producers.map((p) => (
                <div key={`${p.dag}/${p.task}`} className="lineage-node" data-testid="lineage-producer">
                  <DagLink name={p.dag} ids={dagIds} />
                  <span className="muted"> / {p.task}</span>
                  {p.partition && <div className="mono small muted">partition {p.partition}</div>}
                </div>
              ))}
            </div>
            <div className="lineage-arrow" aria-hidden>
              →
            </div>
            <div className="lineage-col">
              <div className="lineage-title">Dataset</div>
              <div className="lineage-node lineage-self">
                <span className="mono">{dataset.data.name}</span>
                <div className="small muted">
                  {dataset.data.events} events
                  {dataset.data.lastEvent && <>, last {relativeTime(dataset.data.lastEvent.createdAt, now)}</>}
                </div>
              </div>
            </div>
            <div className="lineage-arrow" aria-hidden>
              →
            </div>
            <div className="lineage-col">
              <div className="lineage-title">Starts</div>
              {dataset.data.consumers.length === 0 && <div className="lineage-node muted">no data schedule</div>}
              {dataset.data.consumers.map((c) => (
                <div key={`${c.dag}/${c.schedule}`} className="lineage-node" data-testid="lineage-consumer">
                  <DagLink name={c.dag} ids={dagIds} />
                  <span className="muted"> · schedule {c.schedule}</span>
                  {!c.active && <span className="tag tag-muted">paused</span>}
                </div>
              ))}
            </div>
          </div>
        </div>
      )}
      {canAnnounce && <AnnounceForm name={name} onDone={reload} />}
      <div className="panel">
        <div className="panel-head">
          <strong>Events</strong>
          <span className="muted small">newest first</span>
          <div className="spacer" />
          <input
            className="input input-sm events-filter"
            placeholder="partition, e.g. 2024-01-15"
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
          <Loading label="Loading events…" />
        ) : events.data.items.length === 0 ? (
          <Empty>No event{partition ? ` for partition ${partition}` : ''} yet.</Empty>
        ) : (
          <>
            <table className="table" data-testid="dataset-events">
              <thead>
                <tr>
                  <th>Written</th>
                  <th>Partition</th>
                  <th>By</th>
                  <th>Run</th>
                  <th>Metadata</th>
                </tr>
              </thead>
              <tbody>
                {events.data.items.map((e) => (
                  <tr key={e.id}>
                    <td className="mono small nowrap" title={relativeTime(e.createdAt, now)}>
                      {formatTime(e.createdAt)}
                    </td>
                    <td className="mono">{e.partition ?? <span className="muted">—</span>}</td>
                    <td>
                      <span className="tag">{e.source}</span>
                    </td>
                    <td className="small">
                      {e.dagRunId ? <Link to={`/runs/${e.dagRunId}`}>run #{e.dagRunId}</Link> : <span className="muted">—</span>}
                    </td>
                    <td className="mono small ellipsis max-w-260" title={e.metadata ? JSON.stringify(e.metadata) : ''}>
                      {e.metadata ? JSON.stringify(e.metadata) : ''}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <Pager page={page} pageSize={PAGE_SIZE} total={events.data.total} onPage={setPage} />
          </>
        )}
      </div>
    </div>
  );
}

/** Announce that the dataset (or a partition) was written outside DataJump. */
function AnnounceForm({ name, onDone }: { name: string; onDone: () => void }) {
  const [partition, setPartition] = useState('');
  const [metadata, setMetadata] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
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
        setError('Metadata must be JSON, such as {"rows": 1200}.');
        return;
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        setError('Metadata must be a JSON object, such as {"rows": 1200}.');
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
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="panel announce" onSubmit={submit} data-testid="announce-form">
      <div className="panel-head">
        <strong>Announce</strong>
        <span className="muted small">a partition written outside DataJump: starts every data schedule it completes</span>
      </div>
      <div className="announce-row">
        <input
          className="input"
          placeholder="partition (optional), e.g. 2024-01-15"
          value={partition}
          onChange={(e) => setPartition(e.target.value)}
          data-testid="announce-partition"
        />
        <input
          className="input mono"
          placeholder='metadata (optional), e.g. {"rows": 1200}'
          value={metadata}
          onChange={(e) => setMetadata(e.target.value)}
          data-testid="announce-metadata"
        />
        <button type="submit" className="btn btn-primary" disabled={busy}>
          {busy ? 'Announcing…' : 'Announce'}
        </button>
      </div>
      {error && <div className="inline-error announce-msg">{error}</div>}
      {done && (
        <div className="announce-msg" data-testid="announce-result">
          Recorded event #{done.event.id}
          {done.event.partition && <> of partition <span className="mono">{done.event.partition}</span></>}.{' '}
          {done.starts.length === 0 ? 'It starts nothing yet.' : `Started: ${done.starts.join(', ')}.`}
        </div>
      )}
    </form>
  );
}
