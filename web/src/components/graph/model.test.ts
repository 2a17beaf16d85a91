import { describe, expect, it } from 'vitest';
import { kindOf, kindsPresent, lineage, searchMatches, type DrawnEdge } from './model';

describe('the drawn graph', () => {
  // extract → clean → report, audit ⇢ report (WEAK), yesterday's report → report,
  // report → dataset; unrelated stands alone.
  const edges: DrawnEdge[] = [
    { source: 'extract', target: 'clean', kind: 'STRONG' },
    { source: 'clean', target: 'report', kind: 'STRONG' },
    { source: 'audit', target: 'report', kind: 'WEAK' },
    { source: 'run/-1/report', target: 'report', kind: 'CROSS_RUN', offsetDay: -1 },
    { source: 'report', target: 'dataset/ads.gmv', kind: 'WRITES' },
    { source: 'unrelated', target: 'other', kind: 'STRONG' },
  ];

  it('reads a canvas edge as STRONG unless typed WEAK', () => {
    expect(kindOf({ source: 'a', target: 'b' })).toBe('STRONG');
    expect(kindOf({ source: 'a', target: 'b', type: 'WEAK' })).toBe('WEAK');
    expect(kindOf({ source: 'a', target: 'b', kind: 'READS' })).toBe('READS');
  });

  it('lists the kinds present, in the legend order, once each', () => {
    expect(kindsPresent([...edges].reverse())).toEqual(['STRONG', 'WEAK', 'CROSS_RUN', 'WRITES']);
    expect(kindsPresent([])).toEqual([]);
  });

  it('finds everything upstream and downstream of a node, through every kind', () => {
    const { upstream, downstream } = lineage(edges, 'report');
    expect([...upstream].sort()).toEqual(['audit', 'clean', 'extract', 'run/-1/report']);
    expect([...downstream]).toEqual(['dataset/ads.gmv']);
    const fromClean = lineage(edges, 'clean');
    expect([...fromClean.upstream]).toEqual(['extract']);
    expect([...fromClean.downstream].sort()).toEqual(['dataset/ads.gmv', 'report']);
    expect(fromClean.downstream.has('unrelated')).toBe(false);
  });

  it('ends on a cycle instead of looping', () => {
    const { upstream, downstream } = lineage(
      [
        { source: 'a', target: 'b' },
        { source: 'b', target: 'a' },
      ],
      'a',
    );
    expect([...upstream]).toEqual(['b']);
    expect([...downstream]).toEqual(['b']);
  });

  it('searches names by substring in any case, nothing for a blank query', () => {
    const nodes = ['ods_orders', 'dwd_order_detail', 'ads_gmv_report'].map((name) => ({ id: name, name }));
    expect(searchMatches(nodes, ' ORDER')).toEqual(['ods_orders', 'dwd_order_detail']);
    expect(searchMatches(nodes, 'gmv')).toEqual(['ads_gmv_report']);
    expect(searchMatches(nodes, '  ')).toEqual([]);
    expect(searchMatches(nodes, 'nothing')).toEqual([]);
  });
});
