// A DAG drawn read-only: dagre layout left to right (or the canvas's saved
// positions), each node coloured by its task's status in the chosen run.

import { memo, useMemo } from 'react';
import { useTranslation } from 'react-i18next';
import {
  Background,
  Controls,
  Handle,
  MarkerType,
  Position,
  ReactFlow,
  type Edge as FlowEdge,
  type Node,
  type NodeProps,
} from '@xyflow/react';
import type { Edge } from '../api/types';
import { edgeLabel, flowLabels } from './flowLabels';
import { NODE_HEIGHT, NODE_WIDTH, positionsFor, type Point } from '../lib/layout';
import { normalizeStatus, statusClass, statusLabel, statusStyle } from '../lib/status';

export interface GraphTask {
  name: string;
  type?: string | null;
  saved?: Point | null;
}

export interface TaskState {
  status: string;
  taskInstanceId: number;
  attempts?: number;
}

type TaskNodeData = {
  name: string;
  type: string;
  status: string;
  taskInstanceId: number | null;
  attempts: number;
};

type TaskNodeType = Node<TaskNodeData, 'task'>;

const TaskNode = memo(function TaskNode({ data }: NodeProps<TaskNodeType>) {
  const { t } = useTranslation('dag');
  const s = statusStyle(data.status);
  const status = normalizeStatus(data.status);
  return (
    <div
      className={`gnode ${statusClass(data.status)}${data.taskInstanceId ? ' gnode-link' : ''}`}
      style={{ borderColor: s.outline ? '#c3cad5' : s.fill }}
      data-testid="graph-node"
      data-task={data.name}
      data-status={status}
      title={t(data.attempts > 1 ? 'graph.nodeTitleAttempts' : 'graph.nodeTitle', {
        name: data.name,
        status: statusLabel(data.status),
        attempts: data.attempts,
      })}
    >
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <span className="gnode-bar" style={{ background: s.outline ? 'transparent' : s.fill, borderColor: s.border }} />
      <span className="gnode-body">
        <span className="gnode-name" translate="no">
          {data.name}
        </span>
        <span className="gnode-meta">
          <span className="gnode-type" translate="no">
            {data.type}
          </span>
          <span className="gnode-status">{status === 'NONE' ? '' : statusLabel(data.status)}</span>
        </span>
      </span>
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
});

const nodeTypes = { task: TaskNode };

const edgeStyle = { stroke: '#9aa4b2', strokeWidth: 1.25 };
const marker = { type: MarkerType.ArrowClosed, color: '#9aa4b2', width: 16, height: 16 };

export function DagGraph({
  tasks,
  edges,
  states,
  onOpen,
  height = 460,
}: {
  tasks: GraphTask[];
  edges: Edge[];
  states?: Map<string, TaskState>;
  onOpen?: (taskInstanceId: number) => void;
  height?: number | string;
}) {
  const { t, i18n } = useTranslation('dag');
  const positions = useMemo(
    () =>
      positionsFor(
        tasks.map((t) => ({ id: t.name, saved: t.saved ?? null })),
        edges,
        { nodeWidth: NODE_WIDTH, nodeHeight: NODE_HEIGHT },
      ),
    [tasks, edges],
  );
  const nodes = useMemo<TaskNodeType[]>(
    () =>
      tasks.map((t) => {
        const state = states?.get(t.name);
        return {
          id: t.name,
          type: 'task',
          position: positions.get(t.name) ?? { x: 0, y: 0 },
          data: {
            name: t.name,
            type: (t.type ?? '').toUpperCase(),
            status: state?.status ?? 'NONE',
            taskInstanceId: state?.taskInstanceId ?? null,
            attempts: state?.attempts ?? 0,
          },
          width: NODE_WIDTH,
          height: NODE_HEIGHT,
          draggable: false,
          connectable: false,
        };
      }),
    [tasks, states, positions],
  );
  const flowEdges = useMemo<FlowEdge[]>(
    () =>
      edges.map((e) => ({
        id: `${e.source}->${e.target}`,
        source: e.source,
        target: e.target,
        style: edgeStyle,
        markerEnd: marker,
        focusable: false,
        ariaLabel: edgeLabel(i18n.language, e.source, e.target),
      })),
    [edges, i18n.language],
  );
  const ariaLabelConfig = useMemo(() => flowLabels(i18n.language), [i18n.language]);
  // A new shape is fitted to the view again.
  const shape = useMemo(() => tasks.map((t) => t.name).join('\u0000'), [tasks]);
  if (tasks.length === 0) {
    return <div className="state state-empty">{t('noTasks')}</div>;
  }
  return (
    <div className="graph-box" style={{ height }}>
      <ReactFlow
        key={shape}
        nodes={nodes}
        edges={flowEdges}
        nodeTypes={nodeTypes}
        fitView
        fitViewOptions={{ padding: 0.15, maxZoom: 1.2 }}
        minZoom={0.1}
        nodesDraggable={false}
        nodesConnectable={false}
        elementsSelectable={false}
        onlyRenderVisibleElements={tasks.length > 200}
        proOptions={{ hideAttribution: true }}
        ariaLabelConfig={ariaLabelConfig}
        onNodeClick={(_, node) => {
          const id = (node.data as TaskNodeData).taskInstanceId;
          if (id && onOpen) onOpen(id);
        }}
      >
        <Background gap={16} size={1} color="#e3e7ed" />
        <Controls showInteractive={false} position="bottom-right" />
      </ReactFlow>
    </div>
  );
}
