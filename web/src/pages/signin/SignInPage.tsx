import { useState, type FormEvent } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import { Navigate, useNavigate, useSearchParams } from 'react-router';
import { signIn } from '../../api/endpoints';
import { useSessionContext } from '../../auth/session';
import { InlineError, Loading } from '../../components/States';

/** Where to go after signing in: a path of this app only. */
export function safeNext(next: string | null): string {
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/signin')) {
    return '/dags';
  }
  return next;
}

export function SignInPage() {
  const { t } = useTranslation('signin');
  const [params] = useSearchParams();
  const next = safeNext(params.get('next'));
  const { state, setSession } = useSessionContext();
  const navigate = useNavigate();
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  if (state.status === 'loading') return <Loading />;
  if (state.status === 'ready') return <Navigate to={next} replace />;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!token.trim()) return;
    setBusy(true);
    setError(null);
    try {
      const session = await signIn(token.trim());
      setToken('');
      setSession(session);
      navigate(next, { replace: true });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="signin">
      <form className="signin-card" onSubmit={submit}>
        <div className="signin-brand" translate="no">
          <span className="brand-mark" aria-hidden>
            ◆
          </span>
          DataJump
        </div>
        <h1>{t('title')}</h1>
        <p className="muted">
          <Trans
            t={t}
            i18nKey="intro"
            values={{ command: 'datajump token create NAME --role viewer|operator|admin' }}
            components={{ code: <code translate="no" /> }}
          />
        </p>
        <label className="field">
          <span>{t('token')}</span>
          <input
            type="password"
            className="input"
            autoComplete="off"
            autoFocus
            spellCheck={false}
            value={token}
            onChange={(e) => setToken(e.target.value)}
            placeholder="dj_…"
            translate="no"
            data-testid="signin-token"
          />
        </label>
        {state.status === 'error' && <InlineError error={state.error} />}
        <InlineError error={error} />
        <button type="submit" className="btn btn-primary btn-block" disabled={busy || !token.trim()} data-testid="signin-submit">
          {busy ? t('busy') : t('submit')}
        </button>
      </form>
    </div>
  );
}
