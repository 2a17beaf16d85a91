// The API's bodies. Every type the API's OpenAPI document describes comes
// from schema.d.ts, generated from that document (scripts/api-types.sh, which
// scripts/test.sh runs with --check), so these names are aliases of the Rust
// types' schemas. Written here are only what the document leaves open: a DAG
// definition's own fields (docs/DAG_FORMAT.md) and the generic page. JSON is
// camelCase; times are RFC 3339 strings, business dates `YYYY-MM-DD`.

import type { components } from './schema';

type Schemas = components['schemas'];

/** Where a task instance is in its life (shared/src/status.rs). */
export type TaskStatus = Schemas['TaskStatus'];

/** Where a DAG run is in its life. */
export type RunStatus = Schemas['RunStatus'];

export type Role = Schemas['Role'];

export type TaskType = 'SHELL' | 'PYTHON' | 'SQL' | 'HTTP' | 'SPARK' | 'FLINK' | 'SENSOR' | 'SWITCH' | 'NOOP';

/** Every error answer. */
export type ErrorBody = Schemas['ErrorBody'];

/** One page of a list. */
export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  pageSize: number;
}

/** `GET /api/v1/session`. */
export type SessionDto = Schemas['SessionDto'];

export type ScheduleKind = Schemas['ScheduleKind'];

/** A DAG's schedule. */
export type ScheduleDto = Schemas['ScheduleDto'];

/** `POST/PUT /api/v1/dags/{dagId}/schedules[/{id}]` body. */
export type ScheduleBody = Schemas['ScheduleBody'];

export type ValidateCronRequest = Schemas['ValidateCronRequest'];

export type ValidateCronResponse = Schemas['ValidateCronResponse'];

export type ValidateConditionRequest = Schemas['ValidateConditionRequest'];

export type ValidateConditionResponse = Schemas['ValidateConditionResponse'];

/** A run in a DAG list item's strip. */
export type RecentRun = Schemas['RecentRun'];

export type OverlapPolicy = Schemas['OverlapPolicy'];

/** A DAG's headline fields. */
export type DagSummary = Schemas['DagSummary'];

/** `GET /api/v1/dags` item: the summary with recent runs and schedules. */
export type DagListItem = Schemas['DagListItem'];

/** `POST /api/v1/dags` body: a definition as a request takes it (defaults optional). */
export type DagDefinitionBody = Schemas['DagDefinition'];

/** `PUT /api/v1/dags/{dagId}` body: the fields to change, the others kept. */
export type DagDefinitionChanges = Schemas['DagDefinitionChanges'];

/** A task of a DAG definition as a request takes it (`content` keys are as the file has them). */
export type TaskDef = NonNullable<DagDefinitionBody['tasks']>[number];

/** A schedule inside a DAG definition as a request takes it. */
export type ScheduleDef = NonNullable<DagDefinitionBody['schedules']>[number];

/** A task's retry policy. */
export type RetryDef = NonNullable<TaskDef['retry']>;

/** A mapped task's list and limits (docs/DAG_FORMAT.md, "Map"). */
export type MapDef = NonNullable<TaskDef['map']>;

/** One case of a SWITCH task: a CEL condition and the children it runs. */
export type SwitchCaseDef = NonNullable<TaskDef['cases']>[number];

/** A task's dependency as a definition writes it. */
export type DependencyDef = NonNullable<TaskDef['dependsOn']>[number];

/** `GET /api/v1/dags/{dagId}`: the summary plus the whole definition. */
export type DagDetail = Schemas['DagDetail'];

/** What an apply changed (`changes` on create/update answers). */
export type ApplyReport = Schemas['ApplyReport'];

/** The answer to a `?dryRun=true` create or update: what would change, nothing stored. */
export type DryRunResponse = Schemas['DryRunResponse'];

/** A canvas edge: its target depends on its source. */
export type Edge = Schemas['Edge'];

/** A task as `/tasks` and `/canvas` list it: its definition, id, DAG, position and times. */
export type CanvasTask = Schemas['TaskItem'];

