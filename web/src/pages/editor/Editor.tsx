// The canvas editor: tasks as nodes, dependencies as edges drawn between
// handles, a side panel for the selected task (or the DAG's settings), and
// Save.

import { memo, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import { Link, useNavigate } from 'react-router';
import {
  addEdge,
  Background,
  Controls,
  Handle,
  MarkerType,
  Position,
  ReactFlow,
  ReactFlowProvider,
  useEdgesState,
  useNodesState,
  useReactFlow,
  type Connection,
  type Edge as FlowEdge,
  type Node,
  type NodeProps,
} from '@xyflow/react';
import { createDag, saveCanvas, updateDag } from '../../api/endpoints';
import type { Canvas, DagDetail, TaskDef } from '../../api/types';
import { layoutDag, NODE_HEIGHT, NODE_WIDTH, positionsFor } from '../../lib/layout';
import {
  apiProblems,
  branchLabel,
  canvasBody,
  childrenOf,
  definitionBody,
  edgeTypeOf,
  localProblems,
  newTask,
  renameBranch,
  settingsBody,
  settingsOf,
  settingsProblems,
  taskOfListed,
  typeOf,
  uniqueName,
  type DagSettings,
  type EdgeType,
  type EditorEdge,
  type EditorNode,
  type Problem,
} from './canvasModel';
import { edgeLabel, flowLabels } from '../../components/flowLabels';
import { DagSettingsPanel } from './DagSettingsPanel';
import { TaskPanel } from './TaskPanel';

type NodeData = { task: TaskDef; flagged: boolean };
type TaskNode = Node<NodeData, 'edit'>;
type DependencyEdge = FlowEdge<{ type: EdgeType }>;

const TYPE_COLOR: Record<string, string> = {
  SHELL: '#475569',
  PYTHON: '#2563eb',
  SQL: '#7c3aed',
  HTTP: '#0f766e',
  SPARK: '#c2410c',
  FLINK: '#be185d',
  SENSOR: '#a16207',
  SWITCH: '#0369a1',
};

const EditNode = memo(function EditNode({ data, selected }: NodeProps<TaskNode>) {
  const { t } = useTranslation('editor');
  const type = typeOf(data.task);
  return (
    <div
      className={`enode${selected ? ' selected' : ''}${data.flagged ? ' flagged' : ''}${data.task.map ? ' enode-mapped' : ''}`}
      data-testid="canvas-node"
      data-task={data.task.name}
    >
      <Handle type="target" position={Position.Left} className="ehandle" />
      <span className="enode-type" style={{ background: TYPE_COLOR[type] }} translate="no">
        {type}
      </span>
      {data.task.name ? (
        <span className="enode-name" translate="no">
          {data.task.name}
        </span>
      ) : (
        <span className="enode-name">
          <em className="muted">{t('node.unnamed')}</em>
        </span>
      )}
      {data.task.strategy && data.task.strategy !== 'ALL_SUCCESS' && (
        <span className="enode-strategy" title={t('node.strategy', { strategy: data.task.strategy })} translate="no" data-testid="node-strategy">
          {data.task.strategy}
        </span>
      )}
      {data.task.map && (
        <span
          className="enode-strategy"
          title={t('node.mapped', { over: typeof data.task.map.over === 'string' ? data.task.map.over : JSON.stringify(data.task.map.over) })}
          translate="no"
          data-testid="node-map"
        >
          map
        </span>
      )}
      {data.flagged && (
        <span className="enode-flag" title={t('node.seeProblems')}>
          !
        </span>
      )}
      <Handle type="source" position={Position.Right} className="ehandle" />
    </div>
  );
});

const nodeTypes = { edit: EditNode };
const branchLabelStyle = { fontSize: 11, fill: '#0369a1', fontWeight: 600 };
const marker = { type: MarkerType.ArrowClosed, color: '#64748b', width: 16, height: 16 };
const edgeId = (source: string, target: string) => `e:${source}->${target}`;

function initialGraph(canvas: Canvas | null): { nodes: TaskNode[]; edges: DependencyEdge[] } {
  if (!canvas) return { nodes: [], edges: [] };
  const idOf = new Map(canvas.tasks.map((t) => [t.name, `t${t.id}`]));
  const positions = positionsFor(
    canvas.tasks.map((t) => ({
      id: `t${t.id}`,
      saved:
        t.positionX !== null && t.positionX !== undefined && t.positionY !== null && t.positionY !== undefined
          ? { x: t.positionX, y: t.positionY }
          : null,
    })),
    canvas.edges.map((e) => ({ source: idOf.get(e.source) ?? e.source, target: idOf.get(e.target) ?? e.target })),
  );
  return {
    nodes: canvas.tasks.map((t) => ({
      id: `t${t.id}`,
      type: 'edit',
      position: positions.get(`t${t.id}`) ?? { x: 0, y: 0 },
      data: { task: taskOfListed(t), flagged: false },
    })),
    edges: canvas.edges
      .filter((e) => idOf.has(e.source) && idOf.has(e.target))
      .map((e) => {
        const source = idOf.get(e.source)!;
        const target = idOf.get(e.target)!;
        return { id: edgeId(source, target), source, target, markerEnd: marker, data: { type: edgeTypeOf(e) } };
      }),
  };
}

/** `at`, or the first place below it where a new node overlaps none. */
function freeSpot(at: { x: number; y: number }, nodes: TaskNode[]): { x: number; y: number } {
  const overlaps = (p: { x: number; y: number }) =>
    nodes.some(
      (n) =>
        Math.abs(n.position.x - p.x) < NODE_WIDTH + 10 && Math.abs(n.position.y - p.y) < NODE_HEIGHT + 12,
    );
  let p = at;
  for (let i = 0; i < 200 && overlaps(p); i++) p = { x: at.x, y: at.y + (i + 1) * (NODE_HEIGHT + 16) };
  return p;
}

/** The selected dependency: which task waits for which, and whether it is STRONG or WEAK. */
function EdgePanel({
  source,
  target,
  type,
  onType,
  readOnly,
}: {
  source: string;
  target: string;
  type: EdgeType;
  onType: (type: EdgeType) => void;
  readOnly: boolean;
}) {
  const { t } = useTranslation('editor');
  const name = <code translate="no" />;
  return (
    <div className="task-panel" data-testid="edge-panel">
      <h3>{t('edge.title')}</h3>
      <div>
        <Trans t={t} i18nKey="edge.waits" values={{ source, target }} components={{ name }} />
      </div>
      <fieldset className="fieldset-plain edge-types" disabled={readOnly}>
        <legend>{t('edge.kind')}</legend>
        {(['STRONG', 'WEAK'] as const).map((option) => (
          <label key={option} className="edge-type">
            <input
              type="radio"
              name="edge-type"
              value={option}
              checked={type === option}
              onChange={() => onType(option)}
              data-testid={`edge-type-${option.toLowerCase()}`}
            />
            <span>
              <strong>{t(option === 'WEAK' ? 'edge.weak' : 'edge.strong')}</strong>
              <span className="muted small">
                {' '}
                <Trans
                  t={t}
                  i18nKey={option === 'WEAK' ? 'edge.weakMeans' : 'edge.strongMeans'}
                  values={{ source, target }}
                  components={{ name }}
                />
              </span>
            </span>
          </label>
        ))}
      </fieldset>
    </div>
  );
}

export function Editor(props: { dag: DagDetail | null; canvas: Canvas | null }) {
  return (
    <ReactFlowProvider>
      <EditorInner {...props} />
    </ReactFlowProvider>
  );
}

function EditorInner({ dag, canvas }: { dag: DagDetail | null; canvas: Canvas | null }) {
  const { t, i18n } = useTranslation('editor');
  const navigate = useNavigate();
  const flow = useReactFlow();
  const [initial] = useState(() => initialGraph(canvas));
  const [nodes, setNodes, onNodesChange] = useNodesState<TaskNode>(initial.nodes);
  const [edges, setEdges, onEdgesChange] = useEdgesState<DependencyEdge>(initial.edges);
  const [settings, setSettings] = useState(() => settingsOf(dag));
  // An existing DAG's settings changed since loaded or saved: Save sends them too.
  const [settingsDirty, setSettingsDirty] = useState(false);
  const [apiIssues, setApiIssues] = useState<Problem[]>([]);
  const [saving, setSaving] = useState(false);
  // The version the last save stored, shown until the next change.
  const [saved, setSaved] = useState<number | null>(null);
  const [dirty, setDirty] = useState(false);
  const counter = useRef(0);
  const pane = useRef<HTMLDivElement>(null);
  const fileManaged = !!dag?.sourceFile;

  useEffect(() => {
    if (!dirty) return;
    const warn = (e: BeforeUnloadEvent) => e.preventDefault();
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [dirty]);

  const model: EditorNode[] = useMemo(
    () => nodes.map((n) => ({ id: n.id, task: n.data.task, position: n.position })),
    [nodes],
  );
  const modelEdges: EditorEdge[] = useMemo(
    () => edges.map((e) => ({ source: e.source, target: e.target, type: e.data?.type ?? 'STRONG' })),
    [edges],
  );
  const local = useMemo(() => localProblems(model, modelEdges, t), [model, modelEdges, t]);
  const settingsIssues = useMemo(() => settingsProblems(settings, t), [settings, t]);
  const problems = useMemo(() => [...apiIssues, ...settingsIssues, ...local], [apiIssues, settingsIssues, local]);
  const flaggedIds = useMemo(() => new Set(problems.flatMap((p) => p.nodeIds)), [problems]);
  const flowNodes = useMemo(
    () =>
      nodes.map((n) =>
        n.data.flagged === flaggedIds.has(n.id) ? n : { ...n, data: { ...n.data, flagged: flaggedIds.has(n.id) } },
      ),
    [nodes, flaggedIds],
  );
  const badEdges = useMemo(() => new Set(apiIssues.flatMap((p) => p.edgeIndexes ?? [])), [apiIssues]);
  const nameOf = useMemo(() => new Map(model.map((n) => [n.id, n.task.name])), [model]);
  const taskOf = useMemo(() => new Map(model.map((n) => [n.id, n.task])), [model]);
  const flowEdges = useMemo(
    () =>
      edges.map((e, i) => {
        const weak = e.data?.type === 'WEAK';
        const source = taskOf.get(e.source);
        const branch = source && typeOf(source) === 'SWITCH' ? branchLabel(source, nameOf.get(e.target) ?? '', t) : null;
        return {
          ...e,
          label: branch ?? undefined,
          labelStyle: branchLabelStyle,
          labelBgPadding: [4, 2] as [number, number],
          labelBgBorderRadius: 4,
          ariaLabel: edgeLabel(
            i18n.language,
            nameOf.get(e.source) ?? e.source,
            nameOf.get(e.target) ?? e.target,
            weak ? t('edge.weakKind') : undefined,
          ),
          className: [weak && 'eedge-weak', badEdges.has(i) && 'edge-bad'].filter(Boolean).join(' '),
        };
      }),
    [edges, badEdges, nameOf, taskOf, i18n.language, t],
  );
  const ariaLabelConfig = useMemo(() => flowLabels(i18n.language), [i18n.language]);

  const selectedNodes = nodes.filter((n) => n.selected);
  const selected = selectedNodes.length === 1 ? selectedNodes[0]! : null;
  const selectedEdges = edges.filter((e) => e.selected);
  const selectedEdge = selectedNodes.length === 0 && selectedEdges.length === 1 ? selectedEdges[0]! : null;
  const anySelected = selectedNodes.length > 0 || edges.some((e) => e.selected);

  const touch = () => {
    setDirty(true);
    setSaved(null);
  };

  const onConnect = useCallback(
    (c: Connection) => {
      if (!c.source || !c.target || c.source === c.target) return;
      setEdges((es) =>
        es.some((e) => e.source === c.source && e.target === c.target)
          ? es
          : addEdge<DependencyEdge>(
              { ...c, id: edgeId(c.source, c.target), markerEnd: marker, data: { type: 'STRONG' } },
              es,
            ),
      );
      setDirty(true);
      setSaved(null);
    },
    [setEdges],
  );

  const addTask = () => {
    counter.current += 1;
    const name = uniqueName('task', nodes.map((n) => n.data.task.name));
    const rect = pane.current?.getBoundingClientRect();
    const center = rect
      ? flow.screenToFlowPosition({ x: rect.left + rect.width / 2, y: rect.top + rect.height / 2 })
      : { x: 0, y: 0 };
    const position = freeSpot({ x: center.x - NODE_WIDTH / 2, y: center.y - NODE_HEIGHT / 2 }, nodes);
    const id = `n${Date.now().toString(36)}${counter.current}`;
    setNodes((ns) => [
      ...ns.map((n) => (n.selected ? { ...n, selected: false } : n)),
      {
        id,
        type: 'edit',
        position,
        data: { task: newTask(name), flagged: false },
        selected: true,
      },
    ]);
    touch();
  };

  const changeSettings = (patch: Partial<DagSettings>) => {
    setSettings((s) => ({ ...s, ...patch }));
    setSettingsDirty(true);
    touch();
  };

  const updateTask = (id: string, task: TaskDef) => {
    setNodes((ns) => {
      // A renamed task keeps its place in the SWITCHes that choose it.
      const before = ns.find((n) => n.id === id)?.data.task.name.trim() ?? '';
      const after = task.name.trim();
      return ns.map((n) => {
        if (n.id === id) return { ...n, data: { ...n.data, task } };
        if (before === after) return n;
        const renamed = renameBranch(n.data.task, before, after);
        return renamed === n.data.task ? n : { ...n, data: { ...n.data, task: renamed } };
      });
    });
    touch();
  };

  const setEdgeType = (id: string, type: EdgeType) => {
    setEdges((es) => es.map((e) => (e.id === id ? { ...e, data: { type } } : e)));
    touch();
  };

  const deleteSelected = () => {
    const gone = new Set(nodes.filter((n) => n.selected).map((n) => n.id));
    setNodes((ns) => ns.filter((n) => !gone.has(n.id)));
    setEdges((es) => es.filter((e) => !e.selected && !gone.has(e.source) && !gone.has(e.target)));
    touch();
  };

  const tidy = () => {
    const pos = layoutDag(
      nodes.map((n) => ({ id: n.id })),
      edges,
    );
    setNodes((ns) => ns.map((n) => ({ ...n, position: pos.get(n.id) ?? n.position })));
    touch();
    window.requestAnimationFrame(() => void flow.fitView({ padding: 0.2 }));
  };

  const save = async () => {
    setSaving(true);
    setApiIssues([]);
    setSaved(null);
    try {
      if (dag) {
        const stored = await saveCanvas(dag.id, canvasBody(model, modelEdges));
        const byName = new Map(stored.tasks.map((t) => [t.name, t]));
        setNodes((ns) =>
          ns.map((n) => {
            const listed = byName.get(n.data.task.name.trim());
            return listed ? { ...n, data: { ...n.data, task: taskOfListed(listed) } } : n;
          }),
        );
        // The canvas route takes only tasks and edges: the DAG's own fields
        // go by its update, after the canvas, the likelier to be refused, so
        // that a refusal stores neither.
        let version = stored.version;
        if (settingsDirty) {
          version = (await updateDag(dag.id, settingsBody(settings))).version;
          setSettingsDirty(false);
        }
        setDirty(false);
        setSaved(version);
      } else {
        if (!settings.name.trim()) {
          setApiIssues([{ message: t('problems.dagNeedsName'), nodeIds: [], local: true }]);
          return;
        }
        const definition = definitionBody(settings, model, modelEdges);
        await createDag(definition, true);
        const created = (await createDag(definition)) as DagDetail;
        if (typeof created?.id !== 'number') throw new Error(t('problems.createdWithoutDag'));
        setDirty(false);
        try {
          await saveCanvas(created.id, canvasBody(model, modelEdges));
        } catch {
          // The DAG exists; only its positions are not stored.
          navigate(`/dags/${created.id}/edit`, { replace: true });
          return;
        }
        navigate(`/dags/${created.id}?tab=graph`, { replace: true });
      }
    } catch (e) {
      setApiIssues(apiProblems(e, model, modelEdges));
    } finally {
      setSaving(false);
    }
  };

  const select = (ids: string[]) => {
    const want = new Set(ids);
    setNodes((ns) => ns.map((n) => (n.selected === want.has(n.id) ? n : { ...n, selected: want.has(n.id) })));
    setEdges((es) => es.map((e) => (e.selected ? { ...e, selected: false } : e)));
  };

  const title = dag ? t('head.edit', { name: dag.name }) : t('head.new');
  return (
    <div className="editor">
      <div className="editor-head">
        <div className="crumbs">
          <Link to="/dags">{t('nav.dags', { ns: 'common' })}</Link> /{' '}
          {dag && (
            <Link to={`/dags/${dag.id}`} translate="no">
              {dag.name}
            </Link>
          )}
          {dag && ' /'}
        </div>
        <h1>{title}</h1>
        <div className="spacer" />
        <button type="button" className="btn" onClick={addTask} disabled={fileManaged} data-testid="canvas-add-task">
          {t('head.addTask')}
        </button>
        <button type="button" className="btn" onClick={deleteSelected} disabled={!anySelected || fileManaged} data-testid="canvas-delete">
          {t('head.deleteSelected')}
        </button>
        <button type="button" className="btn" onClick={tidy} disabled={nodes.length === 0}>
          {t('head.tidy')}
        </button>
        <button type="button" className="btn" onClick={() => select([])} disabled={!selected && !selectedEdge} data-testid="canvas-dag-settings">
          {t('head.dagSettings')}
        </button>
        {saved !== null && <span className="saved-note">{t('head.saved', { version: saved })}</span>}
        {dirty && saved === null && <span className="muted small">{t('head.unsaved')}</span>}
        <button
          type="button"
          className="btn btn-primary"
          onClick={() => void save()}
          disabled={saving || fileManaged || (!dag && !settings.name.trim()) || settingsIssues.length > 0}
          title={
            fileManaged
              ? t('head.fileManagedTitle')
              : settingsIssues.length > 0
                ? t('head.fixSettingsFirst')
                : undefined
          }
          data-testid="canvas-save"
        >
          {saving ? t('head.saving') : dag ? t('head.save') : t('head.create')}
        </button>
      </div>
      {fileManaged && (
        <div className="banner banner-warn" data-testid="file-managed">
          <Trans
            t={t}
            i18nKey="head.fileManaged"
            values={{ file: dag!.sourceFile }}
            components={{ code: <code translate="no" /> }}
          />
        </div>
      )}
      <div className="editor-body">
        <div className="editor-canvas" ref={pane}>
          <ReactFlow
            nodes={flowNodes}
            edges={flowEdges}
            nodeTypes={nodeTypes}
            onNodesChange={(changes) => {
              onNodesChange(changes);
              if (changes.some((c) => c.type === 'position' || c.type === 'remove')) touch();
            }}
            onEdgesChange={(changes) => {
              onEdgesChange(changes);
              if (changes.some((c) => c.type === 'remove')) touch();
            }}
            onConnect={onConnect}
            deleteKeyCode={fileManaged ? null : ['Delete', 'Backspace']}
            nodesConnectable={!fileManaged}
            nodesDraggable
            fitView
            fitViewOptions={{ padding: 0.2, maxZoom: 1.2 }}
            minZoom={0.1}
            defaultEdgeOptions={{ markerEnd: marker }}
            proOptions={{ hideAttribution: true }}
            ariaLabelConfig={ariaLabelConfig}
          >
            <Background gap={16} size={1} color="#e3e7ed" />
            <Controls position="bottom-left" />
          </ReactFlow>
          {nodes.length === 0 && (
            <div className="editor-empty">
              <p>{t('canvas.empty')}</p>
              <button type="button" className="btn btn-primary" onClick={addTask} disabled={fileManaged}>
                {t('canvas.addFirst')}
              </button>
            </div>
          )}
        </div>
        <aside className="editor-side">
          {problems.length > 0 && (
            <div className="canvas-errors" data-testid="canvas-errors">
              <div className="canvas-errors-head">
                {apiIssues.length > 0 ? t('problems.refused') : t('problems.title')}
              </div>
              <ul>
                {problems.map((p, i) => (
                  <li key={i} className={p.local ? 'local' : ''}>
                    {p.nodeIds.length > 0 || p.settings ? (
                      <button type="button" className="linklike" onClick={() => select(p.nodeIds)}>
                        {p.message}
                      </button>
                    ) : (
                      p.message
                    )}
                  </li>
                ))}
              </ul>
            </div>
          )}
          {selected ? (
            <TaskPanel
              key={selected.id}
              task={selected.data.task}
              branches={childrenOf(selected.id, model, modelEdges)}
              problems={problems.filter((p) => p.nodeIds.includes(selected.id))}
              onChange={(task) => updateTask(selected.id, task)}
              onDelete={() => {
                setNodes((ns) => ns.filter((n) => n.id !== selected.id));
                setEdges((es) => es.filter((e) => e.source !== selected.id && e.target !== selected.id));
                touch();
              }}
              readOnly={fileManaged}
            />
          ) : selectedEdge ? (
            <EdgePanel
              source={nameOf.get(selectedEdge.source) ?? ''}
              target={nameOf.get(selectedEdge.target) ?? ''}
              type={selectedEdge.data?.type ?? 'STRONG'}
              onType={(type) => setEdgeType(selectedEdge.id, type)}
              readOnly={fileManaged}
            />
          ) : (
            <DagSettingsPanel
              dag={dag}
              settings={settings}
              taskCount={nodes.length}
              onChange={changeSettings}
              onOnline={(online) => setSettings((s) => ({ ...s, online }))}
              readOnly={fileManaged}
            />
          )}
        </aside>
      </div>
    </div>
  );
}
