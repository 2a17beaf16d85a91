// The graph's two kinds of node: a task of the DAG, coloured by its state
// in the chosen run, and a stub for what lies outside the DAG (another
// DAG's task or the DAG itself, another run, a dataset): dashed, muted,
// saying what it is, and linking where there is a page for it.

import { memo } from 'react';
import { useTranslation } from 'react-i18next';
import { Link } from 'react-router';
import { Handle, Position, type Node, type NodeProps } from '@xyflow/react';
import { normalizeStatus, statusClass, statusLabel, statusStyle } from '../../lib/status';
import { signedDays } from './edgeLook';
import type { GraphStub } from './model';

export type TaskNodeData = {
  name: string;
  type: string;
  status: string;
  taskInstanceId: number | null;
  attempts: number;
  /** SKIPPED by control flow (B): drawn apart from a disabled task's SKIPPED. */
  flowSkipped: boolean;
  /** A mapped task in the run: how many items its list had, drawn as a stack. */
  items: number | null;
};

export type StubNodeData = { stub: GraphStub };

export type TaskNodeType = Node<TaskNodeData, 'task'>;
export type StubNodeType = Node<StubNodeData, 'stub'>;

const TaskNode = memo(function TaskNode({ data }: NodeProps<TaskNodeType>) {
  const { t } = useTranslation('dag');
  const s = statusStyle(data.status);
  const status = normalizeStatus(data.status);
  return (
    <div
      className={`gnode ${statusClass(data.status)}${data.taskInstanceId ? ' gnode-link' : ''}${data.flowSkipped ? ' gnode-flow-skipped' : ''}${data.items !== null ? ' gnode-stacked' : ''}`}
      style={{ borderColor: s.outline ? 'var(--node-border)' : s.fill }}
      data-testid="graph-node"
      data-task={data.name}
      data-status={status}
      data-flow-skipped={data.flowSkipped || undefined}
      data-items={data.items ?? undefined}
      title={t(data.attempts > 1 ? 'graph.nodeTitleAttempts' : 'graph.nodeTitle', {
        name: data.name,
        status: data.flowSkipped ? t('graph.flowSkipped') : statusLabel(data.status),
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
          {data.items !== null && (
            <span className="gnode-items" title={t('graph.mapItems', { count: data.items })}>
              ×{data.items}
            </span>
          )}
          <span className="gnode-status">
            {status === 'NONE' ? '' : data.flowSkipped ? t('graph.flowSkipped') : statusLabel(data.status)}
          </span>
        </span>
      </span>
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
});

/** A symbol for each kind of stub (no letters: it reads in any language). */
const STUB_ICONS: Record<GraphStub['kind'], string> = {
  DAG_TASK: '\u229e',
  DAG: '\u21e2',
  OTHER_RUN: '\u21ba',
  DATASET: '\u26c1',
};

/** What a stub stands for, in words. */
function StubKindLine({ stub }: { stub: GraphStub }) {
  const { t } = useTranslation('dag');
  const missing = stub.dagId === null || stub.dagId === undefined;
  switch (stub.kind) {
    case 'DAG_TASK':
      return <>{missing ? t('graph.stub.dagTaskMissing') : t('graph.stub.dagTask')}</>;
    case 'DAG':
      return <>{missing ? t('graph.stub.afterMissing') : t('graph.stub.after')}</>;
    case 'DATASET':
      return <>{t('graph.stub.dataset')}</>;
    case 'OTHER_RUN': {
      const offset = stub.offsetDay;
      if (offset === null || offset === undefined) return <>{t('graph.stub.previousRun')}</>;
      return <>{t(offset < 0 ? 'graph.stub.earlierRun' : 'graph.stub.laterRun', { offset: signedDays(offset) })}</>;
    }
  }
}

/** A stub's name, a link to its page where it has one. */
function StubName({ stub }: { stub: GraphStub }) {
  const { t } = useTranslation('dag');
  const shown = stub.kind === 'DAG_TASK' ? `${stub.dag}/${stub.name}` : stub.name;
  const to =
    stub.kind === 'DATASET'
      ? `/datasets/${encodeURIComponent(stub.name)}`
      : (stub.kind === 'DAG_TASK' || stub.kind === 'DAG') && stub.dagId
        ? `/dags/${stub.dagId}`
        : null;
  if (!to) {
    return (
      <span className="gnode-name" translate="no">
        {shown}
      </span>
    );
  }
  return (
    <Link
      to={to}
      className="gnode-name gnode-stub-link"
      translate="no"
      data-testid="graph-stub-link"
      title={
        stub.kind === 'DATASET'
          ? t('graph.stub.openDataset', { name: stub.name })
          : t('graph.stub.openDag', { dag: stub.dag })
      }
      // The link, not the node: a click on it does not also highlight.
      onClick={(e) => e.stopPropagation()}
    >
      {shown}
    </Link>
  );
}

const StubNode = memo(function StubNode({ data }: NodeProps<StubNodeType>) {
  const { t } = useTranslation('dag');
  const { stub } = data;
  const missing = (stub.kind === 'DAG_TASK' || stub.kind === 'DAG') && !stub.dagId;
  return (
    <div
      className={`gnode gnode-stub gnode-stub-${stub.kind.toLowerCase().replace('_', '-')}`}
      data-testid="graph-stub"
      data-kind={stub.kind}
      data-stub={stub.id}
      title={missing ? t('graph.stub.missingTitle', { dag: stub.dag }) : undefined}
    >
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <span className="gnode-icon" aria-hidden="true">
        {STUB_ICONS[stub.kind]}
      </span>
      <span className="gnode-body">
        <StubName stub={stub} />
        <span className="gnode-meta">
          <span className="gnode-kind">
            <StubKindLine stub={stub} />
          </span>
        </span>
      </span>
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
});

export const nodeTypes = { task: TaskNode, stub: StubNode };
