// Who the browser is signed in as: `GET /api/v1/session` once at start,
// shared by every page. A 401 means signing in; with no tokens configured
// the API answers at once (role admin) and no sign-in is needed.

import { createContext, use, useCallback, useEffect, useMemo, useState, type ReactNode } from 'react';
import { ApiError } from '../api/client';
import { getSession, signOut as apiSignOut } from '../api/endpoints';
import type { Role, SessionDto } from '../api/types';
import { can, type Action } from './roles';

export type SessionState =
  | { status: 'loading' }
  | { status: 'signedOut' }
  | { status: 'error'; error: unknown }
  | { status: 'ready'; session: SessionDto };

interface SessionContextValue {
  state: SessionState;
  /** Asks the API again who we are. */
  refresh: () => void;
  /** After a sign-in. */
  setSession: (session: SessionDto) => void;
  /** After a 401 elsewhere. */
  markSignedOut: () => void;
  signOut: () => Promise<void>;
}

const SessionContext = createContext<SessionContextValue | null>(null);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [state, setState] = useState<SessionState>({ status: 'loading' });
  const [nonce, setNonce] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    getSession({ signal: controller.signal }).then(
      (session) => setState({ status: 'ready', session }),
      (error: unknown) => {
        if (controller.signal.aborted) return;
        if (error instanceof ApiError && error.status === 401) setState({ status: 'signedOut' });
        else setState({ status: 'error', error });
      },
    );
    return () => controller.abort();
  }, [nonce]);
  const refresh = useCallback(() => setNonce((n) => n + 1), []);
  const setSession = useCallback(
    (session: SessionDto) => setState({ status: 'ready', session }),
    [],
  );
  const markSignedOut = useCallback(
    () => setState((s) => (s.status === 'signedOut' ? s : { status: 'signedOut' })),
    [],
  );
  const signOut = useCallback(async () => {
    try {
      await apiSignOut();
    } finally {
      setState({ status: 'signedOut' });
    }
  }, []);
  const value = useMemo(
    () => ({ state, refresh, setSession, markSignedOut, signOut }),
    [state, refresh, setSession, markSignedOut, signOut],
  );
  return <SessionContext value={value}>{children}</SessionContext>;
}

export function useSessionContext(): SessionContextValue {
  const value = use(SessionContext);
  if (!value) throw new Error('useSessionContext outside SessionProvider');
  return value;
}

/** The signed-in session (only inside pages behind `RequireSession`). */
export function useSession(): SessionDto | null {
  const { state } = useSessionContext();
  return state.status === 'ready' ? state.session : null;
}

export function useRole(): Role | null {
  return useSession()?.role ?? null;
}

/** Whether the signed-in caller may take `action`. */
export function useCan(action: Action): boolean {
  return can(useRole(), action);
}
