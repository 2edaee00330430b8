/**
 * Chaos for workflows, with supervisors as real processes on a PostgreSQL of
 * this file's own:
 *   - two supervisors complete the last two parents of a child at the same
 *     moment (each parent's queue is served by one of them; the parents wait
 *     for each other, then end together), 150 times;
 *   - a supervisor is SIGKILLed while it completes parents of 200 workflows,
 *     and a replacement started;
 *   - the server restarts (immediate shutdown) in the middle of a fan-in of
 *     500 parents.
 * Each time, counted from inside the task: every child runs after all its
 * parents are done (what ctx.parents() showed at its start, and its start
 * against their finish times), exactly once where no supervisor died, and
 * none is left blocked.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { enqueueMany, type JobSpec } from '../../src/queue/enqueue.ts';
import { count, report, until } from '../helpers/chaos/measure.ts';
import { createMigratedDatabase, startChaosPostgres, type ChaosPostgres } from '../helpers/chaos/postgres.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';
import { WF_TABLES } from '../helpers/workflow.ts';

let server: ChaosPostgres;
let url: string;
let pool: pg.Pool;
const supervisors: SpawnedSupervisor[] = [];

const config = (queues: Record<string, unknown>) => ({
  pool: { maxThreads: 1, dbPoolSize: 6 },
  queues: { default: { concurrency: 20, jobsPerThread: 20 }, ...queues },
  jobs: { lease: '4s', maxAttempts: 25 },
  reaper: { interval: '500ms' },
  poll: { interval: '1s' },
  backoff: { base: '100ms', max: '1s' },
});
const start = async (queues: Record<string, unknown>) => {
  const s = await spawnSupervisor({
    databaseUrl: url,
    tasksDir: FIXTURE_TASKS,
    config: config(queues),
    readyTimeoutMs: 60_000,
  });
  supervisors.push(s);
  return s;
};

before(async () => {
  server = await startChaosPostgres();
  url = await createMigratedDatabase(server, 'chaos_workflow');
  pool = new pg.Pool({ connectionString: url, max: 3, connectionTimeoutMillis: 5000 });
  pool.on('error', () => {});
  await pool.query(`${WF_TABLES}
    CREATE TABLE wf_arrivals (pair int, job_id bigint, PRIMARY KEY (pair, job_id));`);
});

after(async () => {
  await Promise.all(supervisors.map((s) => s.stop('SIGKILL').catch(() => {})));
  await pool?.end().catch(() => {});
  await server?.destroy();
});

/** Children that ran early (a parent not done at their start, or finished after it), runs per child, children not done. */
async function verdict(children: string[]) {
  const early = await count(
    pool,
    `SELECT count(*)::int AS n FROM wf_runs r WHERE r.job_id = ANY ($1::bigint[])
        AND ((r.parents->>'notDone')::int > 0 OR EXISTS (
             SELECT 1 FROM jobvisor.job_dependencies d JOIN jobvisor.jobs p ON p.id = d.parent_id
              WHERE d.child_id = r.job_id AND (p.finished_at IS NULL OR p.finished_at > r.started)))`,
    [children],
  );
  const { rows } = await pool.query<{ runs: number; n: number }>(
    `SELECT runs, count(*)::int AS n FROM (
       SELECT c.id, count(r.run)::int AS runs FROM unnest($1::bigint[]) AS c(id) LEFT JOIN wf_runs r ON r.job_id = c.id GROUP BY c.id) x
     GROUP BY runs ORDER BY runs`,
    [children],
  );
  const notDone = await count(
    pool,
    "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY ($1::bigint[]) AND status <> 'done'",
    [children],
  );
  return { early, runs: Object.fromEntries(rows.map((r) => [r.runs, r.n])), notDone };
}

const allDone = (children: string[], timeoutMs: number) =>
  until(
    'every child done',
    () =>
      count(pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY ($1::bigint[]) AND status = 'done'", [
        children,
      ]),
    (n) => n === children.length,
    timeoutMs,
    200,
  );

