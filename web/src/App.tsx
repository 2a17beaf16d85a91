import { useEffect, type ReactNode } from 'react';
import { BrowserRouter, Navigate, Route, Routes, useLocation, useNavigate } from 'react-router';
import { onUnauthorized, signInPath } from './api/client';
import { SessionProvider, useSessionContext } from './auth/session';
import { Layout } from './components/Layout';
import { ErrorBox, Loading } from './components/States';
import { StreamProvider } from './live/stream';
import { AlertsPage } from './pages/alerts/AlertsPage';
import { AuditPage } from './pages/audit/AuditPage';
import { BackfillPage } from './pages/backfill/BackfillPage';
import { DagPage } from './pages/dag/DagPage';
import { DagListPage } from './pages/dags/DagListPage';
import { CanvasEditorPage } from './pages/editor/CanvasEditorPage';
import { NotFoundPage } from './pages/NotFoundPage';
import { RunPage } from './pages/run/RunPage';
import { RunnersPage } from './pages/runners/RunnersPage';
import { SignInPage } from './pages/signin/SignInPage';
import { TaskInstancePage } from './pages/taskInstance/TaskInstancePage';
import { TriggerPage } from './pages/trigger/TriggerPage';

/** Sends any 401 answer to the sign-in page, coming back here after. */
function UnauthorizedRedirect() {
  const navigate = useNavigate();
  const { markSignedOut } = useSessionContext();
  useEffect(
    () =>
      onUnauthorized(() => {
        const to = signInPath();
        markSignedOut();
        navigate(to, { replace: true });
      }),
    [navigate, markSignedOut],
  );
  return null;
}

/** The app's pages need a session; without one, sign in first. */
function RequireSession({ children }: { children: ReactNode }) {
  const { state, refresh } = useSessionContext();
  const location = useLocation();
  if (state.status === 'loading') return <Loading label="Connecting to DataJump…" />;
  if (state.status === 'error') {
    return (
      <div className="center-page">
        <ErrorBox error={state.error} onRetry={refresh} title="The DataJump API does not answer" />
        <p className="muted small">
          The page asks <code>GET /api/v1/session</code> on its own address. Is <code>datajump up</code> (or the API
          role) running? In development, <code>npm run dev</code> proxies <code>/api</code> to 127.0.0.1:8080.
        </p>
      </div>
    );
  }
  if (state.status === 'signedOut') {
    const next = location.pathname + location.search;
    return <Navigate to={`/signin?next=${encodeURIComponent(next)}`} replace />;
  }
  return <>{children}</>;
}

export function App() {
  return (
    <BrowserRouter>
      <SessionProvider>
        <UnauthorizedRedirect />
        <Routes>
          <Route path="/signin" element={<SignInPage />} />
          <Route
            element={
              <RequireSession>
                <StreamProvider>
                  <Layout />
                </StreamProvider>
              </RequireSession>
            }
          >
            <Route index element={<Navigate to="/dags" replace />} />
            <Route path="/dags" element={<DagListPage />} />
            <Route path="/dags/new" element={<CanvasEditorPage />} />
            <Route path="/dags/:dagId" element={<DagPage />} />
            <Route path="/dags/:dagId/trigger" element={<TriggerPage />} />
            <Route path="/dags/:dagId/backfill" element={<BackfillPage />} />
            <Route path="/dags/:dagId/edit" element={<CanvasEditorPage />} />
            <Route path="/runs/:runId" element={<RunPage />} />
            <Route path="/task-instances/:id" element={<TaskInstancePage />} />
            <Route path="/runners" element={<RunnersPage />} />
            <Route path="/alerts" element={<AlertsPage />} />
            <Route path="/audit" element={<AuditPage />} />
            <Route path="*" element={<NotFoundPage />} />
          </Route>
        </Routes>
      </SessionProvider>
    </BrowserRouter>
  );
}
