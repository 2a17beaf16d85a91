import { useState } from 'react';
import { useTranslation } from 'react-i18next';
import { listAudit } from '../../api/endpoints';
import { useCan } from '../../auth/session';
import { Pager } from '../../components/Pager';
import { Empty, ErrorBox, Loading } from '../../components/States';
import { useAsync } from '../../lib/hooks';
import { Time } from '../../components/Time';

const PAGE_SIZE = 100;

/** The roles the catalogue names; any other role is shown as the API wrote it. */
const ROLES = ['admin', 'operator', 'viewer'] as const;
const isRole = (role: string): role is (typeof ROLES)[number] => (ROLES as readonly string[]).includes(role);

export function AuditPage() {
  const { t } = useTranslation(['audit', 'common']);
  const allowed = useCan('viewAudit');
  const [page, setPage] = useState(1);
  const audit = useAsync(allowed ? `audit:${page}` : null, (signal) => listAudit(page, PAGE_SIZE, { signal }));
  if (!allowed) {
    return (
      <div className="page">
        <h1>{t('title')}</h1>
        <Empty>{t('adminsOnly')}</Empty>
      </div>
    );
  }
  return (
    <div className="page">
      <div className="page-head">
        <h1>{t('title')}</h1>
        <span className="muted">{t('subtitle')}</span>
        <div className="spacer" />
        <button type="button" className="btn btn-sm" onClick={audit.reload}>
          {t('refresh')}
        </button>
      </div>
      {!audit.data ? (
        audit.error ? <ErrorBox error={audit.error} onRetry={audit.reload} /> : <Loading label={t('loading')} />
      ) : audit.data.items.length === 0 ? (
        <Empty>{t('empty')}</Empty>
      ) : (
        <>
          <div className="table-scroll">
            <table className="table" data-testid="audit-table">
              <thead>
                <tr>
                  <th>{t('columns.when')}</th>
                  <th>{t('columns.who')}</th>
                  <th>{t('columns.role')}</th>
                  <th>{t('columns.what')}</th>
                  <th>{t('columns.target')}</th>
                  <th className="num">{t('columns.status')}</th>
                  <th>{t('columns.from')}</th>
                </tr>
              </thead>
              <tbody>
                {audit.data.items.map((a) => (
                  <tr key={a.id}>
                    <td className="mono small nowrap"><Time iso={a.at} /></td>
                    <td translate="no">{a.actor}</td>
                    <td>
                      {isRole(a.role) ? (
                        <span className={`role role-${a.role}`}>{t(`common:session.roles.${a.role}`)}</span>
                      ) : (
                        <span className={`role role-${a.role}`} translate="no">
                          {a.role}
                        </span>
                      )}
                    </td>
                    <td className="mono small" translate="no">
                      {a.action}
                    </td>
                    <td className="mono small ellipsis max-w-320" title={a.target} translate="no">
                      {a.target}
                    </td>
                    <td className={`num mono ${a.status >= 400 ? 'text-bad' : ''}`}>{a.status || '—'}</td>
                    <td className="mono small" translate="no">
                      {a.origin}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager page={page} pageSize={PAGE_SIZE} total={audit.data.total} onPage={setPage} />
        </>
      )}
    </div>
  );
}