/** `GET /api/v1/dags/{dagId}/canvas`. */
export type Canvas = Schemas['Canvas'];

/** `POST /api/v1/dags/{dagId}/canvas` body. */
export type CanvasSave = Schemas['CanvasSave'];

/** `GET /api/v1/dags/{dagId}/graph`: every dependency, with stubs for what lies outside the DAG. */
export type Graph = Schemas['Graph'];

export type GraphNode = Schemas['GraphNode'];

export type GraphEdge = Schemas['GraphEdge'];

export type NodeKind = Schemas['NodeKind'];

export type EdgeKind = Schemas['EdgeKind'];

/** A problem's stable code and the values its English words name. */
export type Problem = Schemas['Problem'];

export type TriggerRequest = Schemas['TriggerRequest'];

export type TriggerResponse = Schemas['TriggerResponse'];

/** A DAG run ("DAG instance"). */
export type RunDto = Schemas['RunDto'];

/** A task instance: one task in one run. */
export type TaskInstanceDto = Schemas['TaskInstanceDto'];

export type RunDetail = Schemas['RunDetail'];

/** One attempt of a task instance. */
export type ExecutionDto = Schemas['ExecutionDto'];

export type TaskInstanceDetail = Schemas['TaskInstanceDetail'];

export type KillResponse = Schemas['KillResponse'];

export type RerunRequest = Schemas['RerunRequest'];

export type RerunResponse = Schemas['RerunResponse'];

export type ClearRequest = Schemas['ClearRequest'];

export type MarkRequest = Schemas['MarkRequest'];

export type TaskResetResponse = Schemas['TaskResetResponse'];

export type Reprocess = Schemas['Reprocess'];

export type BackfillRequest = Schemas['BackfillRequest'];

export type BackfillRun = Schemas['BackfillRun'];

export type BackfillSkip = Schemas['BackfillSkip'];

export type BackfillResponse = Schemas['BackfillResponse'];

/** A live runner. */
export type RunnerDto = Schemas['RunnerDto'];
export type QueueDto = Schemas['QueueDto'];
export type BandBacklog = Schemas['BandBacklog'];

export type AlertKind = Schemas['AlertKind'];
export type AlertState = Schemas['AlertState'];

export type AlertDto = Schemas['AlertDto'];

export type AuditDto = Schemas['AuditDto'];

export type ProjectDto = Schemas['ProjectDto'];

// ---- The grid (`GET /api/v1/dags/{dagId}/grid`) ----

export type GridTaskDto = Schemas['GridTask'];

/** `[taskInstanceId, status, attempts]`, or null: no instance of that task in that run. */
export type GridCellDto = [number, TaskStatus, number] | null;

export type GridRunDto = Schemas['GridRun'];
/** A mapped task's cell in a grid run: its items and those that failed. */
export type GridMapDto = Schemas['GridMap'];

export type GridDto = Schemas['Grid'];

// ---- The Gantt (`GET /api/v1/dags/instances/{id}/gantt`) ----

export type GanttAttempt = Schemas['GanttBar'];

export type GanttDto = Schemas['Gantt'];

// ---- The live stream (`GET /api/v1/stream`, Server-Sent Events) ----

/** `event: task`. */
export type TaskEvent = Schemas['TaskChange'];

/** `event: run`. */
export type RunEvent = Schemas['RunChange'];

/** `event: end` of a log stream. */
export type LogEndEvent = Schemas['LogEnd'];

/** What a data schedule waits for: a dataset, or all or any of conditions. */
export type Condition = Schemas['Condition'];

/** A dataset, with the tasks that write it and the schedules that wait for it. */
export type DatasetDto = Schemas['DatasetDto'];

/** A dataset (or partition) written. */
export type DatasetEventDto = Schemas['DatasetEventDto'];

/** What an announcement recorded and started. */
export type AnnouncedDto = Schemas['AnnouncedDto'];
