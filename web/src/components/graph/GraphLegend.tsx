// The legend of the edge kinds a graph holds: each drawn as the edges are.

import { useTranslation } from 'react-i18next';
import { EDGE_LOOKS } from './edgeLook';
import type { DrawnEdgeKind } from './model';

function Swatch({ kind }: { kind: DrawnEdgeKind }) {
  const look = EDGE_LOOKS[kind];
  return (
    <svg className="glegend-swatch" width="30" height="10" aria-hidden="true">
      <line x1="1" y1="5" x2="23" y2="5" stroke={look.color} strokeWidth={look.width + 0.5} strokeDasharray={look.dash} />
      <path d="M23 1.5 L29 5 L23 8.5 Z" fill={look.color} />
    </svg>
  );
}

export function GraphLegend({ kinds }: { kinds: DrawnEdgeKind[] }) {
  const { t } = useTranslation('dag');
  return (
    <ul className="glegend" aria-label={t('graph.legend')} data-testid="graph-legend">
      {kinds.map((kind) => (
        <li key={kind} className="glegend-item" data-kind={kind}>
          <Swatch kind={kind} />
          {t(`graph.kinds.${kind}`)}
        </li>
      ))}
    </ul>
  );
}
