// A run as the live stream announces it, in the shape the run lists hold:
// what the event does not carry (the schedule, the params) is unknown until
// the page reloads the run.

import type { RunDto, RunEvent } from '../api/types';

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
