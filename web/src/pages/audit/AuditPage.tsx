import { useState } from 'react';
import { listAudit } from '../../api/endpoints';
import { useCan } from '../../auth/session';
import { Pager } from '../../components/Pager';
import { Empty, ErrorBox, Loading } from '../../components/States';
import { formatTime } from '../../lib/format';
import { useAsync } from '../../lib/hooks';

const PAGE_SIZE = 100;

export function AuditPage() {
  const allowed = useCan('viewAudit');
  const [page, setPage] = useState(1);
  const audit = useAsync(allowed ? `audit:${page}` : null, (signal) => listAudit(page, PAGE_SIZE, { signal }));
  if (!allowed) {
    return (
      <div className="page">
        <h1>Audit</h1>
        <Empty>The audit log is for admins.</Empty>
      </div>
    );
  }
  return (
    <div className="page">
      <div className="page-head">
        <h1>Audit</h1>
        <span className="muted">every change made, newest first</span>
        <div className="spacer" />
        <button type="button" className="btn btn-sm" onClick={audit.reload}>
          Refresh
        </button>
      </div>
      {!audit.data ? (
        audit.error ? <ErrorBox error={audit.error} onRetry={audit.reload} /> : <Loading label="Loading the audit log…" />
      ) : audit.data.items.length === 0 ? (
        <Empty>Nothing changed yet.</Empty>
      ) : (
        <>
          <table className="table" data-testid="audit-table">
            <thead>
              <tr>
                <th>When</th>
                <th>Who</th>
                <th>Role</th>
                <th>What</th>
                <th>Target</th>
                <th className="num">Status</th>
                <th>From</th>
              </tr>
            </thead>
            <tbody>
              {audit.data.items.map((a) => (
                <tr key={a.id}>
                  <td className="mono small nowrap">{formatTime(a.at)}</td>
                  <td>{a.actor}</td>
                  <td>
                    <span className={`role role-${a.role}`}>{a.role}</span>
                  </td>
                  <td className="mono small">{a.action}</td>
                  <td className="mono small ellipsis max-w-320" title={a.target}>
                    {a.target}
                  </td>
                  <td className={`num mono ${a.status >= 400 ? 'text-bad' : ''}`}>{a.status || '—'}</td>
                  <td className="mono small">{a.origin}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager page={page} pageSize={PAGE_SIZE} total={audit.data.total} onPage={setPage} />
        </>
      )}
    </div>
  );
}
