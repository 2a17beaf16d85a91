// How each kind of edge is drawn: colour (a CSS variable, so the dark theme
// redefines it), dashes and width; the same look draws the legend's swatch.
// And the short label an edge to another run carries.

import type { TFunction } from 'i18next';
import { kindOf, type DrawnEdge, type DrawnEdgeKind } from './model';

export interface EdgeLook {
  color: string;
  dash?: string;
  width: number;
}

export const EDGE_LOOKS: Record<DrawnEdgeKind, EdgeLook> = {
  STRONG: { color: 'var(--gedge-strong)', width: 1.25 },
  WEAK: { color: 'var(--gedge-strong)', dash: '6 4', width: 1.25 },
  CROSS_RUN: { color: 'var(--gedge-run)', dash: '2 3', width: 1.5 },
  PREVIOUS_RUN: { color: 'var(--gedge-run)', dash: '2 3', width: 1.5 },
  CROSS_DAG: { color: 'var(--gedge-dag)', width: 1.5 },
  AFTER: { color: 'var(--gedge-after)', dash: '10 4', width: 1.5 },
  READS: { color: 'var(--gedge-data)', width: 1.5 },
  WRITES: { color: 'var(--gedge-data)', dash: '5 3', width: 1.5 },
};

/** `n` days with its sign, as an offset is written: −1, +2. */
export function signedDays(n: number): string {
  return n < 0 ? `\u2212${-n}` : `+${n}`;
}

/** The label on an edge that waits on another run or ends weak, or undefined. */
export function edgeText(edge: DrawnEdge, t: TFunction<'dag'>): string | undefined {
  const kind = kindOf(edge);
  const offset = edge.offsetDay ?? 0;
  const weak = !!edge.weak && kind !== 'WEAK';
  if (kind === 'PREVIOUS_RUN') return t(weak ? 'graph.edge.previousWeak' : 'graph.edge.previous');
  if (offset !== 0) return t(weak ? 'graph.edge.daysWeak' : 'graph.edge.days', { offset: signedDays(offset) });
  return weak ? t('graph.edge.weak') : undefined;
}
