import { Link } from 'react-router';
import { listDatasets } from '../../api/endpoints';
import { Empty, ErrorBox, Loading } from '../../components/States';
import { formatTime, plural, relativeTime } from '../../lib/format';
import { useAsync, useNow } from '../../lib/hooks';
import { useDagIds } from './dagIds';
import { DagLink } from './links';

/** Every dataset of the caller's project: who writes it, whom it starts, when it was last written. */
export function DatasetsPage() {
  const datasets = useAsync('datasets', (signal) => listDatasets({ signal }));
  const dagIds = useDagIds();
  const now = useNow(30_000);

  return (
    <div className="page">
      <div className="page-head">
        <h1>Datasets</h1>
        <span className="muted">what tasks write, and the DAGs that start when it is written</span>
        <div className="spacer" />
        <button type="button" className="btn btn-sm" onClick={datasets.reload}>
          Refresh
        </button>
      </div>
      {datasets.error ? (
        <ErrorBox error={datasets.error} onRetry={datasets.reload} />
      ) : !datasets.data ? (
        <Loading label="Loading datasets…" />
      ) : datasets.data.items.length === 0 ? (
        <Empty>
          No datasets yet. A task says what it writes with{' '}
          <code>outputs: [dw.orders/${'{bizdate}'}]</code>, and a DAG starts when data is written with{' '}
          <code>schedules: [{'{'} on: {'{'} all: [dw.orders, dw.users] {'}'} {'}'}]</code>.
        </Empty>
      ) : (
        <table className="table" data-testid="datasets-table">
          <thead>
            <tr>
              <th>Dataset</th>
              <th>Written by</th>
              <th>Starts</th>
              <th className="num">Events</th>
              <th>Last written</th>
            </tr>
          </thead>
          <tbody>
            {datasets.data.items.map((d) => (
              <tr key={d.name} data-testid={`dataset-${d.name}`}>
                <td>
                  <Link to={`/datasets/${encodeURIComponent(d.name)}`} className="mono">
                    {d.name}
                  </Link>
                </td>
                <td className="small">
                  {d.producers.length === 0 ? (
                    <span className="muted">outside DataJump</span>
                  ) : (
                    d.producers.map((p) => (
                      <div key={`${p.dag}/${p.task}`}>
                        <DagLink name={p.dag} ids={dagIds} />
                        <span className="muted"> / {p.task}</span>
                      </div>
                    ))
                  )}
                </td>
                <td className="small">
                  {d.consumers.length === 0 ? (
                    <span className="muted">nothing</span>
                  ) : (
                    d.consumers.map((c) => (
                      <div key={`${c.dag}/${c.schedule}`}>
                        <DagLink name={c.dag} ids={dagIds} />
                        {!c.active && <span className="tag tag-muted">paused</span>}
                      </div>
                    ))
                  )}
                </td>
                <td className="num">{d.events}</td>
                <td className="small nowrap">
                  {d.lastEvent ? (
                    <span title={formatTime(d.lastEvent.createdAt)}>
                      {d.lastEvent.partition && <span className="mono">{d.lastEvent.partition} · </span>}
                      {relativeTime(d.lastEvent.createdAt, now)}
                      <span className="muted"> by {d.lastEvent.source.toLowerCase()}</span>
                    </span>
                  ) : (
                    <span className="muted">never</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {datasets.data && datasets.data.items.length > 0 && (
        <div className="pager muted">{plural(datasets.data.total, 'dataset')}</div>
      )}
    </div>
  );
}
