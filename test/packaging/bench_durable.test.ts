/**
 * The durable-steps scenarios of `jobvisor bench` keep working: steps,
 * sleepers and signals run once with a tiny N on the test server, every
 * sleeper wakes and every waiter resumes, and each reports a finite figure.
 * A file of its own: bench.test.ts already takes most of the runner's 300 s
 * per file on a loaded machine. Speed is not asserted (BENCHMARKS.md).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runBench } from '../helpers/cli.ts';

const bench = runBench;

describe('jobvisor bench: durable steps', () => {
  it('runs the durable-steps scenarios with a tiny N: every sleeper woke, every waiter resumed', async () => {
    const r = await bench([
      '--json',
      '--runs',
      '1',
      '--jobs',
      '20',
      '--sleep',
      '300ms',
      '--scenario',
      'steps,sleepers,signals',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout
      .trim()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as { scenario: string; system: string; median: number; extra: { resumed?: number[] } },
      );
    const named = (s: string) => rows.find((row) => row.scenario === s);
    for (const s of [
      'steps 20',
      'steps 20: ctx.step p50',
      'steps 20: ctx.step p99',
      'steps 20: WAL per recorded step',
      'sleepers 20 × 300 ms: wake lateness p99',
      'sleepers 20 one per 50 ms × 300 ms: wake lateness p99',
      'signals 20 in one commit: resume after commit p99',
    ])
      assert.ok(Number.isFinite(named(s)?.median), `scenario ${s} reported a figure`);
    assert.deepEqual(named('sleepers 20 × 300 ms: wake lateness p99')?.extra.resumed, [20], 'every sleeper woke');
    assert.deepEqual(
      named('signals 20 in one commit: resume after commit p99')?.extra.resumed,
      [20],
      'every waiter resumed',
    );
    assert.deepEqual(
      rows.filter((row) => row.scenario === 'steps 20').map((row) => row.system),
      ['jobvisor 1-step job', 'jobvisor 10-step job'],
    );
  });
});
