// Every endpoint the UI calls, one function each (routes: api/src/routes/table.rs).

import { ApiError, apiUrl, request, requestText } from './client';
import type {
  AlertDto,
  AnnouncedDto,
  AuditDto,
  BackfillRequest,
  BackfillResponse,
  Canvas,
  Graph,
  CanvasSave,
  ClearRequest,
  DagDefinitionBody,
  DagDefinitionChanges,
  DagDetail,
  DagListItem,
  DagSummary,
  DatasetDto,
  DatasetEventDto,
  DryRunResponse,
  GanttDto,
  GridDto,
  KillResponse,
  MarkRequest,
  Page,
  ProjectDto,
  RerunResponse,
  RunDetail,
  RunDto,
  QueueDto,
  RunnerDto,
  ScheduleBody,
  ScheduleDto,
  SessionDto,
  TaskInstanceDetail,
  TaskResetResponse,
  TriggerRequest,
  TriggerResponse,
  ValidateCronRequest,
  ValidateCronResponse,
  ValidateConditionRequest,
  ValidateConditionResponse,
} from './types';

type Signal = { signal?: AbortSignal };

// ---- Session ----

export const getSession = (o: Signal = {}) =>
  request<SessionDto>('/session', { ...o, noAuthRedirect: true });
export const signIn = (token: string) =>
  request<SessionDto>('/session', { method: 'POST', body: { token }, noAuthRedirect: true });
export const signOut = () =>
  request<void>('/session', { method: 'DELETE', noAuthRedirect: true });

// ---- Projects ----

export const listProjects = (o: Signal = {}) =>
  request<Page<ProjectDto>>('/projects', { ...o, query: { pageSize: 500 } });

// ---- DAGs ----

export interface DagListQuery {
  projectId?: number;
  page?: number;
  pageSize?: number;
  search?: string;
}

export const listDags = (q: DagListQuery, o: Signal = {}) =>
  request<Page<DagListItem>>('/dags', { ...o, query: { ...q } });
export const getDag = (dagId: number, o: Signal = {}) =>
  request<DagDetail>(`/dags/${dagId}`, o);
export const createDag = (definition: DagDefinitionBody, dryRun = false) =>
  request<DagDetail | DryRunResponse>('/dags', {
    method: 'POST',
    body: definition,
    query: dryRun ? { dryRun: true } : undefined,
  });
/** Changes the fields given (`PUT`), keeping the others; the name cannot change. */
export const updateDag = (dagId: number, changes: DagDefinitionChanges) =>
  request<DagDetail>(`/dags/${dagId}`, { method: 'PUT', body: changes });
export const setDagOnline = (dagId: number, online: boolean) =>
  request<DagSummary>(`/dags/${dagId}/${online ? 'online' : 'offline'}`, { method: 'POST' });
export const getCanvas = (dagId: number, o: Signal = {}) =>
  request<Canvas>(`/dags/${dagId}/canvas`, o);

export const getGraph = (dagId: number, o: Signal = {}) =>
  request<Graph>(`/dags/${dagId}/graph`, o);

/**
 * Saves the canvas. The route table serves it as POST; a PUT is tried
 * when POST is refused with 405, so either method of the API works.
 */
export async function saveCanvas(dagId: number, body: CanvasSave): Promise<Canvas> {
  try {
    return await request<Canvas>(`/dags/${dagId}/canvas`, { method: 'POST', body });
  } catch (e) {
    if (e instanceof ApiError && e.status === 405) {
      return request<Canvas>(`/dags/${dagId}/canvas`, { method: 'PUT', body });
    }
    throw e;
  }
}

export const triggerDag = (dagId: number, body: TriggerRequest) =>
  request<TriggerResponse>(`/dags/${dagId}/trigger`, { method: 'POST', body });
export const backfill = (dagId: number, body: BackfillRequest, dryRun: boolean, o: Signal = {}) =>
  request<BackfillResponse>(`/dags/${dagId}/backfill`, {
    ...o,
    method: 'POST',
    body,
    query: dryRun ? { dryRun: true } : undefined,
  });
export const getGrid = (dagId: number, runs: number, before?: number, o: Signal = {}) =>
  request<GridDto>(`/dags/${dagId}/grid`, { ...o, query: { runs, before } });

// ---- Runs ----

export const listRuns = (dagId: number, page: number, limit: number, o: Signal = {}) =>
  request<Page<RunDto>>(`/dags/${dagId}/instances`, { ...o, query: { page, limit } });
export const getRun = (runId: number, o: Signal = {}) =>
  request<RunDetail>(`/dags/instances/${runId}`, o);
export const getRunByKey = (runKey: string, o: Signal = {}) =>
  request<RunDetail>(`/dags/instances/by-key/${encodeURIComponent(runKey)}`, o);
