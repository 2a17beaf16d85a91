import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { ApiError, errorMessage } from '../api/client';

export function Loading({ label }: { label?: string }) {
  const { t } = useTranslation();
  return (
    <div className="state state-loading" role="status">
      <span className="spinner" aria-hidden /> {label ?? t('states.loading')}
    </div>
  );
}

/** An error answer: its message, the API's details, and a retry. */
export function ErrorBox({ error, onRetry, title }: { error: unknown; onRetry?: () => void; title?: string }) {
  const { t } = useTranslation();
  const details = error instanceof ApiError ? error.saidDetails() : [];
  const code = error instanceof ApiError ? error.code : null;
  return (
    <div className="state state-error" role="alert">
      <div className="state-error-head">
        <strong>{title ?? t('states.couldNotLoad')}</strong>
        {code && <span className="mono muted"> {code}</span>}
      </div>
      <div data-server-text>{errorMessage(error)}</div>
      {details.length > 0 && (
        <ul className="error-details" data-server-text>
          {details.map((d, i) => (
            <li key={i}>{d}</li>
          ))}
        </ul>
      )}
      {onRetry && (
        <button type="button" className="btn btn-sm" onClick={onRetry}>
          {t('states.retry')}
        </button>
      )}
    </div>
  );
}

/** The short message of an inline error (forms, actions). */
export function InlineError({ error }: { error: unknown }) {
  if (!error) return null;
  const details = error instanceof ApiError ? error.saidDetails() : [];
  return (
    <div className="inline-error" role="alert">
      <span data-server-text>{errorMessage(error)}</span>
      {details.length > 0 && (
        <ul className="error-details" data-server-text>
          {details.map((d, i) => (
            <li key={i}>{d}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="state state-empty">{children}</div>;
}

/**
 * The usual three states around `children`: loading before the first
 * answer, the error when there is no data, else the content.
 */
export function Loadable<T>({
  data,
  error,
  loading,
  reload,
  children,
  label,
}: {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload?: () => void;
  label?: string;
  children: (data: T) => ReactNode;
}) {
  const { t } = useTranslation();
  if (data === undefined) {
    if (error) return <ErrorBox error={error} onRetry={reload} />;
    if (loading) return <Loading label={label} />;
    return null;
  }
  return (
    <>
      {error ? <ErrorBox error={error} onRetry={reload} title={t('states.couldNotRefresh')} /> : null}
      {children(data)}
    </>
  );
}
