import { useState } from 'react';
import { errorMessage } from '../../api/client';
import { killRun, rerunRun } from '../../api/endpoints';
import type { RunDetail } from '../../api/types';
import { useCan } from '../../auth/session';
import { ConfirmDialog } from '../../components/Modal';
import { isTerminalRun } from '../../lib/status';

type Action = 'kill' | 'rerun' | 'rerun-failed';

const TEXT: Record<Action, { title: string; message: string; confirm: string }> = {
  kill: {
    title: 'Kill run',
    message: 'Kill this run and every task instance still running or waiting in it?',
    confirm: 'Kill run',
  },
  rerun: {
    title: 'Rerun',
    message: 'Run every task of this run again, in place (same run, same business date)?',
    confirm: 'Rerun all tasks',
  },
  'rerun-failed': {
    title: 'Rerun failed tasks',
    message: 'Run the FAILED, TIMEOUT, KILLED and UPSTREAM_FAILED tasks of this run again, with everything below them?',
    confirm: 'Rerun failed',
  },
};

export function RunActions({ run, onDone }: { run: RunDetail; onDone: () => void }) {
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
          ■ Kill run
        </button>
      )}
      {canRerun && terminal && (
        <>
          {run.status !== 'SUCCESS' && (
            <button type="button" className="btn" onClick={() => open('rerun-failed')} data-testid="rerun-failed">
              ↻ Rerun failed
            </button>
          )}
          <button type="button" className="btn" onClick={() => open('rerun')} data-testid="rerun">
            ↻ Rerun
          </button>
        </>
      )}
      {asking && (
        <ConfirmDialog
          title={TEXT[asking].title}
          message={TEXT[asking].message}
          confirmLabel={TEXT[asking].confirm}
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
