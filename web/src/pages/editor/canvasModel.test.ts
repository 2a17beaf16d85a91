import { describe, expect, it } from 'vitest';
import { ApiError } from '../../api/client';
import {
  apiProblems,
  branchLabel,
  canvasBody,
  changeSensorCheck,
  changeType,
  definitionBody,
  edgeTypeOf,
  findCycle,
  localProblems,
  newTask,
  paramErrors,
  paramRows,
  paramsOf,
  renameBranch,
  sensorCheck,
  settingsBody,
  settingsOf,
  settingsProblems,
  taskOfListed,
  uniqueName,
  type DagSettings,
  type EditorNode,
} from './canvasModel';
import type { DagDetail, TaskDef } from '../../api/types';

const node = (id: string, name: string, x = 0): EditorNode => ({
  id,
  task: { name, type: 'SHELL', command: `echo ${name}` },
  position: { x, y: 10.4 },
});

describe('the canvas model', () => {
  const nodes = [node('n1', 'extract'), node('n2', 'load', 200.6)];
  const edges = [{ source: 'n1', target: 'n2' }];

  it('saves positions and edges by task name', () => {
    const body = canvasBody(nodes, edges);
    expect(body.edges).toEqual([{ source: 'extract', target: 'load' }]);
    expect(body.tasks[1]).toMatchObject({ name: 'load', positionX: 201, positionY: 10 });
  });

  it('keeps a WEAK edge WEAK when saving, a STRONG one untyped', () => {
    const three = [...nodes, node('n3', 'audit')];
    const typed = [
      { source: 'n1', target: 'n2', type: edgeTypeOf({ type: 'STRONG' }) },
      { source: 'n3', target: 'n2', type: edgeTypeOf({ type: 'WEAK' }) },
    ];
    expect(canvasBody(three, typed).edges).toEqual([
      { source: 'extract', target: 'load' },
      { source: 'audit', target: 'load', type: 'WEAK' },
    ]);
    const def = definitionBody({ ...settingsOf(null), name: 'd' }, three, typed);
    const load = (def.tasks as TaskDef[]).find((t) => t.name === 'load')!;
    expect(load.dependsOn).toEqual(['extract', { task: 'audit', type: 'WEAK' }]);
  });

  it('reads a canvas edge without a type, or with another, as STRONG', () => {
    expect(edgeTypeOf({})).toBe('STRONG');
    expect(edgeTypeOf({ type: null })).toBe('STRONG');
    expect(edgeTypeOf({ type: 'STRONG' })).toBe('STRONG');
    expect(edgeTypeOf({ type: 'WEAK' })).toBe('WEAK');
  });

  it('writes a new DAG with its settings and edges as dependsOn', () => {
    const settings: DagSettings = {
      ...settingsOf(null),
      name: ' d ',
      owner: 'team',
      maxActiveRuns: '3',
      params: [{ name: 'env', value: 'prod' }],
      online: false,
    };
    const def = definitionBody(settings, nodes, edges);
    expect(def.name).toBe('d');
    expect(def).toMatchObject({ owner: 'team', maxActiveRuns: 3, params: { env: 'prod' }, online: false });
    const tasks = def.tasks as Array<{ name: string; dependsOn?: unknown[] }>;
    expect(tasks[0]!.dependsOn).toBeUndefined();
    expect(tasks[1]!.dependsOn).toEqual(['extract']);
  });

  it('changes a task type keeping its text', () => {
    const py = changeType({ name: 'a', type: 'SHELL', command: 'print(1)' }, 'PYTHON');
    expect(py).toEqual({ name: 'a', type: 'PYTHON', script: 'print(1)' });
    const http = changeType(py, 'HTTP');
    expect(http.content).toEqual({ url: '', method: 'GET' });
    expect(http.script).toBeUndefined();
    expect(newTask('x', 'SQL')).toEqual({ name: 'x', type: 'SQL', sql: '' });
    const spark = changeType({ name: 'r', type: 'SQL', sql: 'select 1', datasource: 'dw' }, 'SPARK');
    expect(spark).toEqual({ name: 'r', type: 'SPARK', content: { sql: 'select 1' } });
    expect(changeType(py, 'FLINK').content).toEqual({ py_file: '' });
    // A SWITCH is never mapped; other types keep their map.
    const mapped: TaskDef = { name: 'm', type: 'SHELL', command: 'true', map: { over: ['a'] } };
    expect(changeType(mapped, 'PYTHON').map).toEqual({ over: ['a'] });
    expect(changeType(mapped, 'SWITCH').map).toBeUndefined();
  });

  it('flags a SPARK or FLINK task that submits nothing', () => {
    const node = (task: TaskDef) => ({ id: task.name, task, position: { x: 0, y: 0 } });
    const problems = localProblems(
      [
        node({ name: 'empty', type: 'SPARK', content: { py_file: ' ', master: 'yarn' } }),
        node({ name: 'jar', type: 'FLINK', content: { jar: 'stream.jar' } }),
        node({ name: 'nothing', type: 'FLINK' }),
      ],
      [],
    );
    expect(problems.map((p) => p.message)).toEqual([
      "task 'empty': jar, py_file or sql is empty",
      "task 'nothing': jar or py_file is empty",
    ]);
  });

  it('keeps one kind of check in a SENSOR and flags one left empty', () => {
    const sensor = changeType({ name: 's', type: 'SHELL', command: 'true' }, 'SENSOR');
    expect(sensor).toEqual({ name: 's', type: 'SENSOR', content: { dataset: '' } });
    const waiting = { ...sensor.content, poke_interval: 30, mode: 'poke' } as Record<string, unknown>;
    const sql = changeSensorCheck({ ...waiting, dataset: 'ods.orders' }, 'sql');
    expect(sql).toEqual({ sql: '', poke_interval: 30, mode: 'poke' });
    expect(sensorCheck(sql)).toBe('sql');
    expect(sensorCheck(changeSensorCheck(sql, 'http'))).toBe('http');
    const node = (task: TaskDef) => ({ id: task.name, task, position: { x: 0, y: 0 } });
    const problems = localProblems(
      [
        node(sensor),
        node({ name: 'q', type: 'SENSOR', content: { sql: 'select 1' } }),
        node({ name: 'd', type: 'SENSOR', content: { dag: 'ods', task: ' ' } }),
        node({ name: 'u', type: 'SENSOR', content: { http: { url: '' } } }),
        node({ name: 'ok', type: 'SENSOR', content: { file: '/in/${bizdate}/*.csv' } }),
      ],
      [],
    );
    expect(problems.map((p) => p.message)).toEqual([
      "task 's': the sensor has no dataset",
      "task 'q': the sensor sql has no datasource",
      "task 'd': the sensor needs a dag and a task",
      "task 'u': the sensor has no url",
    ]);
  });

  it('drops listing-only fields', () => {
    const t = taskOfListed({ id: 3, dagId: 1, name: 'a', positionX: 1, positionY: 2, createdAt: 'x', updatedAt: 'y', command: 'true' });
    expect(t).toEqual({ name: 'a', command: 'true' });
  });

  it('names new tasks uniquely', () => {
    expect(uniqueName('task', [])).toBe('task');
    expect(uniqueName('task', ['task', 'task_2'])).toBe('task_3');
  });

  it('finds cycles and other problems before saving', () => {
    expect(findCycle(edges)).toBeNull();
    expect(findCycle([...edges, { source: 'n2', target: 'n1' }])).toEqual(['n1', 'n2', 'n1']);
    const problems = localProblems(
      [...nodes, { ...node('n3', 'load'), task: { name: 'load', type: 'SHELL', command: '' } }],
      [...edges, { source: 'n2', target: 'n1' }],
    );
    const text = problems.map((p) => p.message);
    expect(text).toContain("task 'load': command is empty");
    expect(text).toContain("2 tasks are named 'load'");
    expect(text).toContain('cycle: extract -> load -> extract');
  });

  it('ties API errors to the nodes they name', () => {
    const err = new ApiError(400, 'BAD_REQUEST', "DAG 'd' is invalid", [
      'tasks[1]: unknown field `comand`: did you mean `command`?',
      "task 'extract': depends on unknown task 'x'",
      "schedule 'nightly': invalid cron expression",
    ]);
    const problems = apiProblems(err, nodes, edges);
    expect(problems[0]!.nodeIds).toEqual(['n2']);
    expect(problems[1]!.nodeIds).toEqual(['n1']);
    expect(problems[2]!.nodeIds).toEqual([]);
    const cycle = apiProblems(new ApiError(400, 'BAD_REQUEST', 'invalid field `edges`: cycle detected: extract -> load -> extract'), nodes, edges);
    expect(cycle[0]!.nodeIds.sort()).toEqual(['n1', 'n2']);
    const edge = apiProblems(new ApiError(400, 'BAD_REQUEST', "invalid field `edges[0].target`: no task 'zz' on the canvas"), nodes, edges);
    expect(edge[0]!.edgeIndexes).toEqual([0]);
  });

  it('shows a coded API problem in the reader’s words, tied by its English', () => {
    const err = new ApiError(
      400,
      'BAD_REQUEST',
      "DAG 'd' is invalid",
      ["task 'extract': depends on unknown task 'x'", 'task \'load\': something only said in English'],
      null,
      [{ code: 'dag.unknown_dependency', params: { task: 'extract', parent: 'x' } }, null],
    );
    const problems = apiProblems(err, nodes, edges);
    expect(problems[0]).toMatchObject({
      message: "Task 'extract': depends on 'x', which is not a task of this DAG.",
      nodeIds: ['n1'],
    });
    expect(problems[1]).toMatchObject({ message: "task 'load': something only said in English", nodeIds: ['n2'] });
  });

  it('finds empty and duplicate parameter names', () => {
    const rows = [
      { name: 'env', value: 'prod' },
      { name: ' env ', value: 'dev' },
      { name: '', value: 'x' },
      { name: 'batch', value: '10' },
    ];
    expect(paramErrors(rows)).toEqual([
      "another parameter is named 'env'",
      "another parameter is named 'env'",
      'the parameter needs a name',
      null,
    ]);
    const problems = settingsProblems({ ...settingsOf(null), params: rows, maxActiveRuns: '0' });
    expect(problems.map((p) => p.message)).toEqual([
      'max active runs must be a whole number, at least 1',
      "2 parameters are named 'env'",
      'a parameter has no name',
    ]);
    expect(problems.every((p) => p.settings && p.nodeIds.length === 0)).toBe(true);
    expect(settingsProblems({ ...settingsOf(null), params: rows.slice(3), maxActiveRuns: ' 2 ' })).toEqual([]);
    expect(settingsProblems({ ...settingsOf(null), maxActiveRuns: '1.5' })).toHaveLength(1);
    expect(settingsProblems({ ...settingsOf(null), maxActiveRuns: '' })).toHaveLength(1);
  });

  it("loads a DAG's settings and sends them back unchanged", () => {
    const dag = {
      name: 'd',
      description: 'nightly',
      owner: null,
      maxActiveRuns: 2,
      online: false,
      params: { env: 'prod', batch: '10', flag: 'true', code: '007' },
    } as Partial<DagDetail> as DagDetail;
    const settings = settingsOf(dag);
    expect(settings).toMatchObject({ description: 'nightly', owner: '', maxActiveRuns: '2', online: false });
    expect(settings.params).toEqual([
      { name: 'env', value: 'prod' },
      { name: 'batch', value: '10' },
      { name: 'flag', value: 'true' },
      { name: 'code', value: '007' },
    ]);
    const params = paramsOf(settings.params);
    expect(params).toEqual({ env: 'prod', batch: '10', flag: 'true', code: '007' });
    expect(paramRows(params)).toEqual(settings.params);
    expect(settingsBody(settings)).toEqual({ description: 'nightly', owner: null, maxActiveRuns: 2, priority: null, params });
    expect(settingsOf(null)).toEqual({ name: '', description: '', owner: '', maxActiveRuns: '1', priority: '', params: [], online: true });
  });

  it("keeps a DAG's own priority, and sends none to take its first tasks'", () => {
    const dag = { name: 'd', maxActiveRuns: 1, priority: 8, params: {} } as Partial<DagDetail> as DagDetail;
    const settings = settingsOf(dag);
    expect(settings.priority).toBe('8');
    expect(settingsBody(settings)).toMatchObject({ priority: 8 });
    expect(settingsBody({ ...settings, priority: '' })).toMatchObject({ priority: null });
  });
});

