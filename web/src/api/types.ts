// The API's bodies, mirroring api/src/dto.rs (and the handlers' own DTOs).
// Kept in this one file: it is to be generated from the API's OpenAPI
// document later. JSON is camelCase; times are RFC 3339 strings, business
// dates `YYYY-MM-DD`.

/** Where a task instance is in its life (shared/src/status.rs). */
export type TaskStatus =
  | 'CREATED'
  | 'PENDING'
  | 'QUEUED'
  | 'RUNNING'
  | 'UP_FOR_RETRY'
  | 'SUCCESS'
  | 'FAILED'
  | 'TIMEOUT'
  | 'KILLED'
  | 'SKIPPED'
  | 'UPSTREAM_FAILED';

/** Where a DAG run is in its life. */
export type RunStatus = 'QUEUED' | 'RUNNING' | 'SUCCESS' | 'FAILED' | 'KILLED' | 'TIMEOUT';

export type Role = 'viewer' | 'operator' | 'admin';

export type TaskType = 'SHELL' | 'PYTHON' | 'SQL' | 'HTTP' | 'NOOP';

/** Every error answer. */
export interface ErrorBody {
  error: string;
  message: string;
  details?: string[];
}

/** One page of a list. */
export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  pageSize: number;
}

/** `GET /api/v1/session`. */
export interface SessionDto {
  name: string;
  role: Role;
  projectId: number | null;
  tokensRequired: boolean;
  expiresAt: string | null;
}

export type ScheduleKind = 'CRON' | 'EVENT' | 'AFTER';

/** A DAG's schedule. */
export interface ScheduleDto {
  dagId: number;
  scheduleId: number;
  name: string;
  kind: ScheduleKind;
  cronExpression: string | null;
  cronDescription: string | null;
  eventName: string | null;
  after?: string | null;
  enabled: boolean;
  nextFireTime: string | null;
  timezone: string;
  startDate: string | null;
  endDate: string | null;
  catchup: string;
  catchupLimit: number;
  misfireGrace: number;
  bizDateOffset: number;
  timeout?: number | null;
}

/** `POST/PUT /api/v1/dags/{dagId}/schedules[/{id}]` body. */
export interface ScheduleBody {
  name?: string;
  cronExpression?: string;
  eventName?: string;
  after?: string;
  enabled?: boolean;
  timezone?: string;
  startDate?: string;
  endDate?: string;
  catchup?: string;
  catchupLimit?: number;
  misfireGrace?: number;
  bizDateOffset?: number;
  timeout?: number;
}

export interface ValidateCronRequest {
  cronExpression: string;
  timezone?: string;
  count?: number;
}

export interface ValidateCronResponse {
  valid: boolean;
  description: string | null;
  nextFireTime: string | null;
  nextFireTimes?: string[];
  timezone: string;
  error?: string;
  warning?: string;
}

/** A run in a DAG list item's strip. */
export interface RecentRun {
  id: number;
  status: RunStatus;
  bizDate: string;
}

export type OverlapPolicy = 'skip' | 'wait' | 'parallel';

/** A DAG's headline fields. */
export interface DagSummary {
  id: number;
  name: string;
  description: string;
  projectId: number;
  owner: string | null;
  online: boolean;
  version: number;
  maxActiveRuns: number;
  overlap: OverlapPolicy;
  createdAt: string;
  updatedAt: string;
  sourceFile: string | null;
}

/** `GET /api/v1/dags` item: the summary with recent runs and schedules. */
export interface DagListItem extends DagSummary {
  recentRuns?: RecentRun[];
  schedules?: ScheduleDto[];
}

/** A task's dependency as a definition writes it. */
export type DependencyDef =
  | string
  | {
      task: string;
      type?: 'STRONG' | 'WEAK';
      offsetDay?: number;
      previousRun?: boolean;
    };

export interface RetryDef {
  max?: number;
  interval?: number;
  strategy?: 'FIXED' | 'EXPONENTIAL';
  onExitCodes?: number[];
  onTimeout?: boolean;
  maxInterval?: number;
  jitter?: number;
}

