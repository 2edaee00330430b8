/**
 * Cluster mode's decisions as pure functions: the process count of `auto`
 * (cgroup quota), the restart back-off, the hang watch and its bound, what
 * "enough children ready" means,
 * the per-child labels and retired counters of the aggregated metrics, and
 * the `cluster` configuration keys.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { Counter, Gauge, Registry } from 'prom-client';
import { aggregate, cumulative, labelChild, retire } from '../../src/cluster/aggregate.ts';
import { availableCpus, quotaCpus, resolveProcesses } from '../../src/cluster/cpus.ts';
import { HangWatch, hangLimitMs, MAX_CREDIT_MS, MIN_HANG_MS } from '../../src/cluster/hang_watch.ts';
import { enoughReady } from '../../src/cluster/http.ts';
import type { MetricsJson } from '../../src/cluster/messages.ts';
import {
  MAX_RESTART_DELAY_MS,
  nextStreak,
  recycleReason,
  restartDelayMs,
  STABLE_MS,
} from '../../src/cluster/restart_delay.ts';
import { loadConfig } from '../../src/config/index.ts';
import { groupSupervisors, supervisorsTable } from '../../src/dashboard/views/supervisors.ts';
import { BIN } from '../helpers/supervisor.ts';

describe('cluster: process count', () => {
  it('reads the cgroup v2 quota, rounding a fraction up', () => {
    assert.equal(quotaCpus('max 100000\n'), undefined);
    assert.equal(quotaCpus('200000 100000'), 2);
    assert.equal(quotaCpus('150000 100000'), 2);
    assert.equal(quotaCpus('50000 100000'), 1);
    assert.equal(quotaCpus(undefined), undefined);
    assert.equal(quotaCpus('garbage'), undefined);
  });

  it('auto is the smaller of the CPUs available and the quota', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-cpu-'));
    const file = path.join(dir, 'cpu.max');
    writeFileSync(file, '100000 100000\n');
    assert.equal(availableCpus(file), 1);
    writeFileSync(file, 'max 100000\n');
    assert.equal(availableCpus(file), availableParallelism());
    assert.equal(availableCpus(path.join(dir, 'missing')), availableParallelism());
    assert.equal(
      resolveProcesses('auto', () => 6),
      6,
    );
    assert.equal(
      resolveProcesses(3, () => 6),
      3,
    );
  });
});

describe('cluster: restart back-off', () => {
  it('first crash at once, then 1, 2, 4 s … capped at 30 s; a stable run ends the streak', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 20].map(restartDelayMs), [
      0,
      1000,
      2000,
      4000,
      8000,
      16000,
      MAX_RESTART_DELAY_MS,
      MAX_RESTART_DELAY_MS,
    ]);
    assert.equal(nextStreak(0, 10), 1);
    assert.equal(nextStreak(3, 100), 4);
    assert.equal(nextStreak(5, STABLE_MS), 1);
  });

  it('recycles at maxJobs finished or above maxRssMb resident; 0 turns each off', () => {
    const MB = 1024 * 1024;
    assert.equal(recycleReason({ jobs: 2999, rssBytes: 10 * MB }, { maxJobs: 3000, maxRssMb: 0 }), undefined);
    assert.equal(recycleReason({ jobs: 3000, rssBytes: 10 * MB }, { maxJobs: 3000, maxRssMb: 0 }), 'maxJobs');
    assert.equal(recycleReason({ jobs: 5, rssBytes: 513 * MB }, { maxJobs: 0, maxRssMb: 512 }), 'maxRssMb');
    assert.equal(recycleReason({ jobs: 5, rssBytes: 512 * MB }, { maxJobs: 0, maxRssMb: 512 }), undefined);
    assert.equal(recycleReason({ jobs: 1e9, rssBytes: 1e12 }, { maxJobs: 0, maxRssMb: 0 }), undefined);
  });
});

describe('cluster: hung processes', () => {
  it('the bound is half the lease, never under 5 s', () => {
    assert.equal(hangLimitMs(15_000), 7500);
    assert.equal(hangLimitMs(60_000), 30_000);
    assert.equal(hangLimitMs(10_000), MIN_HANG_MS);
    assert.equal(hangLimitMs(3000), MIN_HANG_MS);
  });

  it('a child silent for the bound is hung; a message starts its silence again; unheard ones are not watched', () => {
    const w = new HangWatch<string>(5000, 0);
    w.heard('a');
    w.heard('b');
    let t = 0;
    const advance = (ms: number) => {
      let hung: string[] = [];
      for (const end = t + ms; t < end;) hung = w.tick((t += 250)).map((h) => h.child);
      return hung;
    };
    assert.deepEqual(advance(3000), []);
    w.heard('a');
    assert.deepEqual(advance(1750), []);
    assert.equal(w.silentFor('b'), 4750);
    assert.deepEqual(advance(250), ['b']);
    assert.deepEqual(
      w.silentAtLeast(2000).map((h) => h.child),
      ['a', 'b'],
    );
    assert.equal(w.silentFor('c'), 0, 'a child never heard is not watched');
    w.forget('b');
    assert.deepEqual(advance(3000), ['a']);
  });

  it('a primary that was itself blocked does not blame its children: a late tick credits at most 1 s', () => {
    const w = new HangWatch<string>(5000, 0);
    w.heard('a');
    assert.deepEqual(w.tick(20_000), []);
    assert.equal(w.silentFor('a'), MAX_CREDIT_MS);
    // Its messages queued meanwhile arrive after that tick: silence over.
    w.heard('a');
    assert.equal(w.silentFor('a'), 0);
  });
});

describe('cluster: readiness', () => {
  it('enough is half the processes, rounded up', () => {
    assert.deepEqual([1, 2, 3, 4, 8].map(enoughReady), [1, 1, 2, 2, 4]);
  });
});

async function processMetrics(completed: number, threads: number, jobs: number): Promise<MetricsJson> {
  const registry = new Registry();
  new Counter({ name: 'jobvisor_jobs_completed_total', help: 'c', registers: [registry] }).inc(completed);
  new Gauge({ name: 'jobvisor_pool_threads', help: 't', registers: [registry] }).set(threads);
  new Gauge({ name: 'jobvisor_jobs', help: 'j', aggregator: 'max', registers: [registry] }).set(jobs);
  return await registry.getMetricsAsJSON();
}

describe('cluster: aggregated metrics', () => {
  it('sums counters, labels per-process series by child, takes the max of database gauges', async () => {
    const a = labelChild(await processMetrics(5, 2, 100), '0');
    const b = labelChild(await processMetrics(7, 3, 100), '1');
    const text = await aggregate([a, b]).metrics();
    assert.match(text, /^jobvisor_jobs_completed_total 12$/m);
    assert.match(text, /^jobvisor_pool_threads\{child="0"\} 2$/m);
    assert.match(text, /^jobvisor_pool_threads\{child="1"\} 3$/m);
    assert.match(text, /^jobvisor_jobs 100$/m);
  });

  it('an exited process keeps its counters in the totals, not its gauges', async () => {
    const gone = await processMetrics(5, 2, 100);
    assert.deepEqual(
      cumulative(gone).map((m) => m.name),
      ['jobvisor_jobs_completed_total'],
    );
    let retired = await retire([], gone);
    retired = await retire(retired, await processMetrics(4, 1, 90));
    const live = labelChild(await processMetrics(1, 2, 100), '0');
    const text = await aggregate([live, retired]).metrics();
    assert.match(text, /^jobvisor_jobs_completed_total 10$/m);
    assert.match(text, /^jobvisor_pool_threads\{child="0"\} 2$/m);
    assert.doesNotMatch(text, /jobvisor_pool_threads 2/);
  });
});

describe('cluster: configuration', () => {
  const load = (env: Record<string, string>) =>
    loadConfig({ env: { ...env }, configDir: '/nonexistent', cwd: tmpdir() });

  it('defaults to one process and no recycling', () => {
    const s = load({});
    assert.deepEqual(s.cluster, { processes: 1, maxRssMb: 0, maxJobs: 0 });
  });

  it('JOBVISOR_PROCESSES takes a count or auto', () => {
    assert.equal(load({ JOBVISOR_PROCESSES: '4' }).cluster.processes, 4);
    assert.equal(load({ JOBVISOR_PROCESSES: 'auto' }).cluster.processes, 'auto');
  });

  it('a bad count stops start-up with the key named', () => {
    for (const bad of ['0', 'many', '-2', '1.5'])
      assert.throws(() => load({ JOBVISOR_PROCESSES: bad }), /cluster\.processes/);
    assert.throws(() => load({ JOBVISOR_CLUSTER_MAX_JOBS: '-1' }), /cluster\.maxJobs/);
  });

  it('jobvisor start --processes with a bad value: exit 2, one line naming the key, nothing started', () => {
    const r = spawnSync(process.execPath, [BIN, 'start', '--processes', 'many'], {
      encoding: 'utf8',
      env: { ...process.env, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', NODE_ENV: 'test' },
    });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /cluster\.processes: must be "auto" or an integer from 1 to 256, got "many"/);
    assert.equal(r.stderr.trim().split('\n').length, 1);
  });
});

describe('cluster: the supervisors view', () => {
  const row = (id: string, host: string, primary: string | null, slot: number | null) => ({
    id,
    host,
    pid: 1,
    version: '0',
    queues: { default: 10 },
    queue_config: {},
    started_at: new Date(0),
    heartbeat_at: new Date(0),
    in_flight: 0,
    cluster_primary: primary,
    cluster_slot: slot,
  });

  it('groups by host, then the processes of one primary by slot, alone ones first', async () => {
    const rows = [
      row('a:2:x', 'a', 'a:1:p', 1),
      row('a:3:y', 'a', 'a:1:p', 0),
      row('a:9:z', 'a', null, null),
      row('b:5:w', 'b', null, null),
    ];
    const groups = groupSupervisors(rows);
    assert.deepEqual(
      groups.map((h) => [h.host, h.groups.map((g) => [g.primary, g.rows.map((r) => r.id)])]),
      [
        [
          'a',
          [
            [null, ['a:9:z']],
            ['a:1:p', ['a:3:y', 'a:2:x']],
          ],
        ],
        ['b', [[null, ['b:5:w']]]],
      ],
    );
    const text = String(await supervisorsTable(rows));
    assert.match(text, /primary a:1:p: 2 processes[\s\S]*child 0: a:3:y[\s\S]*child 1: a:2:x/);
    assert.match(text, /<tr class="group" data-host="b">/);
  });
});
