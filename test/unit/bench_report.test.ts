/**
 * The bench's table and the limits scenario's ratio rows (src/bench/report.ts,
 * src/bench/limits.ts): a target is the ratio of two variants in each round,
 * and a row that is a ratio is not compared with the rows above it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LIMITS_TARGETS, limitsRatios } from '../../src/bench/limits.ts';
import { formatTable, makeRow } from '../../src/bench/report.ts';

const rowOf = (name: string, values: number[]) => makeRow('limits 10', `jobvisor ${name}`, 'jobs/s', values);

describe('bench report', () => {
  it('divides each round by the same round, not the medians of different rounds', () => {
    const rows = [
      rowOf('no limit', [100, 200, 300]),
      rowOf('no limit, prefetch 2000', [400, 400, 600]),
      rowOf('globalConcurrency 50', [90, 100, 240]),
    ];
    const [global] = limitsRatios('limits 10', rows);
    assert.equal(global?.system, 'globalConcurrency 50 ÷ no limit');
    assert.deepEqual(global?.values, [0.9, 0.5, 0.8]);
    assert.equal(global?.median, 0.8, 'the median of the ratios; the medians would give 0.5');
    assert.deepEqual(global?.extra, {
      per: 'round',
      target: LIMITS_TARGETS['globalConcurrency 50']?.target,
      over: 'no limit',
      overPrefetch: [0.225, 0.25, 0.4],
    });
  });

  it('gives no row to a target whose variants ran a different number of rounds (one failed)', () => {
    const rows = [rowOf('no limit', [100, 200]), rowOf('globalConcurrency 50', [90])];
    assert.deepEqual(limitsRatios('limits 10', rows), []);
  });

  it('compares jobs/s rows with the first row, and leaves ratio rows alone', () => {
    const table = formatTable([
      rowOf('no limit', [100]),
      rowOf('globalConcurrency 50', [80]),
      makeRow('limits 10, per round', 'globalConcurrency 50 ÷ no limit', '×', [0.8]),
      makeRow('limits 10, per round', 'perKeyConcurrency 1, 100 keys ÷ no limit', '×', [0.5]),
    ]);
    const line = (system: string) => table.split('\n').find((l) => l.includes(system)) ?? '';
    assert.match(line('jobvisor globalConcurrency 50'), /1\.25x$/);
    assert.match(line('perKeyConcurrency 1, 100 keys ÷ no limit'), /0\.50\s+×\s+0 %$/);
  });
});
