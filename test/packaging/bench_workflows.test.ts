/**
 * The workflow scenarios of `jobvisor bench` (fanin, chain, workflows): the
 * graphs they enqueue, and one tiny run of each. Speed is not asserted.
 *
 * The runs need enqueueMany to write `dependsOn`. A build without it must
 * refuse to report (its numbers would be those of plain jobs); which of the
 * two is checked follows from a probe of this build, so the test needs no
 * change when workflows arrive.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { chainSpecs, fanInSpecs, smallWorkflowSpecs } from '../../src/bench/workflows.ts';
import { enqueueMany } from '../../src/queue/enqueue.ts';
import { runBench } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

const bench = runBench;

let db: TestDatabase;
/** Whether this build's enqueueMany writes the edges of `dependsOn`. */
let workflows: boolean;

before(async () => {
  db = await createTestDatabase('bench_workflows');
  await enqueueMany(db.pool, [{ kind: 'a' }, { kind: 'b', dependsOn: [{ index: 0 }] }]);
  const { rows } = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM jobvisor.job_dependencies');
  workflows = rows[0]!.n === 1;
});
after(async () => {
  await db.drop();
});

describe('the workflow scenarios', () => {
  it('build their graphs from earlier jobs of the same call', () => {
    const fan = fanInSpecs(3);
    assert.equal(fan.length, 4);
    assert.deepEqual(fan[3]?.dependsOn, [{ index: 0 }, { index: 1 }, { index: 2 }]);
    assert.ok(fan.slice(0, 3).every((s) => s.dependsOn === undefined));
    assert.deepEqual(
      chainSpecs(3).map((s) => s.dependsOn),
      [undefined, [{ index: 0 }], [{ index: 1 }]],
    );
    const small = smallWorkflowSpecs(2);
    assert.equal(small.length, 8);
    assert.deepEqual(small[7]?.dependsOn, [{ index: 4 }, { index: 5 }, { index: 6 }]);
    // Every reference points to an earlier job: no cycle can be written.
    for (const specs of [fan, chainSpecs(50), small])
      specs.forEach((s, i) =>
        (s.dependsOn ?? []).forEach((d) => assert.ok(typeof d === 'object' && d.index < i, `job ${i}`)),
      );
  });

  it('run once each with a tiny N, or refuse to report when this build has no workflows', async () => {
    const r = await bench([
      '--json',
      '--runs',
      '1',
      '--scenario',
      workflows ? 'fanin,chain,workflows' : 'chain',
      '--fanin-parents',
      '200',
      '--chain-length',
      '30',
      '--workflows',
      '100',
    ]);
    if (!workflows) {
      // The failure is reported and nothing is printed as a result.
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /started before their parent was done \(no workflows\?\)/);
      assert.equal(r.stdout, '');
      return;
    }
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { scenario: string; system: string; median: number; unit: string });
    const scenarios = rows.map((row) => `${row.scenario} | ${row.system}`);
    for (const s of [
      'fanin 200 → 1: last parent done → fan-in start | jobvisor',
      'fanin 200 → 1: WAL per job | jobvisor',
      'chain 30: link p50 (parent done → child start) | jobvisor',
      'chain 30: link p95 (parent done → child start) | jobvisor',
      'workflows 100 × (3 → 1) x2 | jobvisor dependsOn',
      'workflows 100 × (3 → 1) x2 | jobvisor 400 without dependencies',
    ])
      assert.ok(scenarios.includes(s), `${s} reported: ${scenarios.join('; ')}`);
    for (const row of rows)
      assert.ok(Number.isFinite(row.median) && row.median >= 0, `${row.scenario}: ${row.median} ${row.unit}`);
  });
});
