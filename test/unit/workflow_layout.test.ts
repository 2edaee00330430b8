/**
 * The graph page's layout, as a pure function: longest-path depths, the
 * barycentre order within a column, and the bounds that turn big columns and
 * long chains into counts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { depths, layoutWorkflow, type GraphInput } from '../../src/dashboard/views/graph_layout.ts';

const job = (id: number, parents: number[] = [], status = 'done', kind = 'k'): GraphInput => ({
  id: String(id),
  kind,
  status,
  queue: 'default',
  parents: parents.map(String),
});

function fanIn(n: number): GraphInput[] {
  const parents = Array.from({ length: n }, (_, i) => job(i + 1));
  const all = parents.map((p) => Number(p.id));
  return [...parents, job(n + 1, all, 'blocked', 'merge'), job(n + 2, [n + 1], 'blocked', 'email')];
}

describe('depths', () => {
  it('is the longest path from a job without parents, and places jobs of a cycle after the rest', () => {
    // 1 → 2 → 3, and 1 → 3 directly: 3 stands after 2, not beside it.
    assert.deepEqual(
      [...depths([job(1), job(2, [1]), job(3, [1, 2])])],
      [
        ['1', 0],
        ['2', 1],
        ['3', 2],
      ],
    );
    // A parent outside the set counts as none.
    assert.equal(depths([job(5, [4])]).get('5'), 0);
    const cyclic = depths([job(1), job(2, [1, 3]), job(3, [2])]);
    assert.equal(cyclic.get('1'), 0);
    assert.equal(cyclic.get('2'), 1);
    assert.equal(cyclic.get('3'), 2);
  });
});

describe('layoutWorkflow', () => {
  it('draws a 20 → 1 → 1 fan-in job by job, in three columns, the fan-in beside its parents', () => {
    const l = layoutWorkflow(fanIn(20));
    assert.equal(l.collapsed, 'none');
    assert.deepEqual([l.columns, l.rows, l.depth], [3, 20, 2]);
    assert.equal(l.boxes.length, 22);
    assert.ok(l.boxes.every((b) => b.job));
    assert.deepEqual(
      l.boxes.filter((b) => b.column === 0).map((b) => [b.key, b.row]),
      Array.from({ length: 20 }, (_, i) => [String(i + 1), i]),
      'parents in id order (ids compared as numbers)',
    );
    assert.equal(l.edges.length, 21);
    assert.ok(l.edges.every((e) => e.count === 1));
  });

  it('orders a column by its parents’ rows, so two chains side by side do not cross', () => {
    // 2 and 1 are roots; 3 depends on 2, 4 on 1: 4 goes next to 1 (row 0), 3 next to 2.
    const l = layoutWorkflow([job(1), job(2), job(3, [2]), job(4, [1])]);
    const row = (key: string) => l.boxes.find((b) => b.key === key)?.row;
    assert.deepEqual([row('1'), row('2'), row('4'), row('3')], [0, 1, 0, 1]);
  });

  it('counts a column above the layer limit in one box, and joins its edges into one with their count', () => {
    const nodes = fanIn(100);
    nodes[0] = job(1, [], 'failed');
    const l = layoutWorkflow(nodes);
    assert.equal(l.collapsed, 'layers');
    const group = l.boxes.find((b) => b.group);
    assert.deepEqual(group?.group, { total: 100, byStatus: { done: 99, failed: 1 }, kinds: ['k'], depths: [0, 0] });
    assert.ok(
      l.boxes.some((b) => b.job?.kind === 'merge'),
      'the fan-in job is still drawn',
    );
    assert.deepEqual(
      l.edges.map((e) => [e.from, e.to, e.count]),
      [
        ['layer-0', '101', 100],
        ['101', '102', 1],
      ],
    );
  });

  it('counts the largest columns while more than the node limit would be drawn', () => {
    // Ten columns of 35 (each under the layer limit of 40) is 350 jobs, over 300.
    const nodes: GraphInput[] = [];
    for (let c = 0; c < 10; c++)
      for (let r = 0; r < 35; r++) nodes.push(job(c * 35 + r + 1, c === 0 ? [] : [(c - 1) * 35 + r + 1]));
    const l = layoutWorkflow(nodes);
    assert.equal(l.collapsed, 'layers');
    assert.ok(l.boxes.filter((b) => b.job).length <= 300);
    assert.equal(l.boxes.filter((b) => b.group).length, 2);
    assert.equal(
      l.boxes.reduce((n, b) => n + (b.group?.total ?? 1), 0),
      350,
      'every job is drawn or counted',
    );
  });

  it('draws a chain longer than the column limit as bands of depths', () => {
    const chain = Array.from({ length: 1000 }, (_, i) => job(i + 1, i === 0 ? [] : [i], i < 500 ? 'done' : 'blocked'));
    const l = layoutWorkflow(chain);
    assert.equal(l.collapsed, 'bands');
    assert.equal(l.depth, 999);
    assert.ok(l.columns <= 60, `${l.columns} columns`);
    assert.equal(
      l.boxes.reduce((n, b) => n + (b.group?.total ?? 0), 0),
      1000,
    );
    assert.deepEqual(l.boxes[0]?.group?.depths, [0, 16]);
    assert.equal(l.edges.length, l.columns - 1, 'one edge between neighbouring bands');
  });

  it('lays out nothing for no jobs', () => {
    const l = layoutWorkflow([]);
    assert.deepEqual([l.boxes.length, l.edges.length, l.columns, l.rows], [0, 0, 0, 0]);
  });
});
