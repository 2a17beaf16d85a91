import { NavLink, Outlet, useNavigate } from 'react-router';
import { useCan, useSession, useSessionContext } from '../auth/session';
import { useStreamStatus } from '../live/stream';

const LIVE_LABEL = {
  connecting: 'connecting',
  live: 'live',
  reconnecting: 'reconnecting…',
  down: 'offline',
} as const;

function LiveIndicator() {
  const status = useStreamStatus();
  return (
    <span className={`live live-${status}`} title={`Live updates: ${LIVE_LABEL[status]}`}>
      <span className="live-dot" aria-hidden />
      {LIVE_LABEL[status]}
    </span>
  );
}

export function Layout() {
  const session = useSession();
  const { signOut } = useSessionContext();
  const navigate = useNavigate();
  const audit = useCan('viewAudit');
  const link = ({ isActive }: { isActive: boolean }) => `nav-link${isActive ? ' active' : ''}`;
  return (
    <div className="app">
      <header className="topbar">
        <NavLink to="/dags" className="brand">
          <span className="brand-mark" aria-hidden>
            ◆
          </span>
          DataJump
        </NavLink>
        <nav className="nav">
          <NavLink to="/dags" className={link}>
            DAGs
          </NavLink>
          <NavLink to="/datasets" className={link}>
            Datasets
          </NavLink>
          <NavLink to="/runners" className={link}>
            Runners
          </NavLink>
          <NavLink to="/alerts" className={link}>
            Alerts
          </NavLink>
          {audit && (
            <NavLink to="/audit" className={link}>
              Audit
            </NavLink>
          )}
        </nav>
        <div className="topbar-right">
          <LiveIndicator />
          {session && (
            <span className="whoami" data-testid="whoami" title={session.projectId ? `project ${session.projectId}` : 'every project'}>
              <span className="whoami-name">{session.name}</span>{' '}
              <span className={`role role-${session.role}`}>{session.role}</span>
            </span>
          )}
          {session?.tokensRequired && (
            <button
              type="button"
              className="btn btn-sm btn-ghost-dark"
              data-testid="sign-out"
              onClick={() => {
                void signOut().finally(() => navigate('/signin'));
              }}
            >
              Sign out
            </button>
          )}
        </div>
      </header>
      <main className="main">
        <Outlet />
      </main>
    </div>
  );
}
