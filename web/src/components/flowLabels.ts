// React Flow's own labels and screen-reader texts (its controls, nodes and
// edges), in the UI's language: the library's defaults are English.

import type { AriaLabelConfig } from '@xyflow/react';
import i18next from 'i18next';

const DIRECTIONS = ['up', 'down', 'left', 'right'] as const;
type Direction = (typeof DIRECTIONS)[number];

/** The labels for `ariaLabelConfig`, in `language`. */
export function flowLabels(language: string): Partial<AriaLabelConfig> {
  const t = i18next.getFixedT(language);
  return {
    'node.a11yDescription.default': t('flow.nodeHelp'),
    'node.a11yDescription.keyboardDisabled': t('flow.nodeHelpKeyboard'),
    'node.a11yDescription.ariaLiveMessage': ({ direction, x, y }) =>
      t('flow.nodeMoved', {
        direction: DIRECTIONS.includes(direction as Direction) ? t(`flow.directions.${direction as Direction}`) : direction,
        x,
        y,
      }),
    'edge.a11yDescription.default': t('flow.edgeHelp'),
    'controls.ariaLabel': t('flow.controls'),
    'controls.zoomIn.ariaLabel': t('flow.zoomIn'),
    'controls.zoomOut.ariaLabel': t('flow.zoomOut'),
    'controls.fitView.ariaLabel': t('flow.fitView'),
    'controls.interactive.ariaLabel': t('flow.interactive'),
  };
}

/**
 * An edge's label in `language`: its two ends, by name, and its kind (as
 * the graph's legend words it) unless it is a plain dependency.
 */
export function edgeLabel(language: string, source: string, target: string, kind?: string): string {
  if (kind) return i18next.getFixedT(language, 'dag')('graph.edgeOfKind', { source, target, kind });
  return i18next.getFixedT(language)('flow.edge', { source, target });
}
