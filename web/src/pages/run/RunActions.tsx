import { useState } from 'react';
import { useTranslation } from 'react-i18next';
import { errorMessage } from '../../api/client';
import { killRun, rerunRun } from '../../api/endpoints';
import type { RunDetail } from '../../api/types';
import { useCan } from '../../auth/session';
import { ConfirmDialog } from '../../components/Modal';
import { isTerminalRun } from '../../lib/status';

type Action = 'kill' | 'rerun' | 'rerun-failed';

/** Each action's texts in the catalogue (`actions.<key>.title`, `.message`, `.confirm`). */
const TEXT_KEY = { kill: 'kill', rerun: 'rerun', 'rerun-failed': 'rerunFailed' } as const satisfies Record<Action, string>;

export function RunActions({ run, onDone }: { run: RunDetail; onDone: () => void }) {
  const { t } = useTranslation('run');
  const canKill = useCan('kill');
  const canRerun = useCan('rerun');
  const [asking, setAsking] = useState<Action | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const terminal = isTerminalRun(run.status);

  const go = async (action: Action) => {
    setBusy(true);
    setError(null);
    try {
      if (action === 'kill') await killRun(run.id);
      else await rerunRun(run.id, action === 'rerun-failed');
      setAsking(null);
      onDone();
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  };
  const open = (a: Action) => {
    setError(null);
    setAsking(a);
  };

  return (
    <>
      {canKill && !terminal && (
        <button type="button" className="btn btn-danger" onClick={() => open('kill')} data-testid="kill-run">
          {t('actions.killButton')}
        </button>
      )}
      {canRerun && terminal && (
        <>
          {run.status !== 'SUCCESS' && (
            <button type="button" className="btn" onClick={() => open('rerun-failed')} data-testid="rerun-failed">
              {t('actions.rerunFailedButton')}
            </button>
          )}
          <button type="button" className="btn" onClick={() => open('rerun')} data-testid="rerun">
            {t('actions.rerunButton')}
          </button>
        </>
      )}
      {asking && (
        <ConfirmDialog
          title={t(`actions.${TEXT_KEY[asking]}.title`)}
          message={t(`actions.${TEXT_KEY[asking]}.message`)}
          confirmLabel={t(`actions.${TEXT_KEY[asking]}.confirm`)}
          danger={asking === 'kill'}
          busy={busy}
          error={error && <div className="inline-error">{error}</div>}
          onConfirm={() => void go(asking)}
          onClose={() => setAsking(null)}
          testId="confirm-button"
        />
      )}
    </>
  );
}
