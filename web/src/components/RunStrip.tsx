import { useTranslation } from 'react-i18next';
import { Link } from 'react-router';
import type { RecentRun } from '../api/types';
import { normalizeStatus, statusClass, statusLabel, statusStyle } from '../lib/status';

/** The last runs' states as small squares, oldest left, newest right; each links to its run. */
export function RunStrip({ runs, slots = 10 }: { runs: RecentRun[]; slots?: number }) {
  const { t } = useTranslation('dag');
  const shown = runs.slice(0, slots).reverse();
  const empty = Math.max(0, slots - shown.length);
  return (
    <span className="strip" data-testid="run-strip">
      {Array.from({ length: empty }, (_, i) => (
        <span key={`e${i}`} className="sq sq-empty" />
      ))}
      {shown.map((run) => {
        const s = statusStyle(run.status);
        return (
          <Link
            key={run.id}
            to={`/runs/${run.id}`}
            className={`sq ${statusClass(run.status)}`}
            style={{ background: s.fill, borderColor: s.border }}
            title={t('runStrip.title', { bizDate: run.bizDate, status: statusLabel(run.status), id: run.id })}
            data-status={normalizeStatus(run.status)}
            data-testid="strip-run"
          />
        );
      })}
    </span>
  );
}
