import { useState } from 'react';
import { useTranslation } from 'react-i18next';
import { Link } from 'react-router';
import { listRuns } from '../../api/endpoints';
import { Pager } from '../../components/Pager';
import { StatusBadge } from '../../components/Status';
import { Empty, ErrorBox, Loading } from '../../components/States';
import { durationMs, formatDuration } from '../../lib/format';
import { useAsync, useNow } from '../../lib/hooks';
import { isTerminalRun } from '../../lib/status';
import { useStream } from '../../live/stream';
import { runFromEvent, triggerLabel } from '../../lib/runs';
import { Time } from '../../components/Time';

const LIMIT = 50;

export function RunsTab({ dagId }: { dagId: number }) {
  const { t } = useTranslation('dag');
  const [page, setPage] = useState(1);
  const runs = useAsync(`runs:${dagId}:${page}`, (signal) => listRuns(dagId, page, LIMIT, { signal }));
  const anyRunning = runs.data?.items.some((r) => !isTerminalRun(r.status)) ?? false;
  const now = useNow(1000, anyRunning);

  useStream({
    onRun: (event) => {
      if (event.dagId !== dagId) return;
      runs.setData((data) => {
        const at = data.items.findIndex((r) => r.id === event.id);
        if (at >= 0) {
          const items = [...data.items];
          items[at] = { ...items[at]!, status: event.status, startTime: event.startTime, endTime: event.endTime };
          return { ...data, items };
        }
        if (page !== 1) return { ...data, total: data.total + 1 };
        const fresh = runFromEvent(event);
        return { ...data, items: [fresh, ...data.items].slice(0, LIMIT), total: data.total + 1 };
      });
    },
    onReconnect: () => runs.reload(),
  });

  if (!runs.data) {
    return runs.error ? <ErrorBox error={runs.error} onRetry={runs.reload} /> : <Loading label={t('runs.loading')} />;
  }
  if (runs.data.items.length === 0) return <Empty>{t('noRunsYet')}</Empty>;
  return (
    <div>
      <div className="table-scroll">
        <table className="table" data-testid="runs-table">
          <thead>
            <tr>
              <th>{t('runs.run')}</th>
              <th>{t('runs.status')}</th>
              <th>{t('runs.bizDate')}</th>
              <th>{t('runs.trigger')}</th>
              <th>{t('runs.runKey')}</th>
              <th>{t('runs.started')}</th>
              <th className="num">{t('runs.duration')}</th>
              <th className="num">{t('runs.dagVersion')}</th>
            </tr>
          </thead>
          <tbody>
            {runs.data.items.map((r) => (
              <tr key={r.id} data-testid="run-row" data-run-id={r.id}>
                <td className="mono">
                  <Link to={`/runs/${r.id}`}>#{r.id}</Link>
                </td>
                <td>
                  <StatusBadge status={r.status} />
                </td>
                <td className="mono">{r.bizDate}</td>
                <td>{triggerLabel(r.triggerType)}</td>
                <td className="mono small ellipsis max-w-260" title={r.runKey} translate="no">
                  {r.runKey}
                </td>
                <td className="mono small"><Time iso={r.startTime} /></td>
                <td className="num mono small">{formatDuration(durationMs(r.startTime, r.endTime, now))}</td>
                <td className="num">{r.dagVersion > 0 ? t('version', { version: r.dagVersion }) : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <Pager page={page} pageSize={LIMIT} total={runs.data.total} onPage={setPage} />
    </div>
  );
}