export const getGantt = (runId: number, o: Signal = {}) =>
  request<GanttDto>(`/dags/instances/${runId}/gantt`, o);
export const killRun = (runId: number) =>
  request<KillResponse>(`/dags/instances/${runId}/kill`, { method: 'POST' });
export const rerunRun = (runId: number, failedOnly: boolean) =>
  request<RerunResponse>(`/dags/instances/${runId}/rerun`, {
    method: 'POST',
    body: { failedOnly },
  });

// ---- Task instances ----

export const getTaskInstance = (id: number, o: Signal = {}) =>
  request<TaskInstanceDetail>(`/dags/task-instances/${id}`, o);
export const killTask = (id: number) =>
  request<KillResponse>(`/task-instances/${id}/kill`, { method: 'POST' });
export const clearTask = (id: number, body: ClearRequest) =>
  request<TaskResetResponse>(`/task-instances/${id}/clear`, { method: 'POST', body });
export const markTask = (id: number, body: MarkRequest) =>
  request<TaskResetResponse>(`/task-instances/${id}/mark`, { method: 'POST', body });

/** Where the stored log of an attempt is (also the download link). */
export const logUrl = (id: number, attempt: number) =>
  apiUrl(`/dags/task-instances/${id}/log`, { attempt });
export const getLog = (id: number, attempt: number, o: Signal = {}) =>
  requestText(`/dags/task-instances/${id}/log`, { ...o, query: { attempt } });
/** The live log of a running attempt (Server-Sent Events). */
export const logStreamUrl = (id: number, attempt: number) =>
  apiUrl(`/dags/task-instances/${id}/log/stream`, { attempt });

// ---- Schedules ----

export const listSchedules = (dagId: number, o: Signal = {}) =>
  request<Page<ScheduleDto>>(`/dags/${dagId}/schedules`, { ...o, query: { pageSize: 500 } });
export const createSchedule = (dagId: number, body: ScheduleBody) =>
  request<ScheduleDto>(`/dags/${dagId}/schedules`, { method: 'POST', body });
export const updateSchedule = (dagId: number, scheduleId: number, body: ScheduleBody) =>
  request<ScheduleDto>(`/dags/${dagId}/schedules/${scheduleId}`, { method: 'PUT', body });
export const deleteSchedule = (dagId: number, scheduleId: number) =>
  request<void>(`/dags/${dagId}/schedules/${scheduleId}`, { method: 'DELETE' });
export const setScheduleEnabled = (dagId: number, scheduleId: number, enabled: boolean) =>
  request<ScheduleDto>(
    `/dags/${dagId}/schedules/${scheduleId}/${enabled ? 'enable' : 'disable'}`,
    { method: 'POST' },
  );
export const validateCron = (body: ValidateCronRequest, o: Signal = {}) =>
  request<ValidateCronResponse>('/dags/schedule/validate-cron', { ...o, method: 'POST', body });
export const validateCondition = (body: ValidateConditionRequest, o: Signal = {}) =>
  request<ValidateConditionResponse>('/dags/validate-condition', { ...o, method: 'POST', body });

// ---- Runners, alerts, audit ----

export const listRunners = (o: Signal = {}) =>
  request<Page<RunnerDto>>('/runners', { ...o, query: { pageSize: 500 } });
export const listQueues = (o: Signal = {}) =>
  request<Page<QueueDto>>('/queues', { ...o, query: { pageSize: 500 } });
export const listAlerts = (dagId: number, page: number, pageSize: number, o: Signal = {}) =>
  request<Page<AlertDto>>(`/dags/${dagId}/alerts`, { ...o, query: { page, pageSize } });
export const listAudit = (page: number, pageSize: number, o: Signal = {}) =>
  request<Page<AuditDto>>('/audit', { ...o, query: { page, pageSize } });

// ---- Datasets ----

export const listDatasets = (o: Signal = {}) =>
  request<Page<DatasetDto>>('/datasets', { ...o, query: { pageSize: 500 } });
export const getDataset = (name: string, o: Signal = {}) =>
  request<DatasetDto>(`/datasets/${encodeURIComponent(name)}`, o);
export const listDatasetEvents = (
  name: string,
  q: { page: number; pageSize: number; partition?: string },
  o: Signal = {},
) => request<Page<DatasetEventDto>>(`/datasets/${encodeURIComponent(name)}/events`, { ...o, query: { ...q } });
export const announceDataset = (name: string, body: { partition?: string; metadata?: unknown }) =>
  request<AnnouncedDto>(`/datasets/${encodeURIComponent(name)}/events`, { method: 'POST', body });

// ---- The live stream ----

export const STREAM_URL = apiUrl('/stream');
