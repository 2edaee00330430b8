/**
 * The benchmark keeps working: every scenario runs once with a tiny N on the
 * test server and reports a finite, positive figure. Speed is not asserted
 * here (it is measured and reported by `jobvisor bench`, see BENCHMARKS.md).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { peersNodeProblem } from '../../src/bench/peers.ts';
import { runBench } from '../helpers/cli.ts';

const bench = runBench;

describe('jobvisor bench', () => {
  it('runs every scenario with a tiny N and prints one JSON object per result', async () => {
    const r = await bench([
      '--json',
      '--runs',
      '1',
      '--jobs',
      '300',
      '--burst-jobs',
      '300',
      '--samples',
      '10',
      '--processes',
      '2',
      '--scenario',
      'burst,cold,startup,enqueue,process,processes,pickup,deep,sustained,limits',
      '--deep-pending',
      '3000',
      '--deep-done',
      '5000',
      '--duration',
      '3s',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout
      .trim()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as {
            scenario: string;
            system: string;
            median: number;
            unit: string;
            extra: { machine: { node: string } };
          },
      );
    for (const row of rows) assert.equal(row.extra.machine.node, process.version, 'each row names its Node.js');
    const scenarios = new Set(rows.map((row) => row.scenario));
    for (const s of [
      'burst 300',
      'cold 300',
      'startup: process start → /readyz 200',
      'startup: process start → first job done',
      'enqueue 300',
      'process 300',
      'process 300 x2',
      'pickup p50',
      'pickup p99',
      'claim+complete of 50',
      'sustained',
      'limits 300',
    ])
      assert.ok(scenarios.has(s), `scenario ${s} reported`);
    assert.equal(rows.filter((row) => row.scenario === 'limits 300').length, 6, 'every flow-control variant ran');
    const burstSystems = rows.filter((row) => row.scenario === 'burst 300').map((row) => row.system);
    assert.deepEqual(burstSystems.sort(), [
      'jobvisor concurrency-only',
      'jobvisor concurrency-only +ANALYZE',
      'jobvisor tuned',
      'jobvisor tuned +ANALYZE',
      'jobvisor tuned-keep-none',
      'jobvisor tuned-keep-none +ANALYZE',
    ]);
    // A pickup can read 0 ms: the task may start before the INSERT's COMMIT reply is read, and
    // on a loaded host (CI) that is half of the 10 samples (src/bench/pickup.ts counts it as 0).
    for (const row of rows)
      assert.ok(
        Number.isFinite(row.median) && (row.median > 0 || (row.scenario.startsWith('pickup ') && row.median === 0)),
        `${row.scenario} ${row.system}: ${row.median} ${row.unit}`,
      );
  });

  it('names the Node.js it ran on, in the header and under the table', async () => {
    const r = await bench(['--runs', '1', '--jobs', '50', '--scenario', 'enqueue']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`^jobvisor bench: .*, Node ${process.version}, PostgreSQL `, 'm'));
    assert.match(
      r.stdout,
      new RegExp(`^every row ran on Node\\.js ${process.version}, PostgreSQL [\\d.]+, \\d+ cores$`, 'm'),
    );
  });

  it('runs the peers on its own Node.js: below 22.18 it refuses them, naming both versions', () => {
    assert.equal(peersNodeProblem('v22.18.0'), undefined);
    assert.equal(peersNodeProblem('v24.1.0'), undefined);
    for (const old of ['v20.20.2', 'v22.12.0'])
      assert.match(peersNodeProblem(old) ?? '', new RegExp(`need Node\\.js ≥ 22\\.18 .*this is Node\\.js ${old}`));
  });

  it(
    'rejects --peers on a Node.js the peers cannot run on, with exit 2',
    { skip: peersNodeProblem() === undefined ? `Node.js ${process.version} runs the peers` : false },
    async () => {
      const r = await bench(['--peers', 'all', '--scenario', 'enqueue']);
      assert.equal(r.code, 2);
      assert.match(
        r.stderr,
        /^jobvisor: bench: the peers need Node\.js ≥ 22\.18 .* run the bench on Node\.js 22 or 24/,
      );
    },
  );

  it('rejects bad options with exit 2', async () => {
    const r = await bench(['--scenario', 'warp-speed']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown scenario "warp-speed"/);
  });
});
