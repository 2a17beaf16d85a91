// What the highlighted node reaches, and for a task with an instance in the
// chosen run, the way to open it (as a double click on the node does).

import { useTranslation } from 'react-i18next';

export function FocusLine({
  name,
  upstream,
  downstream,
  onOpen,
  onClear,
}: {
  name: string;
  upstream: number;
  downstream: number;
  onOpen?: () => void;
  onClear: () => void;
}) {
  const { t } = useTranslation('dag');
  return (
    <span className="graph-focus" data-testid="graph-focus">
      <strong className="mono" translate="no">
        {name}
      </strong>
      <span className="muted small">{t('graph.focus.lineage', { upstream, downstream })}</span>
      {onOpen && (
        <button type="button" className="linklike small" onClick={onOpen} data-testid="graph-open-instance">
          {t('graph.focus.open')}
        </button>
      )}
      <button type="button" className="graph-focus-clear" onClick={onClear} aria-label={t('graph.focus.clear')} title={t('graph.focus.clear')}>
        ×
      </button>
    </span>
  );
}
