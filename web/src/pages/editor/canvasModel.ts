// The canvas editor's model, apart from React: tasks by node id, edges
// between node ids, the DAG's own settings, what Save sends, and which node
// an API error is about.

import i18next, { type TFunction } from 'i18next';
import { ApiError, errorMessage } from '../../api/client';
import type { CanvasSave, CanvasTask, DagDefinitionBody, DagDetail, DependencyDef, TaskDef } from '../../api/types';

export const TASK_TYPES = ['SHELL', 'PYTHON', 'SQL', 'HTTP', 'SPARK', 'FLINK', 'SENSOR', 'SWITCH'] as const;
export type EditorTaskType = (typeof TASK_TYPES)[number];

export interface EditorNode {
  id: string;
  task: TaskDef;
  position: { x: number; y: number };
}

/** STRONG: the child runs only if the parent succeeded; WEAK: once it has ended, whatever its result. */
export type EdgeType = 'STRONG' | 'WEAK';

export interface EditorEdge {
  source: string;
  target: string;
  /** Missing: STRONG. */
  type?: EdgeType;
}

/** A canvas edge's type as the API gives it (missing or anything but WEAK: STRONG). */
export function edgeTypeOf(edge: { type?: string | null }): EdgeType {
  return edge.type === 'WEAK' ? 'WEAK' : 'STRONG';
}

/**
 * The editor catalogue's `t`. A component passes its own, so that what it
 * memoizes follows the language; otherwise i18next's, taken at call time.
 */
export type EditorT = TFunction<'editor'>;
const editorT = (): EditorT => i18next.getFixedT(null, 'editor');

/** A problem, with the nodes (and edges) it is about; none: the DAG's. */
export interface Problem {
  message: string;
  nodeIds: string[];
  edgeIndexes?: number[];
  /** Found before saving, not by the API. */
  local?: boolean;
  /** About the DAG's settings (shown in their panel), not a task. */
  settings?: boolean;
}

/** Fields the API adds to a listed task that a definition does not take. */
const LISTED_ONLY = ['id', 'dagId', 'positionX', 'positionY', 'createdAt', 'updatedAt'] as const;

/** A listed (canvas) task as a definition task. */
export function taskOfListed(listed: CanvasTask): TaskDef {
  const task: Record<string, unknown> = { ...listed };
  for (const key of LISTED_ONLY) delete task[key];
  return task as unknown as TaskDef;
}

export function typeOf(task: TaskDef): EditorTaskType {
  const t = (task.type ?? 'SHELL').toUpperCase();
  return (TASK_TYPES as readonly string[]).includes(t) ? (t as EditorTaskType) : 'SHELL';
}

/** The field holding a task's main text: SHELL `command` (or `script`), PYTHON `script`, SQL `sql`. */
export function mainField(task: TaskDef): 'command' | 'script' | 'sql' | null {
  switch (typeOf(task)) {
    case 'SHELL':
      return task.script !== undefined && task.command === undefined ? 'script' : 'command';
    case 'PYTHON':
      return 'script';
    case 'SQL':
      return 'sql';
    default:
      return null;
  }
}

