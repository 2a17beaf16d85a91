// A DAG drawn read-only: its tasks coloured by their status in the chosen
// run, stubs for what they wait for outside it, every kind of edge drawn
// its own way with a legend. Made to stay readable at hundreds of tasks: a
// search, a click that highlights all a node waits on and all that waits on
// it, and a minimap. Laid out by dagre left to right (or the canvas's saved
// positions).

import { useCallback, useEffect, useMemo, useState } from 'react';
import { useTranslation } from 'react-i18next';
import {
  Background,
  Controls,
  MarkerType,
  MiniMap,
  ReactFlow,
  ReactFlowProvider,
  useReactFlow,
  type Edge as FlowEdge,
} from '@xyflow/react';
import { edgeLabel, flowLabels } from './flowLabels';
import { FocusLine } from './graph/FocusLine';
import { GraphLegend } from './graph/GraphLegend';
import { GraphSearch } from './graph/GraphSearch';
import { EDGE_LOOKS, edgeText } from './graph/edgeLook';
import { kindOf, kindsPresent, lineage, searchMatches, type DrawnEdge, type GraphStub, type GraphTask } from './graph/model';
import { nodeTypes, type StubNodeType, type TaskNodeType } from './graph/nodes';
import { graphPositions, NODE_HEIGHT, NODE_WIDTH } from '../lib/layout';

export type { GraphStub, GraphTask } from './graph/model';

export interface TaskState {
  status: string;
  taskInstanceId: number;
  attempts?: number;
  /** SKIPPED by control flow, not because it is disabled. */
  flowSkipped?: boolean;
  /** A mapped task: how many items its list had (drawn as a stack, ×N). */
  items?: number;
}

/** Above this many nodes the graph gets a minimap. */
const MINIMAP_FROM = 30;

interface GraphProps {
  tasks: GraphTask[];
  stubs?: GraphStub[];
  edges: DrawnEdge[];
  states?: Map<string, TaskState>;
  onOpen?: (taskInstanceId: number) => void;
  height?: number | string;
}

export function DagGraph(props: GraphProps) {
  const { t } = useTranslation('dag');
  // A new shape is laid out and fitted to the view again; only a new shape:
  // a run's states change often, and dagre is slow at hundreds of tasks.
  const shape = useMemo(
    () =>
      [
        ...props.tasks.map((t) => `${t.name}@${t.saved ? `${t.saved.x},${t.saved.y}` : ''}`),
        ...(props.stubs ?? []).map((s) => s.id),
        ...props.edges.map((e) => `${e.source}>${e.target}`),
      ].join('\u0000'),
    [props.tasks, props.stubs, props.edges],
  );
  if (props.tasks.length === 0) {
    return <div className="state state-empty">{t('noTasks')}</div>;
  }
  return (
    <ReactFlowProvider key={shape}>
      <GraphView {...props} />
    </ReactFlowProvider>
  );
}

const NO_STUBS: GraphStub[] = [];

