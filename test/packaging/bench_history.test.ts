/**
 * The history scenario of `jobvisor bench`: its depths, its fits, and one tiny
 * run (depths 0, 2,000 and 4,000, a burst of 300) that reports every operation
 * at every depth and both extrapolations. Speed is not asserted.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { extrapolate, leastSquares } from '../../src/bench/history_report.ts';
import { historyDepths } from '../../src/bench/options.ts';
import { InputError } from '../../src/errors.ts';
import { runBench } from '../helpers/cli.ts';

const bench = runBench;

interface JsonRow {
  scenario: string;
  system: string;
  median: number;
  unit: string;
  extra: {
    depth: number;
    ratioToEmpty: number;
    extrapolated?: boolean;
    fit?: string;
    slope?: number;
    emptyNow?: number;
    ratioToEmptyNow?: number;
  };
}

const OPERATIONS = [
  'history: burst 300',
  'history: claim of 50',
  'history: completion of 50',
  'history: dashboard overview reads',
  'history: stats reads',
  'history: /metrics database reads',
];

describe('the history scenario', () => {
  it('takes depths from 0 upwards, with k and M', () => {
    assert.deepEqual(historyDepths('0,5M,10M,20000000'), [0, 5_000_000, 10_000_000, 20_000_000]);
    assert.deepEqual(historyDepths('0,500k'), [0, 500_000]);
    for (const bad of ['5M,10M', '0', '0,10M,5M', '0,0', '0,five', '0,-5', '0,2G'])
      assert.throws(() => historyDepths(bad), InputError, bad);
  });

  it('fits both curves by least squares and extrapolates them', () => {
    assert.deepEqual(leastSquares([1, 2, 3], [5, 7, 9]), { intercept: 3, slope: 2 });
    assert.equal(leastSquares([4, 4], [1, 2]), undefined);
    // value = 2 + 3·log10(D) exactly: the log fit finds it, the linear fit only approximates it.
    const points = [5e6, 1e7, 2e7].map((depth) => ({ depth, value: 2 + 3 * Math.log10(depth) }));
    const [log, linear] = extrapolate([{ depth: 0, value: 1000 }, ...points], 1e8);
    assert.equal(log?.fit, 'log');
    assert.ok(Math.abs((log?.value ?? 0) - 26) < 1e-9, `${log?.value}`);
    assert.ok(Math.abs((log?.line.slope ?? 0) - 3) < 1e-9);
    assert.equal(linear?.fit, 'linear');
    assert.ok((linear?.value ?? 0) > 26, 'the straight line overshoots a logarithm');
  });

  it('runs on tiny depths and reports every operation at every depth, then both extrapolations', async () => {
    const r = await bench([
      '--json',
      '--runs',
      '1',
      '--jobs',
      '300',
      '--scenario',
      'history',
      '--history-depths',
      '0,2000,4000',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as JsonRow);
    for (const scenario of OPERATIONS) {
      const of = rows.filter((row) => row.scenario === scenario);
      const measured = of.filter((row) => row.extra.extrapolated !== true);
      assert.deepEqual(
        measured.map((row) => row.extra.depth),
        [0, 2000, 4000],
        `${scenario}: ${of.map((row) => row.system).join('; ')}`,
      );
      for (const row of measured) {
        assert.ok(Number.isFinite(row.median) && row.median > 0, `${scenario} ${row.system}: ${row.median}`);
        assert.ok(Number.isFinite(row.extra.ratioToEmpty) && row.extra.ratioToEmpty > 0, `${scenario} ${row.system}`);
      }
      assert.equal(measured[0]?.extra.ratioToEmpty, 1);
      // Everything is timed on an empty twin too, side by side, from the first depth on.
      for (const row of measured) {
        const beside = row.extra.depth > 0;
        assert.equal(
          Number.isFinite(row.extra.emptyNow) && (row.extra.emptyNow ?? 0) > 0,
          beside,
          `${scenario} ${row.system}`,
        );
        assert.equal(Number.isFinite(row.extra.ratioToEmptyNow), beside, `${scenario} ${row.system}`);
      }
      const fits = of.filter((row) => row.extra.extrapolated === true);
      assert.deepEqual(
        fits.map((row) => [row.extra.depth, row.extra.fit]),
        [
          [100_000_000, 'a + b·log10(D)'],
          [100_000_000, 'a + b·D'],
        ],
        scenario,
      );
      for (const row of fits)
        assert.ok(Number.isFinite(row.median) && Number.isFinite(row.extra.slope), `${scenario} ${row.system}`);
    }
  });
});