/** `task` as another type: its main text carried over, other types' fields dropped. */
export function changeType(task: TaskDef, type: EditorTaskType): TaskDef {
  if (typeOf(task) === type) return { ...task, type };
  const text = task.command ?? task.script ?? task.sql ?? '';
  const next: TaskDef = { ...task, type };
  delete next.command;
  delete next.script;
  delete next.sql;
  delete next.datasource;
  delete next.content;
  delete next.cases;
  delete next.default;
  if (type === 'SHELL') next.command = text;
  if (type === 'PYTHON') next.script = text;
  if (type === 'SQL') {
    next.sql = text;
    if (task.datasource) next.datasource = task.datasource;
  }
  if (type === 'HTTP') next.content = { url: /^https?:\/\//.test(text.trim()) ? text.trim() : '', method: 'GET' };
  // SQL text becomes Spark SQL; otherwise a Python file to fill in.
  if (type === 'SPARK') next.content = text.trim() && typeOf(task) === 'SQL' ? { sql: text } : { py_file: '' };
  if (type === 'FLINK') next.content = { py_file: '' };
  if (type === 'SENSOR') next.content = { dataset: '' };
  if (type === 'SWITCH') {
    next.cases = [{ when: '', then: [] }];
    // A SWITCH is never mapped (docs/DAG_FORMAT.md, "Map"): its choice is one.
    delete next.map;
  }
  return next;
}

/** The names of the tasks an edge from `nodeId` leads to: a SWITCH's possible branches. */
export function childrenOf(nodeId: string, nodes: EditorNode[], edges: EditorEdge[]): string[] {
  const names = new Map(nodes.map((n) => [n.id, n.task.name.trim()]));
  return edges
    .filter((e) => e.source === nodeId)
    .map((e) => names.get(e.target) ?? '')
    .filter(Boolean);
}

/**
 * What a SWITCH's edge to `child` is labelled: the cases that choose it
 * (1-based) and `default`; null for a child no case names.
 */
export function branchLabel(task: TaskDef, child: string, t: EditorT = editorT()): string | null {
  const cases = (task.cases ?? []).flatMap((c, i) => (c.then.includes(child) ? [i + 1] : []));
  const parts = cases.length ? [t('switch.edgeCases', { count: cases.length, cases: cases.join(', ') })] : [];
  if ((task.default ?? []).includes(child)) parts.push(t('switch.edgeDefault'));
  return parts.length ? parts.join(' · ') : null;
}

/** `task`'s SWITCH branches with `from` renamed `to`. */
export function renameBranch(task: TaskDef, from: string, to: string): TaskDef {
  if (typeOf(task) !== 'SWITCH' || !from) return task;
  const swap = (names: string[] | undefined) => names?.map((n) => (n === from ? to : n));
  return {
    ...task,
    cases: task.cases?.map((c) => ({ ...c, then: swap(c.then) ?? [] })),
    default: swap(task.default),
  };
}

/** Why a SWITCH's branches are not exactly its children, as the API would say before saving. */
function switchProblems(node: EditorNode, children: string[], t: EditorT): Problem[] {
  const name = node.task.name.trim() || '?';
  const named = new Set([...(node.task.cases ?? []).flatMap((c) => c.then), ...(node.task.default ?? [])]);
  const out: Problem[] = [];
  if (!(node.task.cases ?? []).length && !(node.task.default ?? []).length) {
    out.push({ message: t('problems.switch.empty', { name }), nodeIds: [node.id], local: true });
  }
  (node.task.cases ?? []).forEach((c, i) => {
    if (!c.when.trim()) out.push({ message: t('problems.switch.noCondition', { name, case: i + 1 }), nodeIds: [node.id], local: true });
  });
  for (const child of children) {
    if (!named.has(child)) out.push({ message: t('problems.switch.unnamedChild', { name, child }), nodeIds: [node.id], local: true });
  }
  for (const branch of named) {
    if (!children.includes(branch)) out.push({ message: t('problems.switch.notAChild', { name, branch }), nodeIds: [node.id], local: true });
  }
  return out;
}

/** What a SENSOR waits for: one of these keys of its content. */
export const SENSOR_CHECKS = ['dataset', 'sql', 'http', 'file', 'dag'] as const;
export type SensorCheck = (typeof SENSOR_CHECKS)[number];

/** The check a sensor's content holds (the first present), `dataset` when none. */
export function sensorCheck(content: Record<string, unknown>): SensorCheck {
  return SENSOR_CHECKS.find((k) => content[k] !== undefined) ?? 'dataset';
}

/** `content` checking `check` instead: the other checks' fields dropped, the waiting options kept. */
export function changeSensorCheck(content: Record<string, unknown>, check: SensorCheck): Record<string, unknown> {
  const next = { ...content };
  for (const k of [...SENSOR_CHECKS, 'datasource', 'task', 'offset_day', 'days']) delete next[k];
  next[check] = check === 'http' ? { url: '', method: 'GET' } : '';
  return next;
}

/** Why the check of the sensor task `name` is not filled in, or null. */
export function sensorCheckProblem(content: Record<string, unknown>, name: string, t: EditorT = editorT()): string | null {
  const check = sensorCheck(content);
  const text = (v: unknown) => String(v ?? '').trim();
  switch (check) {
    case 'http':
      return text((content.http as Record<string, unknown> | undefined)?.url) ? null : t('problems.sensor.noUrl', { name });
    case 'sql':
      if (!text(content.sql)) return t('problems.sensor.noSql', { name });
      return text(content.datasource) ? null : t('problems.sensor.noDatasource', { name });
    case 'dag':
      return text(content.dag) && text(content.task) ? null : t('problems.sensor.needsDagAndTask', { name });
    default:
      return text(content[check]) ? null : t('problems.sensor.noCheck', { name, field: check });
  }
}

/** A fresh task of `type` named `name`. */
export function newTask(name: string, type: EditorTaskType = 'SHELL'): TaskDef {
  return changeType({ name, type: 'SHELL', command: '' }, type);
}

/** `base`, or `base_2`, `base_3`… whichever no task has. */
export function uniqueName(base: string, taken: Iterable<string>): string {
  const names = new Set(taken);
  if (!names.has(base)) return base;
  for (let i = 2; ; i++) if (!names.has(`${base}_${i}`)) return `${base}_${i}`;
}

/** A cycle among `edges` (node ids in order, the first repeated), or null. */
export function findCycle(edges: EditorEdge[]): string[] | null {
  const children = new Map<string, string[]>();
  for (const e of edges) {
    children.set(e.source, [...(children.get(e.source) ?? []), e.target]);
    if (!children.has(e.target)) children.set(e.target, []);
  }
  const state = new Map<string, 1 | 2>();
  const path: string[] = [];
  const visit = (n: string): string[] | null => {
    state.set(n, 1);
    path.push(n);
    for (const c of children.get(n) ?? []) {
      if (state.get(c) === 1) return [...path.slice(path.indexOf(c)), c];
      if (!state.has(c)) {
        const found = visit(c);
        if (found) return found;
      }
    }
    path.pop();
    state.set(n, 2);
    return null;
  };
  for (const n of children.keys()) {
    if (!state.has(n)) {
      const found = visit(n);
      if (found) return found;
    }
  }
  return null;
}

/**
 * What a SPARK or FLINK task submits (its `jar`, `py_file` or, for SPARK,
 * `sql`), '' when none is filled in; null for other types.
 */
export function submittedApplication(task: TaskDef): string | null {
  const type = typeOf(task);
  if (type !== 'SPARK' && type !== 'FLINK') return null;
  const content = task.content ?? {};
  const keys = type === 'SPARK' ? ['jar', 'py_file', 'sql'] : ['jar', 'py_file'];
  return keys.map((k) => String(content[k] ?? '').trim()).find(Boolean) ?? '';
}

/** What can be told before asking the API: names, main text, cycles. */
export function localProblems(nodes: EditorNode[], edges: EditorEdge[], t: EditorT = editorT()): Problem[] {
  const out: Problem[] = [];
  const byName = new Map<string, string[]>();
  for (const n of nodes) {
    const name = n.task.name.trim();
    if (!name) out.push({ message: t('problems.noName'), nodeIds: [n.id], local: true });
    else byName.set(name, [...(byName.get(name) ?? []), n.id]);
    if (name.includes('/')) out.push({ message: t('problems.slashInName', { name }), nodeIds: [n.id], local: true });
    const shown = name || '?';
    const field = mainField(n.task);
    if (field && !(n.task[field] ?? '').trim()) {
      out.push({ message: t('problems.emptyField', { name: shown, field }), nodeIds: [n.id], local: true });
    }
    if (typeOf(n.task) === 'HTTP' && !String((n.task.content ?? {}).url ?? '').trim()) {
      out.push({ message: t('problems.emptyField', { name: shown, field: 'url' }), nodeIds: [n.id], local: true });
    }
    if (typeOf(n.task) === 'SENSOR') {
      const problem = sensorCheckProblem((n.task.content ?? {}) as Record<string, unknown>, shown, t);
      if (problem) out.push({ message: problem, nodeIds: [n.id], local: true });
    }
    if (typeOf(n.task) === 'SWITCH') out.push(...switchProblems(n, childrenOf(n.id, nodes, edges), t));
    const application = submittedApplication(n.task);
    if (application !== null && !application) {
      const message =
        typeOf(n.task) === 'SPARK' ? t('problems.sparkNothing', { name: shown }) : t('problems.flinkNothing', { name: shown });
      out.push({ message, nodeIds: [n.id], local: true });
    }
  }
  for (const [name, ids] of byName) {
    if (ids.length > 1) {
      out.push({ message: t('problems.duplicateName', { count: ids.length, name }), nodeIds: ids, local: true });
    }
  }
  const cycle = findCycle(edges);
  if (cycle) {
    const names = new Map(nodes.map((n) => [n.id, n.task.name]));
    out.push({
      message: t('problems.cycle', { path: cycle.map((id) => names.get(id) ?? id).join(' -> ') }),
      nodeIds: [...new Set(cycle)],
      local: true,
    });
  }
  return out;
}

const round = (n: number) => Math.round(n);

/**
 * The body of `POST /dags/{id}/canvas`: tasks with positions, edges by task
 * name, a WEAK edge with `type: 'WEAK'` (a STRONG one without, as the API
 * reads a missing type).
 */
export function canvasBody(nodes: EditorNode[], edges: EditorEdge[]): CanvasSave {
  const names = new Map(nodes.map((n) => [n.id, n.task.name.trim()]));
  return {
    tasks: nodes.map((n) => ({
      ...n.task,
      name: n.task.name.trim(),
      positionX: round(n.position.x),
      positionY: round(n.position.y),
    })),
    edges: edges
      .filter((e) => names.has(e.source) && names.has(e.target))
      .map((e) => ({
        source: names.get(e.source)!,
        target: names.get(e.target)!,
        ...(edgeTypeOf(e) === 'WEAK' ? { type: 'WEAK' as const } : {}),
      })),
  };
}

/** A row of the DAG's parameters as typed. */
export interface ParamRow {
  name: string;
  value: string;
}

/** What the DAG settings panel edits, as typed. */
export interface DagSettings {
  /** Set once, when the DAG is created: the API cannot rename a DAG. */
  name: string;
  description: string;
  owner: string;
  maxActiveRuns: string;
  /** '1'–'10', or '' for the highest priority of its root tasks. */
  priority: string;
  params: ParamRow[];
  /** Sent with a new DAG; an existing DAG's is switched on its own route. */
  online: boolean;
}

/** A DAG's parameters as rows, in their order. */
export function paramRows(params: Record<string, unknown> | undefined): ParamRow[] {
  return Object.entries(params ?? {}).map(([name, value]) => ({ name, value: String(value) }));
}

/** The settings of `dag` as stored, or a new DAG's defaults. */
export function settingsOf(dag: DagDetail | null): DagSettings {
  return {
    name: dag?.name ?? '',
    description: dag?.description ?? '',
    owner: dag?.owner ?? '',
    maxActiveRuns: String(dag?.maxActiveRuns ?? 1),
    priority: dag?.priority == null ? '' : String(dag.priority),
    params: paramRows(dag?.params),
    online: dag?.online ?? true,
  };
}

/** How many rows have each (trimmed) name. */
function nameCounts(rows: ParamRow[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.name.trim(), (counts.get(r.name.trim()) ?? 0) + 1);
  return counts;
}

/** Each row's problem, or null: a name left empty, or given twice. */
export function paramErrors(rows: ParamRow[], t: EditorT = editorT()): Array<string | null> {
  const counts = nameCounts(rows);
  return rows.map((r) => {
    const name = r.name.trim();
    if (!name) return t('problems.param.needsName');
    return counts.get(name)! > 1 ? t('problems.param.nameTaken', { name }) : null;
  });
}

/** Whether max active runs, as typed, is a whole number of at least 1. */
export function maxActiveRunsOk(text: string): boolean {
  return /^\d+$/.test(text.trim()) && Number(text) >= 1;
}

/** What keeps the settings from being saved. */
export function settingsProblems(settings: DagSettings, t: EditorT = editorT()): Problem[] {
  const messages: string[] = [];
  if (!maxActiveRunsOk(settings.maxActiveRuns)) messages.push(t('problems.settings.maxActiveRuns'));
  for (const [name, count] of nameCounts(settings.params)) {
    if (!name) messages.push(t('problems.settings.paramsWithoutName', { count }));
    else if (count > 1) messages.push(t('problems.settings.paramsNamed', { count, name }));
  }
  return messages.map((message) => ({ message, nodeIds: [], local: true, settings: true }));
}

/**
 * The parameters to send, each value as typed: the API keeps parameters as
 * text (`${name}` substitutes it). The rows must have no `paramErrors`.
 */
export function paramsOf(rows: ParamRow[]): Record<string, string> {
  return Object.fromEntries(rows.map((r) => [r.name.trim(), r.value]));
}

/**
 * The settings as `PUT /dags/{id}` takes them, every field given so that a
 * cleared one is cleared; the settings must have no `settingsProblems`.
 */
export function settingsBody(
  settings: DagSettings,
): Required<Pick<DagDefinitionBody, 'description' | 'owner' | 'maxActiveRuns' | 'priority' | 'params'>> {
  return {
    description: settings.description.trim(),
    owner: settings.owner.trim() || null,
    maxActiveRuns: Number(settings.maxActiveRuns.trim()),
    priority: settings.priority === '' ? null : Number(settings.priority),
    params: paramsOf(settings.params),
  };
}

/** A new DAG's definition: its settings and tasks, each edge a `dependsOn` of its target (typed when WEAK). */
export function definitionBody(settings: DagSettings, nodes: EditorNode[], edges: EditorEdge[]): DagDefinitionBody {
  const names = new Map(nodes.map((n) => [n.id, n.task.name.trim()]));
  const tasks = nodes.map((n) => {
    const parents: DependencyDef[] = edges
      .filter((e) => e.target === n.id && names.has(e.source))
      .map((e) => (edgeTypeOf(e) === 'WEAK' ? { task: names.get(e.source)!, type: 'WEAK' as const } : names.get(e.source)!));
    const dependsOn = [...(n.task.dependsOn ?? []), ...parents];
    const task: TaskDef = { ...n.task, name: n.task.name.trim() };
    if (dependsOn.length) task.dependsOn = dependsOn;
    else delete task.dependsOn;
    return task;
  });
  return { name: settings.name.trim(), ...settingsBody(settings), online: settings.online, tasks };
}

/**
 * The problems in an API error answer to a save, each tied to the nodes it
 * names: `tasks[i]` (in the order sent), `task 'name'`, `edges[i]`, a
 * named cycle, or `no task 'x'`.
 */
export function apiProblems(error: unknown, nodes: EditorNode[], edges: EditorEdge[]): Problem[] {
  // Matched in the server's English, which names tasks and fields the
  // same way in every problem; shown in the reader's words.
  const messages =
    error instanceof ApiError && error.details.length > 0 ? error.details : [errorMessage(error)];
  const said = error instanceof ApiError && error.details.length > 0 ? error.saidDetails() : messages;
  const byName = new Map<string, string[]>();
  for (const n of nodes) byName.set(n.task.name.trim(), [...(byName.get(n.task.name.trim()) ?? []), n.id]);
  return messages.map((message, index) => {
    const ids = new Set<string>();
    const edgeIndexes: number[] = [];
    for (const m of message.matchAll(/tasks\[(\d+)\]/g)) {
      const node = nodes[Number(m[1])];
      if (node) ids.add(node.id);
    }
    for (const m of message.matchAll(/task '([^']+)'/g)) {
      for (const id of byName.get(m[1]!) ?? []) ids.add(id);
    }
    for (const m of message.matchAll(/edges\[(\d+)\]/g)) {
      const i = Number(m[1]);
      const edge = edges[i];
      if (edge) {
        edgeIndexes.push(i);
        ids.add(edge.source);
        ids.add(edge.target);
      }
    }
    const cycle = /cycle(?: detected)?: ([^;]+)/.exec(message);
    if (cycle) {
      for (const name of cycle[1]!.split('->').map((s) => s.trim())) {
        for (const id of byName.get(name) ?? []) ids.add(id);
      }
    }
    return { message: said[index] ?? message, nodeIds: [...ids], ...(edgeIndexes.length ? { edgeIndexes } : {}) };
  });
}