function GraphView({ tasks, stubs = NO_STUBS, edges, states, onOpen, height = 460 }: GraphProps) {
  const { t, i18n } = useTranslation('dag');
  const flow = useReactFlow();
  const [query, setQuery] = useState('');
  const [next, setNext] = useState(0);
  const [focus, setFocus] = useState<string | null>(null);

  // Laid out once: DagGraph mounts a new view for a new shape.
  const [positions] = useState(() =>
    graphPositions(
      tasks.map((t) => ({ id: t.name, saved: t.saved ?? null })),
      stubs.map((s) => ({ id: s.id })),
      edges,
    ),
  );
  // Each node's name as a person reads it: another DAG's task with its DAG.
  const names = useMemo(
    () =>
      new Map([
        ...tasks.map((t) => [t.name, t.name] as const),
        ...stubs.map((s) => [s.id, s.kind === 'DAG_TASK' ? `${s.dag}/${s.name}` : s.name] as const),
      ]),
    [tasks, stubs],
  );
  const matches = useMemo(
    () => searchMatches([...names].map(([id, name]) => ({ id, name })), query),
    [names, query],
  );
  const matched = useMemo(() => new Set(matches), [matches]);
  const related = useMemo(() => {
    if (!focus) return null;
    const { upstream, downstream } = lineage(edges, focus);
    return { upstream, downstream, all: new Set([focus, ...upstream, ...downstream]) };
  }, [edges, focus]);
  const searching = query.trim() !== '';
  const dimmed = useCallback(
    (id: string) => (related ? !related.all.has(id) : searching && !matched.has(id)),
    [related, searching, matched],
  );

  const nodes = useMemo<Array<TaskNodeType | StubNodeType>>(() => {
    const place = (id: string) => ({
      id,
      position: positions.get(id) ?? { x: 0, y: 0 },
      width: NODE_WIDTH,
      height: NODE_HEIGHT,
      draggable: false,
      connectable: false,
      className: [dimmed(id) && 'gdim', matched.has(id) && 'gmatch', id === focus && 'gfocus'].filter(Boolean).join(' '),
    });
    return [
      ...tasks.map((task): TaskNodeType => {
        const state = states?.get(task.name);
        return {
          ...place(task.name),
          type: 'task',
          data: {
            name: task.name,
            type: (task.type ?? '').toUpperCase(),
            status: state?.status ?? 'NONE',
            taskInstanceId: state?.taskInstanceId ?? null,
            attempts: state?.attempts ?? 0,
            flowSkipped: state?.flowSkipped === true,
            items: state?.items ?? null,
          },
        };
      }),
      ...stubs.map((stub): StubNodeType => ({ ...place(stub.id), type: 'stub', data: { stub } })),
    ];
  }, [tasks, stubs, states, positions, matched, dimmed, focus]);

  const flowEdges = useMemo<FlowEdge[]>(
    () =>
      edges.map((e) => {
        const kind = kindOf(e);
        const look = EDGE_LOOKS[kind];
        const lit = related ? related.all.has(e.source) && related.all.has(e.target) : !searching;
        return {
          id: `${e.source}->${e.target}:${kind}:${e.offsetDay ?? 0}`,
          source: e.source,
          target: e.target,
          className: `gedge gedge-${kind.toLowerCase()}${lit ? '' : ' gdim'}`,
          style: { stroke: look.color, strokeWidth: look.width, strokeDasharray: look.dash },
          markerEnd: { type: MarkerType.ArrowClosed, color: look.color, width: 16, height: 16 },
          label: edgeText(e, t),
          focusable: false,
          ariaLabel: edgeLabel(
            i18n.language,
            names.get(e.source) ?? e.source,
            names.get(e.target) ?? e.target,
            kind === 'STRONG' ? undefined : t(`graph.kinds.${kind}`),
          ),
        };
      }),
    [edges, related, searching, names, t, i18n.language],
  );
  const kinds = useMemo(() => kindsPresent(edges), [edges]);
  const ariaLabelConfig = useMemo(() => flowLabels(i18n.language), [i18n.language]);

  useEffect(() => {
    if (!focus) return;
    const clear = (e: KeyboardEvent) => {
      if (e.key === 'Escape') setFocus(null);
    };
    window.addEventListener('keydown', clear);
    return () => window.removeEventListener('keydown', clear);
  }, [focus]);

  const showNext = () => {
    if (matches.length === 0) return;
    const id = matches[next % matches.length]!;
    setNext(next + 1);
    const at = positions.get(id);
    if (at) {
      void flow.setCenter(at.x + NODE_WIDTH / 2, at.y + NODE_HEIGHT / 2, { zoom: Math.max(flow.getZoom(), 1), duration: 300 });
    }
  };
  const focusedInstance = focus ? states?.get(focus)?.taskInstanceId : undefined;

  return (
    <div className="graph-box" style={{ height }}>
      <div className="graph-bar">
        <GraphSearch
          query={query}
          found={matches.length}
          onQuery={(q) => {
            setQuery(q);
            setNext(0);
          }}
          onNext={showNext}
        />
        {related && focus && (
          <FocusLine
            name={names.get(focus) ?? focus}
            upstream={related.upstream.size}
            downstream={related.downstream.size}
            onOpen={focusedInstance && onOpen ? () => onOpen(focusedInstance) : undefined}
            onClear={() => setFocus(null)}
          />
        )}
        <div className="spacer" />
        {kinds.some((k) => k !== 'STRONG') && <GraphLegend kinds={kinds} />}
      </div>
      <div className="graph-flow">
        <ReactFlow
          nodes={nodes}
          edges={flowEdges}
          nodeTypes={nodeTypes}
          fitView
          // First shown at a zoom whose names can be read, the middle of a
          // big graph; the Fit View button and the minimap show all of it.
          fitViewOptions={{ padding: 0.12, maxZoom: 1.2, minZoom: 0.7 }}
          minZoom={0.05}
          nodesDraggable={false}
          nodesConnectable={false}
          elementsSelectable={false}
          onlyRenderVisibleElements={nodes.length > 200}
          proOptions={{ hideAttribution: true }}
          ariaLabelConfig={ariaLabelConfig}
          onNodeClick={(_, node) => setFocus(node.id === focus ? null : node.id)}
          onNodeDoubleClick={(_, node) => {
            const id = node.type === 'task' ? (node.data as TaskNodeType['data']).taskInstanceId : null;
            if (id && onOpen) onOpen(id);
          }}
          onPaneClick={() => setFocus(null)}
          zoomOnDoubleClick={false}
        >
          <Background gap={16} size={1} color="var(--line-soft-4)" />
          <Controls showInteractive={false} position="bottom-right" />
          {nodes.length > MINIMAP_FROM && (
            <MiniMap
              position="bottom-left"
              style={{ width: 160, height: 110 }}
              pannable
              zoomable
              nodeClassName={(n) => `gmini-${n.type}${dimmed(n.id) ? ' gmini-dim' : ''}`}
              ariaLabel={t('graph.minimap')}
            />
          )}
        </ReactFlow>
      </div>
    </div>
  );
}
