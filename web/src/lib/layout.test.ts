import { describe, expect, it } from 'vitest';
import { layoutDag, positionsFor } from './layout';

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
});