describe('chaos: workflows', () => {
  it('two supervisors completing the last two parents of a child at the same moment: it runs once, after both', async () => {
    await start({ qa: { concurrency: 20, jobsPerThread: 20 } });
    await start({ qb: { concurrency: 20, jobsPerThread: 20 } });
    const PAIRS = 150;
    const specs: JobSpec[] = [];
    for (let pair = 0; pair < PAIRS; pair++) {
      const base = specs.length;
      specs.push(
        { kind: 'wf_chaos', queue: 'qa', payload: { pair } },
        { kind: 'wf_chaos', queue: 'qb', payload: { pair } },
        { kind: 'wf_chaos', dependsOn: [{ index: base }, { index: base + 1 }] },
      );
    }
    const ids = (await enqueueMany(pool, specs)).map((r) => r.id);
    const children = ids.filter((_, i) => i % 3 === 2);
    await allDone(children, 60_000);
    const v = await verdict(children);
    // How close together the two parents' done writes were.
    const gaps = await pool.query<{ p50: number; max: number }>(
      `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY gap) AS p50, max(gap) AS max FROM (
         SELECT abs(extract(epoch FROM a.finished_at - b.finished_at) * 1000) AS gap
           FROM jobvisor.jobs a JOIN jobvisor.jobs b ON b.id = a.id + 1 WHERE a.id = ANY ($1::bigint[])) g`,
      [ids.filter((_, i) => i % 3 === 0)],
    );
    report('two last parents at once', { pairs: PAIRS, ...v, doneGapMs: gaps.rows[0] });
    assert.deepEqual(v, { early: 0, runs: { 1: PAIRS }, notDone: 0 });
    const owners = await count(
      pool,
      `SELECT count(DISTINCT locked_by)::int AS n FROM jobvisor.jobs WHERE id = ANY ($1::bigint[])`,
      [ids.filter((_, i) => i % 3 !== 2)],
    );
    assert.equal(owners, 2, 'the parents were completed by two supervisors');
    await Promise.all(supervisors.splice(0).map((s) => s.stop('SIGTERM')));
  });

  it('a supervisor SIGKILLed while it completes parents: every child runs after all its parents, none left blocked', async () => {
    const first = await start({});
    await start({});
    const WORKFLOWS = 200;
    const specs: JobSpec[] = [];
    for (let w = 0; w < WORKFLOWS; w++) {
      const base = specs.length;
      for (let p = 0; p < 5; p++) specs.push({ kind: 'wf_chaos', payload: { ms: 5 + ((w + p) % 30) } });
      specs.push({ kind: 'wf_chaos', dependsOn: [0, 1, 2, 3, 4].map((p) => ({ index: base + p })) });
    }
    const ids = (await enqueueMany(pool, specs)).map((r) => r.id);
    const children = ids.filter((_, i) => i % 6 === 5);
    const parents = ids.filter((_, i) => i % 6 !== 5);
    await until(
      'a third of the parents done',
      () =>
        count(pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY ($1::bigint[]) AND status = 'done'", [
          parents,
        ]),
      (n) => n >= parents.length / 3,
      60_000,
    );
    await first.stop('SIGKILL');
    await start({});
    await allDone(children, 90_000);
    const v = await verdict(children);
    const blocked = await count(pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = 'blocked'");
    report('kill -9 while completing parents', { workflows: WORKFLOWS, ...v, blocked });
    assert.equal(v.early, 0);
    assert.equal(v.notDone, 0);
    assert.equal(blocked, 0);
    assert.equal(v.runs[0], undefined, 'every child ran');
  });

  it('a PostgreSQL restart in the middle of a fan-in of 500: the fan-in runs once, after all 500', async () => {
    const specs: JobSpec[] = Array.from({ length: 500 }, (_, i) => ({
      kind: 'wf_chaos',
      payload: { ms: 10 + (i % 20) },
    }));
    specs.push({ kind: 'wf_chaos', dependsOn: specs.map((_, i) => ({ index: i })) });
    const ids = (await enqueueMany(pool, specs)).map((r) => r.id);
    const child = ids[500] as string;
    await until(
      'a third of the fan-out done',
      () =>
        count(pool, "SELECT count(*)::int AS n FROM jobvisor.jobs WHERE id = ANY ($1::bigint[]) AND status = 'done'", [
          ids,
        ]),
      (n) => n >= 170,
      60_000,
    );
    await server.stop('immediate');
    await new Promise((r) => setTimeout(r, 2000)); // the outage itself: the server stays down this long
    await server.start();
    await allDone([child], 90_000);
    const v = await verdict([child]);
    const [run] = (await pool.query('SELECT parents FROM wf_runs WHERE job_id = $1', [child])).rows;
    report('restart mid fan-in', { ...v, parents: run?.parents });
    assert.deepEqual(v, { early: 0, runs: { 1: 1 }, notDone: 0 });
    assert.deepEqual(run?.parents, { n: 500, notDone: 0 });
  });
});
