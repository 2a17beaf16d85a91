import { useState } from 'react';
import { useTranslation } from 'react-i18next';
import { errorMessage } from '../api/client';
import { setDagOnline } from '../api/endpoints';
import type { DagSummary } from '../api/types';
import { useCan } from '../auth/session';

/**
 * A DAG's online switch for operators and admins; a plain label for
 * viewers, who may not change it.
 */
export function OnlineToggle({
  dagId,
  online,
  onChanged,
}: {
  dagId: number;
  online: boolean;
  onChanged: (dag: Pick<DagSummary, 'online'>) => void;
}) {
  const { t } = useTranslation('dag');
  const allowed = useCan('toggleOnline');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  if (!allowed) {
    return <span className={`tag ${online ? 'tag-on' : 'tag-muted'}`}>{online ? t('online.on') : t('online.off')}</span>;
  }
  const flip = async () => {
    setBusy(true);
    setError(null);
    try {
      const dag = await setDagOnline(dagId, !online);
      onChanged({ online: dag?.online ?? !online });
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <span className="toggle-wrap">
      <button
        type="button"
        role="switch"
        aria-checked={online}
        aria-label={online ? t('online.takeOffline') : t('online.putOnline')}
        title={online ? t('online.onTitle') : t('online.offTitle')}
        className={`switch${online ? ' on' : ''}`}
        disabled={busy}
        onClick={flip}
        data-testid="online-toggle"
        data-online={online}
      >
        <span className="switch-knob" />
      </button>
      {error && (
        <span className="toggle-error" role="alert" title={error}>
          !
        </span>
      )}
    </span>
  );
}