/** A task of a DAG definition (camelCase; `content` keys are as the file has them). */
export interface TaskDef {
  name: string;
  description?: string;
  type?: string;
  command?: string;
  script?: string;
  sql?: string;
  datasource?: string;
  content?: Record<string, unknown>;
  params?: Record<string, string>;
  priority?: number;
  retry?: RetryDef;
  timeout?: number;
  waitTimeout?: number;
  queueTimeout?: number;
  queue?: string;
  strategy?: 'ALL_SUCCESS' | 'ONE_SUCCESS' | 'NONE';
  enabled?: boolean;
  dependsOn?: DependencyDef[];
}

/** A schedule inside a DAG definition (`GET /api/v1/dags/{id}`). */
export interface ScheduleDef {
  name?: string;
  cronExpression?: string | null;
  eventName?: string;
  after?: string;
  timezone?: string;
  enabled?: boolean;
  [key: string]: unknown;
}

/** `GET /api/v1/dags/{dagId}`: the summary plus the whole definition. */
export interface DagDetail extends DagSummary {
  params?: Record<string, string>;
  schedules?: ScheduleDef[];
  tasks?: TaskDef[];
  queueTimeout?: number;
  runTimeout?: number;
  alerts?: unknown;
  [key: string]: unknown;
}

/** What an apply changed (`changes` on create/update answers). */
export interface ApplyReport {
  dagId: number;
  version: number;
  created: boolean;
  dagFields: string[];
  tasksAdded: string[];
  tasksChanged: string[];
  tasksRemoved: string[];
  schedulesAdded: string[];
  schedulesChanged: string[];
  schedulesRemoved: string[];
  notes: string[];
}

export interface DryRunResponse {
  dryRun: boolean;
  name: string;
  changes: ApplyReport;
}

/** A canvas edge: its target depends on its source. */
export interface Edge {
  source: string;
  target: string;
}

/** A task as `/tasks` and `/canvas` list it. */
export interface CanvasTask extends TaskDef {
  id: number;
  dagId: number;
  positionX: number | null;
  positionY: number | null;
  createdAt?: string;
  updatedAt?: string;
}

/** `GET /api/v1/dags/{dagId}/canvas`. */
export interface Canvas {
  dagId: number;
  version: number;
  tasks: CanvasTask[];
  edges: Edge[];
}

/** `POST /api/v1/dags/{dagId}/canvas` body. */
export interface CanvasSave {
  tasks: Array<TaskDef & { positionX?: number | null; positionY?: number | null }>;
  edges?: Edge[];
}

export interface TriggerRequest {
  params?: Record<string, string>;
  bizDate?: string;
}

export interface TriggerResponse {
  runKey: string;
  dagId: number;
  bizDate: string;
  statusUrl: string;
  instanceId?: number;
}

/** A DAG run ("DAG instance"). */
export interface RunDto {
  id: number;
  dagId: number;
  dagVersion: number;
  runKey: string;
  scheduleId: number | null;
  triggerType: string;
  bizDate: string;
  scheduleTime: string;
  status: RunStatus;
  runParams: Record<string, unknown> | null;
  startTime: string;
  endTime: string | null;
}

/** A task instance: one task in one run. */
export interface TaskInstanceDto {
  id: number;
  dagInstanceId: number;
  dagId: number;
  taskId: number;
  taskName: string;
  bizDate: string;
  triggerType: string;
  status: TaskStatus;
  attempts: number;
  retryCount: number;
  workerId: string | null;
  queue: string;
  priority: number;
  retryAt: string | null;
  errorMessage: string | null;
  queuedTime: string | null;
  startTime: string | null;
  endTime: string | null;
  outputs?: Record<string, string>;
}

export interface RunDetail extends RunDto {
  taskInstances: TaskInstanceDto[];
}

/** One attempt of a task instance. */
export interface ExecutionDto {
  id: number;
  attempt: number;
  status: TaskStatus;
  triggerType: string;
  workerId: string;
  startTime: string;
  endTime: string | null;
  durationMs: number | null;
  exitCode: number | null;
  errorMessage: string | null;
  logPath: string | null;
}

export interface TaskInstanceDetail extends TaskInstanceDto {
  executions: ExecutionDto[];
}

