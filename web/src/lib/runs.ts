// Runs as pages show them: what started one, in words, and a run as the
// live stream announces it, in the shape the run lists hold: what the event
// does not carry (the schedule, the params) is unknown until the page
// reloads the run.

import i18next from 'i18next';
import type { RunDto, RunEvent } from '../api/types';

const TRIGGER_TYPES = ['SCHEDULE', 'MANUAL', 'BACKFILL', 'EVENT', 'DEPENDENCY', 'DATASET', 'RERUN'] as const;
type TriggerType = (typeof TRIGGER_TYPES)[number];

/** Whether the API's trigger type is one the catalogue names. */
export function isKnownTrigger(type: string | null | undefined): type is TriggerType {
  return (TRIGGER_TYPES as readonly string[]).includes(type ?? '');
}

/**
 * What started a run (`MANUAL`, `SCHEDULE`, …) in the UI's language; a type
 * this UI does not know is shown as the API wrote it.
 */
export function triggerLabel(type: string | null | undefined): string {
  return isKnownTrigger(type) ? i18next.t(`run:trigger.${type}`) : (type ?? '');
}

export function runFromEvent(event: RunEvent): RunDto {
  return {
    id: event.id,
    dagId: event.dagId,
    dagVersion: event.dagVersion,
    runKey: event.runKey,
    scheduleId: null,
    triggerType: event.triggerType,
    bizDate: event.bizDate,
    scheduleTime: event.startTime,
    status: event.status,
    runParams: null,
    startTime: event.startTime,
    endTime: event.endTime,
  };
}

/** The anchor on a run's page of a mapped task's first item, where its items are listed. */
export function itemsAnchor(task: string): string {
  return `items-${task}`;
}
