import { describe, expect, it } from 'vitest';
import { graphPositions, layoutDag, NODE_WIDTH, positionsFor } from './layout';

describe('dagre layout', () => {
  const nodes = ['extract', 'clean', 'audit', 'report'].map((id) => ({ id }));
  const edges = [
    { source: 'extract', target: 'clean' },
    { source: 'extract', target: 'audit' },
    { source: 'clean', target: 'report' },
    { source: 'audit', target: 'report' },
  ];

  it('gives every node a position', () => {
    const pos = layoutDag(nodes, edges);
    expect(pos.size).toBe(4);
    for (const p of pos.values()) {
      expect(Number.isFinite(p.x)).toBe(true);
      expect(Number.isFinite(p.y)).toBe(true);
    }
  });

  it('puts each node right of its upstream', () => {
    const pos = layoutDag(nodes, edges);
    for (const e of edges) {
      expect(pos.get(e.target)!.x).toBeGreaterThan(pos.get(e.source)!.x);
    }
    // Siblings share a rank but not a place.
    expect(pos.get('clean')!.x).toBe(pos.get('audit')!.x);
    expect(pos.get('clean')!.y).not.toBe(pos.get('audit')!.y);
  });

  it('ignores edges to unknown nodes and self-edges', () => {
    const pos = layoutDag([{ id: 'a' }, { id: 'b' }], [
      { source: 'a', target: 'b' },
      { source: 'a', target: 'ghost' },
      { source: 'b', target: 'b' },
    ]);
    expect(pos.size).toBe(2);
    expect(pos.get('b')!.x).toBeGreaterThan(pos.get('a')!.x);
  });

  it('keeps saved positions only when every node has one', () => {
    const saved = positionsFor(
      [{ id: 'a', saved: { x: 5, y: 7 } }, { id: 'b', saved: { x: 300, y: 7 } }],
      [{ source: 'a', target: 'b' }],
    );
    expect(saved.get('a')).toEqual({ x: 5, y: 7 });
    const mixed = positionsFor(
      [{ id: 'a', saved: { x: 5, y: 7 } }, { id: 'b', saved: null }],
      [{ source: 'a', target: 'b' }],
    );
    expect(mixed.get('b')!.x).toBeGreaterThan(mixed.get('a')!.x);
  });

  it('sets stubs beside the saved tasks they are linked to, never on top of another node', () => {
    const tasks = [
      { id: 'a', saved: { x: 0, y: 0 } },
      { id: 'b', saved: { x: 300, y: 0 } },
    ];
    const stubs = [{ id: 'dag/orders/load' }, { id: 'dataset/dw.orders' }, { id: 'dataset/dw.users' }];
    const edges = [
      { source: 'a', target: 'b' },
      { source: 'dag/orders/load', target: 'a' },
      { source: 'b', target: 'dataset/dw.orders' },
      { source: 'b', target: 'dataset/dw.users' },
    ];
    const pos = graphPositions(tasks, stubs, edges);
    expect(pos.get('a')).toEqual({ x: 0, y: 0 });
    expect(pos.get('dag/orders/load')!.x).toBeLessThan(-NODE_WIDTH);
    expect(pos.get('dataset/dw.orders')!.x).toBeGreaterThan(300 + NODE_WIDTH);
    expect(pos.get('dataset/dw.users')!.x).toBe(pos.get('dataset/dw.orders')!.x);
    expect(pos.get('dataset/dw.users')!.y).toBeGreaterThan(pos.get('dataset/dw.orders')!.y);
  });

  it('lays out tasks and stubs together when a task has no saved position', () => {
    const pos = graphPositions(
      [{ id: 'a', saved: { x: 0, y: 0 } }, { id: 'b', saved: null }],
      [{ id: 'after/upstream' }],
      [
        { source: 'a', target: 'b' },
        { source: 'after/upstream', target: 'a' },
      ],
    );
    expect(pos.get('a')!.x).toBeGreaterThan(pos.get('after/upstream')!.x);
    expect(pos.get('b')!.x).toBeGreaterThan(pos.get('a')!.x);
  });
});
