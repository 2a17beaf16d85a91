import { Trans, useTranslation } from 'react-i18next';
import { Link } from 'react-router';
import { listDatasets } from '../../api/endpoints';
import { Empty, ErrorBox, Loading } from '../../components/States';
import { formatTime, relativeTime } from '../../lib/format';
import { useAsync, useNow } from '../../lib/hooks';
import { useDagIds } from './dagIds';
import { DagLink } from './links';

/** Every dataset of the caller's project: who writes it, whom it starts, when it was last written. */
export function DatasetsPage() {
  const { t } = useTranslation('datasets');
  const datasets = useAsync('datasets', (signal) => listDatasets({ signal }));
  const dagIds = useDagIds();
  const now = useNow(30_000);

  return (
    <div className="page">
      <div className="page-head">
        <h1>{t('list.title')}</h1>
        <span className="muted">{t('list.subtitle')}</span>
        <div className="spacer" />
        <button type="button" className="btn btn-sm" onClick={datasets.reload}>
          {t('list.refresh')}
        </button>
      </div>
      {datasets.error ? (
        <ErrorBox error={datasets.error} onRetry={datasets.reload} />
      ) : !datasets.data ? (
        <Loading label={t('list.loading')} />
      ) : datasets.data.items.length === 0 ? (
        <Empty>
          <Trans
            t={t}
            i18nKey="list.empty"
            values={{
              outputs: 'outputs: [dw.orders/${bizdate}]',
              schedules: 'schedules: [{ on: { all: [dw.orders, dw.users] } }]',
            }}
            components={{ code: <code translate="no" /> }}
          />
        </Empty>
      ) : (
        <div className="table-scroll">
          <table className="table" data-testid="datasets-table">
            <thead>
              <tr>
                <th>{t('list.columns.dataset')}</th>
                <th>{t('list.columns.writtenBy')}</th>
                <th>{t('list.columns.starts')}</th>
                <th className="num">{t('list.columns.events')}</th>
                <th>{t('list.columns.lastWritten')}</th>
              </tr>
            </thead>
            <tbody>
              {datasets.data.items.map((d) => (
                <tr key={d.name} data-testid={`dataset-${d.name}`}>
                  <td>
                    <Link to={`/datasets/${encodeURIComponent(d.name)}`} className="mono" translate="no">
                      {d.name}
                    </Link>
                  </td>
                  <td className="small">
                    {d.producers.length === 0 ? (
                      <span className="muted">{t('list.outside')}</span>
                    ) : (
                      d.producers.map((p) => (
                        <div key={`${p.dag}/${p.task}`}>
                          <DagLink name={p.dag} ids={dagIds} />
                          <span className="muted">
                            {' / '}
                            <span translate="no">{p.task}</span>
                          </span>
                        </div>
                      ))
                    )}
                  </td>
                  <td className="small">
                    {d.consumers.length === 0 ? (
                      <span className="muted">{t('list.nothing')}</span>
                    ) : (
                      d.consumers.map((c) => (
                        <div key={`${c.dag}/${c.schedule}`}>
                          <DagLink name={c.dag} ids={dagIds} />
                          {!c.active && <span className="tag tag-muted">{t('list.paused')}</span>}
                        </div>
                      ))
                    )}
                  </td>
                  <td className="num">{d.events}</td>
                  <td className="small nowrap">
                    {d.lastEvent ? (
                      <span title={formatTime(d.lastEvent.createdAt)}>
                        {d.lastEvent.partition && (
                          <span className="mono">
                            <span translate="no">{d.lastEvent.partition}</span>
                            {' · '}
                          </span>
                        )}
                        {relativeTime(d.lastEvent.createdAt, now)}
                        <span className="muted"> {t(`list.by.${d.lastEvent.source}`)}</span>
                      </span>
                    ) : (
                      <span className="muted">{t('list.never')}</span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {datasets.data && datasets.data.items.length > 0 && (
        <div className="pager muted">{t('list.total', { count: datasets.data.total })}</div>
      )}
    </div>
  );
}
