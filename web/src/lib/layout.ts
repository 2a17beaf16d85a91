// Graph layout: dagre, left to right, as top-left positions React Flow takes.

import dagre from '@dagrejs/dagre';

export interface LayoutNode {
  id: string;
  width?: number;
  height?: number;
}

export interface LayoutEdge {
  source: string;
  target: string;
}

export interface Point {
  x: number;
  y: number;
}

export interface LayoutOptions {
  rankdir?: 'LR' | 'TB';
  nodeWidth?: number;
  nodeHeight?: number;
  nodesep?: number;
  ranksep?: number;
}

export const NODE_WIDTH = 180;
export const NODE_HEIGHT = 40;

/**
 * Positions for `nodes` (top-left corners) so that every edge points from
 * left to right. Edges naming a node not in `nodes`, and self-edges, are
 * left out.
 */
export function layoutDag(
  nodes: LayoutNode[],
  edges: LayoutEdge[],
  options: LayoutOptions = {},
): Map<string, Point> {
  const width = options.nodeWidth ?? NODE_WIDTH;
  const height = options.nodeHeight ?? NODE_HEIGHT;
  const g = new dagre.graphlib.Graph();
  g.setGraph({
    rankdir: options.rankdir ?? 'LR',
    nodesep: options.nodesep ?? 18,
    ranksep: options.ranksep ?? 60,
    marginx: 10,
    marginy: 10,
  });
  g.setDefaultEdgeLabel(() => ({}));
  const ids = new Set<string>();
  for (const node of nodes) {
    ids.add(node.id);
    g.setNode(node.id, { width: node.width ?? width, height: node.height ?? height });
  }
  for (const edge of edges) {
    if (edge.source !== edge.target && ids.has(edge.source) && ids.has(edge.target)) {
      g.setEdge(edge.source, edge.target);
    }
  }
  dagre.layout(g);
  const out = new Map<string, Point>();
  for (const node of nodes) {
    const laid = g.node(node.id) as { x: number; y: number; width: number; height: number } | undefined;
    const w = node.width ?? width;
    const h = node.height ?? height;
    out.set(node.id, laid ? { x: laid.x - w / 2, y: laid.y - h / 2 } : { x: 0, y: 0 });
  }
  return out;
}

/**
 * Saved canvas positions when every node has one, else a fresh layout: a
 * mix of saved and computed positions would overlap.
 */
export function positionsFor(
  nodes: Array<LayoutNode & { saved?: Point | null }>,
  edges: LayoutEdge[],
  options: LayoutOptions = {},
): Map<string, Point> {
  if (nodes.length > 0 && nodes.every((n) => n.saved)) {
    return new Map(nodes.map((n) => [n.id, n.saved as Point]));
  }
  return layoutDag(nodes, edges, options);
}

/**
 * Positions for a DAG's tasks and the stubs around them (other DAGs, other
 * runs, datasets). The tasks keep their saved canvas positions when every
 * task has one, each stub then set beside the first task it is linked to
 * (left of a task that waits for it, right of one that writes it), below
 * whatever is already there; otherwise dagre lays out everything.
 */
export function graphPositions(
  tasks: Array<LayoutNode & { saved?: Point | null }>,
  stubs: LayoutNode[],
  edges: LayoutEdge[],
  options: LayoutOptions = {},
): Map<string, Point> {
  if (tasks.length === 0 || !tasks.every((n) => n.saved)) return layoutDag([...tasks, ...stubs], edges, options);
  const width = options.nodeWidth ?? NODE_WIDTH;
  const height = options.nodeHeight ?? NODE_HEIGHT;
  const gap = options.ranksep ?? 60;
  const out = new Map(tasks.map((n) => [n.id, n.saved as Point]));
  const taken = [...out.values()];
  const free = (p: Point) => !taken.some((q) => Math.abs(q.x - p.x) < width && Math.abs(q.y - p.y) < height + 8);
  const isTask = (id: string) => tasks.some((n) => n.id === id);
  for (const stub of stubs) {
    const edge = edges.find(
      (e) => (e.source === stub.id && isTask(e.target)) || (e.target === stub.id && isTask(e.source)),
    );
    let at: Point = { x: 0, y: 0 };
    if (edge) {
      const waits = edge.source === stub.id;
      const anchor = out.get(waits ? edge.target : edge.source)!;
      at = { x: anchor.x + (waits ? -(width + gap) : width + gap), y: anchor.y };
    }
    while (!free(at)) at = { x: at.x, y: at.y + height + 12 };
    out.set(stub.id, at);
    taken.push(at);
  }
  return out;
}
