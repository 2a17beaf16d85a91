// What a drawn DAG graph is made of, apart from React: its nodes (the DAG's
// tasks and stubs for what lies outside it), its edges of every kind, and
// the questions the page asks of them (what a node reaches, what a search
// finds, which kinds the legend lists).

import type { EdgeKind } from '../../api/types';
import type { Point } from '../../lib/layout';

/** How an edge's target depends on its source (the graph API's kinds). */
export type DrawnEdgeKind = EdgeKind;

/** Every kind, in the legend's order. */
export const EDGE_KINDS: readonly DrawnEdgeKind[] = ['STRONG', 'WEAK', 'CROSS_RUN', 'PREVIOUS_RUN', 'CROSS_DAG', 'AFTER', 'READS', 'WRITES'];

/** A task of the DAG. */
export interface GraphTask {
  name: string;
  type?: string | null;
  saved?: Point | null;
}

/** A node for what a task waits for or writes outside its own run. */
export interface GraphStub {
  /** Unique in the graph (holds a `/`, which task names never do). */
  id: string;
  kind: 'OTHER_RUN' | 'DAG_TASK' | 'DAG' | 'DATASET';
  /** The task's, DAG's or dataset's name. */
  name: string;
  /** The other DAG of a DAG_TASK or DAG stub. */
  dag?: string | null;
  /** That DAG's id when it exists in this project; null: it does not. */
  dagId?: number | null;
  /** OTHER_RUN: days from this run to the awaited one; null: the previous run. */
  offsetDay?: number | null;
}

/**
 * An edge as the graph API gives it, or a canvas edge (no `kind`; `type`
 * WEAK or else STRONG).
 */
export interface DrawnEdge {
  source: string;
  target: string;
  kind?: DrawnEdgeKind | null;
  type?: string | null;
  weak?: boolean;
  offsetDay?: number;
}

/** The kind of `edge`, whichever shape it came in. */
export function kindOf(edge: DrawnEdge): DrawnEdgeKind {
  if (edge.kind) return edge.kind;
  return edge.type === 'WEAK' ? 'WEAK' : 'STRONG';
}

/** The kinds among `edges`, in the legend's order. */
export function kindsPresent(edges: DrawnEdge[]): DrawnEdgeKind[] {
  const present = new Set(edges.map(kindOf));
  return EDGE_KINDS.filter((k) => present.has(k));
}

/** The nodes `id` waits on and the nodes waiting on it, through any edge, all the way. */
export function lineage(edges: DrawnEdge[], id: string): { upstream: Set<string>; downstream: Set<string> } {
  const parents = new Map<string, string[]>();
  const children = new Map<string, string[]>();
  for (const e of edges) {
    parents.set(e.target, [...(parents.get(e.target) ?? []), e.source]);
    children.set(e.source, [...(children.get(e.source) ?? []), e.target]);
  }
  const reach = (next: Map<string, string[]>) => {
    const seen = new Set<string>();
    const todo = [...(next.get(id) ?? [])];
    while (todo.length > 0) {
      const n = todo.pop()!;
      if (n === id || seen.has(n)) continue;
      seen.add(n);
      todo.push(...(next.get(n) ?? []));
    }
    return seen;
  };
  return { upstream: reach(parents), downstream: reach(children) };
}

/** The ids of the nodes whose name holds `query` (any case, trimmed), in order; none for an empty query. */
export function searchMatches(nodes: Array<{ id: string; name: string }>, query: string): string[] {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  return nodes.filter((n) => n.name.toLowerCase().includes(q)).map((n) => n.id);
}