export interface KillResponse {
  id: number;
  status: string;
  killedTaskInstances: number[];
}

export interface RerunRequest {
  failedOnly?: boolean;
}

export interface RerunResponse {
  id: number;
  status: RunStatus;
  failedOnly: boolean;
  queuedTaskInstances: TaskInstanceDto[];
}

export interface ClearRequest {
  downstream?: boolean;
}

export interface MarkRequest {
  status: 'SUCCESS' | 'FAILED';
}

export interface TaskResetResponse {
  id: number;
  dagInstanceId: number;
  status: TaskStatus;
  queuedTaskInstances: TaskInstanceDto[];
}

export type Reprocess = 'none' | 'failed' | 'all';

export interface BackfillRequest {
  from: string;
  to: string;
  maxActiveRuns?: number;
  reprocess?: Reprocess;
}

export interface BackfillRun {
  bizDate: string;
  runKey: string;
  scheduleTime: string;
  statusUrl: string;
  reprocessed?: boolean;
}

export interface BackfillSkip {
  bizDate: string;
  reason: string;
  runId: number | null;
}

export interface BackfillResponse {
  dagId: number;
  /** True for a `?dryRun=true` answer: nothing was started. */
  dryRun?: boolean;
  runs: BackfillRun[];
  skipped: BackfillSkip[];
}

/** A live runner. */
export interface RunnerDto {
  id: string;
  queues: string[];
  slots: number;
  running: number;
  lastSeen: string | null;
}

export type AlertKind = 'run_failed' | 'task_failed' | 'timeout' | 'sla_miss' | 'test';
export type AlertState = 'PENDING' | 'SENDING' | 'SENT' | 'FAILED';

export interface AlertDto {
  id: number;
  kind: AlertKind;
  runId: number | null;
  taskInstanceId: number | null;
  webhook: string;
  status: AlertState;
  attempts: number;
  lastError: string | null;
  responseStatus: number | null;
  payload: unknown;
  createdAt: string;
  sentAt: string | null;
}

export interface AuditDto {
  id: number;
  at: string;
  actor: string;
  role: string;
  action: string;
  target: string;
  status: number;
  origin: string;
}

export interface ProjectDto {
  id: number;
  name: string;
  description: string;
  createdAt: string;
}

// ---- The grid (`GET /api/v1/dags/{dagId}/grid`) ----

export interface GridTaskDto {
  /** null: a task the DAG no longer has that shown runs ran. */
  id: number | null;
  name: string;
  /** null for a removed task. */
  taskType: string | null;
  upstream: string[];
}

/** `[taskInstanceId, status, attempts]`, or null: no instance of that task in that run. */
export type GridCellDto = [number, TaskStatus, number] | null;

export interface GridRunDto {
  id: number;
  runKey: string;
  bizDate: string;
  status: RunStatus;
  triggerType: string;
  dagVersion: number;
  startTime: string;
  endTime: string | null;
  cells: GridCellDto[];
}

export interface GridDto {
  dagId: number;
  tasks: GridTaskDto[];
  runs: GridRunDto[];
  hasMore: boolean;
}

// ---- The Gantt (`GET /api/v1/dags/instances/{id}/gantt`) ----

export interface GanttAttempt {
  taskInstanceId: number;
  taskName: string;
  attempt: number;
  status: TaskStatus;
  workerId: string;
  startTime: string;
  endTime: string | null;
}

export interface GanttDto {
  runId: number;
  startTime: string;
  endTime: string | null;
  attempts: GanttAttempt[];
}

// ---- The live stream (`GET /api/v1/stream`, Server-Sent Events) ----

/** `event: task`. */
export interface TaskEvent {
  id: number;
  runId: number;
  dagId: number;
  taskId: number;
  taskName: string;
  status: TaskStatus;
  attempts: number;
  startTime: string | null;
  endTime: string | null;
}

/** `event: run`. */
export interface RunEvent {
  id: number;
  dagId: number;
  status: RunStatus;
  bizDate: string;
  runKey: string;
  triggerType: string;
  startTime: string;
  endTime: string | null;
}

/** `event: end` of a log stream. */
export interface LogEndEvent {
  status: TaskStatus;
  attempt?: number;
}