describe('SWITCH tasks', () => {
  const route = (task: Partial<TaskDef>): EditorNode => ({
    id: 's',
    task: { name: 'route', type: 'SWITCH', ...task },
    position: { x: 0, y: 0 },
  });
  const children = [node('a', 'load'), node('b', 'notice')];
  const edges = [
    { source: 's', target: 'a' },
    { source: 's', target: 'b' },
  ];

  it('starts with one empty case and drops its cases when it becomes another type', () => {
    const fresh = newTask('route', 'SWITCH');
    expect(fresh.cases).toEqual([{ when: '', then: [] }]);
    const shell = changeType({ ...fresh, default: ['x'] }, 'SHELL');
    expect(shell.cases).toBeUndefined();
    expect(shell.default).toBeUndefined();
  });

  it('says which branches are not exactly its children before the API does', () => {
    const task = route({ cases: [{ when: '', then: ['load', 'ghost'] }] });
    const messages = localProblems([task, ...children], edges).map((p) => p.message);
    expect(messages).toEqual([
      "task 'route': case 1 has no condition",
      "task 'route': 'notice' depends on it but no case and not the default runs it",
      "task 'route': 'ghost' is a branch but does not depend on it: draw an edge to it",
    ]);
    const whole = route({ cases: [{ when: 'true', then: ['load'] }], default: ['notice'] });
    expect(localProblems([whole, ...children], edges)).toEqual([]);
  });

  it('labels each edge with the cases that choose it and keeps a renamed child chosen', () => {
    const task: TaskDef = {
      name: 'route',
      type: 'SWITCH',
      cases: [
        { when: 'a', then: ['load'] },
        { when: 'b', then: ['load', 'notice'] },
      ],
      default: ['notice'],
    };
    expect(branchLabel(task, 'load')).toBe('cases 1, 2');
    expect(branchLabel(task, 'notice')).toBe('case 2 · default');
    expect(branchLabel(task, 'other')).toBeNull();
    const renamed = renameBranch(task, 'notice', 'no_data_notice');
    expect(renamed.cases?.[1]?.then).toEqual(['load', 'no_data_notice']);
    expect(renamed.default).toEqual(['no_data_notice']);
    expect(renameBranch(children[0]!.task, 'load', 'x')).toBe(children[0]!.task);
  });
});
