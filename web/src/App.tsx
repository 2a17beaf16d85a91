import { Component, lazy, Suspense, useEffect, type ComponentType, type ReactNode } from 'react';
import { Trans, Translation, useTranslation } from 'react-i18next';
import { BrowserRouter, Navigate, Outlet, Route, Routes, useLocation, useNavigate } from 'react-router';
import { onUnauthorized, signInPath } from './api/client';
import { SessionProvider, useSessionContext } from './auth/session';
import { Layout } from './components/Layout';
import { ErrorBox, Loading } from './components/States';
import { StreamProvider } from './live/stream';
import { SignInPage } from './pages/signin/SignInPage';

/**
 * A page as its own chunk, fetched on its first visit, so the first load
 * does not carry React Flow, dagre and the log viewer. Pages export named
 * components; `lazy` wants a default one.
 */
const lazyPage = <K extends string>(load: () => Promise<Record<K, ComponentType>>, name: K) =>
  lazy(() => load().then((m) => ({ default: m[name] })));

const AlertsPage = lazyPage(() => import('./pages/alerts/AlertsPage'), 'AlertsPage');
const DatasetsPage = lazyPage(() => import('./pages/datasets/DatasetsPage'), 'DatasetsPage');
const DatasetPage = lazyPage(() => import('./pages/datasets/DatasetPage'), 'DatasetPage');
const AuditPage = lazyPage(() => import('./pages/audit/AuditPage'), 'AuditPage');
const BackfillPage = lazyPage(() => import('./pages/backfill/BackfillPage'), 'BackfillPage');
const DagPage = lazyPage(() => import('./pages/dag/DagPage'), 'DagPage');
const DagListPage = lazyPage(() => import('./pages/dags/DagListPage'), 'DagListPage');
const CanvasEditorPage = lazyPage(() => import('./pages/editor/CanvasEditorPage'), 'CanvasEditorPage');
const NotFoundPage = lazyPage(() => import('./pages/NotFoundPage'), 'NotFoundPage');
const RunPage = lazyPage(() => import('./pages/run/RunPage'), 'RunPage');
const RunnersPage = lazyPage(() => import('./pages/runners/RunnersPage'), 'RunnersPage');
const TaskInstancePage = lazyPage(() => import('./pages/taskInstance/TaskInstancePage'), 'TaskInstancePage');
const TriggerPage = lazyPage(() => import('./pages/trigger/TriggerPage'), 'TriggerPage');

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

type PageErrorsProps = { path: string; children: ReactNode };
type PageErrorsState = { path: string | null; error: unknown };

/**
 * A page that throws, or whose chunk does not load (a tab left open across
 * an upgrade asks for the old build's chunk names), shows the error under
 * the bar instead of blanking the app; going to another path clears it.
 */
class PageErrors extends Component<PageErrorsProps, PageErrorsState> {
  state: PageErrorsState = { path: null, error: null };

  static getDerivedStateFromProps(props: PageErrorsProps, state: PageErrorsState): Partial<PageErrorsState> | null {
    return props.path === state.path ? null : { path: props.path, error: null };
  }

  static getDerivedStateFromError(error: unknown): Partial<PageErrorsState> {
    return { error };
  }

  render() {
    if (!this.state.error) return this.props.children;
    return (
      <div className="page">
        <Translation>
          {(t) => <ErrorBox error={this.state.error} title={t('states.pageFailed')} onRetry={() => window.location.reload()} />}
        </Translation>
      </div>
    );
  }
}

/** Where the pages go in the layout: the bar stays while a page's chunk loads. */
function PageOutlet() {
  return (
    <PageErrors path={useLocation().pathname}>
      <Suspense fallback={<Loading />}>
        <Outlet />
      </Suspense>
    </PageErrors>
  );
}

/** The app's pages need a session; without one, sign in first. */
function RequireSession({ children }: { children: ReactNode }) {
  const { t } = useTranslation();
  const { state, refresh } = useSessionContext();
  const location = useLocation();
  if (state.status === 'loading') return <Loading label={t('app.connecting')} />;
  if (state.status === 'error') {
    return (
      <div className="center-page">
        <ErrorBox error={state.error} onRetry={refresh} title={t('app.apiDown')} />
        <p className="muted small">
          <Trans t={t} i18nKey="app.apiDownHint" components={{ code: <code translate="no" /> }} />
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
            <Route element={<PageOutlet />}>
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
              <Route path="/datasets" element={<DatasetsPage />} />
              <Route path="/datasets/:name" element={<DatasetPage />} />
              <Route path="/audit" element={<AuditPage />} />
              <Route path="*" element={<NotFoundPage />} />
            </Route>
          </Route>
        </Routes>
      </SessionProvider>
    </BrowserRouter>
  );
}
