/**
 * The rate limit across a cluster, with real supervisor processes and a real
 * PostgreSQL: rateLimit 200/s over three supervisors. Every run records its
 * start from inside the task (flow_record.js); every sliding 1-s window of
 * starts holds at most 200 (the starts as scheduled, and every start the
 * tasks saw), and the rate over 30 s is at least 90 % of the limit.
 * It runs alone (test/run.ts): beside other files a supervisor starved of CPU
 * hands slots back. The other cluster-wide limits: chaos_flow_limits.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { enqueueMany, type JobSpec } from '../../src/queue/enqueue.ts';
import { until } from '../helpers/chaos/measure.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { createRunsTable, maxStartsInWindow } from '../helpers/flow.ts';
import { fixtureFleet, type SpawnedSupervisor } from '../helpers/supervisor.ts';

let db: TestDatabase;

/** How long the case measures, as the flow-control contract asks. */
const RATE_SECONDS = 30;
const CONFIG = {
  pool: { maxThreads: 1, dbPoolSize: 10 },
  queues: { rated: { concurrency: 100, jobsPerThread: 100, rateLimit: { count: 200, period: '1s' } } },
  jobs: { lease: '3000ms' },
  reaper: { interval: '500ms' },
  poll: { interval: '1s' },
};

const fleet = fixtureFleet(() => db.url, CONFIG);

const waitFor = (what: string, check: () => Promise<boolean>, timeoutMs: number) =>
  until(what, check, (ok) => ok, timeoutMs, 100);

let working: SpawnedSupervisor[] = [];

before(async () => {
  db = await createTestDatabase('chaos_flow_rate');
  await createRunsTable(db.pool);
  working = await Promise.all([fleet.start(), fleet.start(), fleet.start()]);
});
after(async () => {
  await fleet.kill();
  await db.drop();
});

describe('a cluster-wide rate limit', () => {
  it(`rateLimit 200/s over three supervisors for ${RATE_SECONDS} s: every sliding 1-s window holds at most 200 starts; ≥ 90 % of the slots handed out, ≥ 80 % started`, async () => {
    const jobs: JobSpec[] = [];
    // A deep backlog: more than the limit lets start in the measured span.
    for (let i = 0; i < 200 * (RATE_SECONDS + 3); i++) jobs.push({ kind: 'flow_record', queue: 'rated', payload: {} });
    await enqueueMany(db.pool, jobs);
    await waitFor(
      `${RATE_SECONDS} s of starts`,
      async () => {
        const { rows } = await db.pool.query<{ span: string | null }>(
          "SELECT max(started) - min(started) AS span FROM flow_runs WHERE queue = 'rated'",
        );
        return Number(rows[0]?.span ?? 0) >= (RATE_SECONDS + 1) * 1000;
      },
      (RATE_SECONDS + 30) * 1000,
    );
    // Each run's start as the task saw it, beside the start its claim scheduled (jobs.started_at).
    const { rows } = await db.pool.query<{ started: string; scheduled: string; pid: number }>(
      `SELECT f.started, extract(epoch FROM j.started_at) * 1000 AS scheduled, f.pid
         FROM flow_runs AS f JOIN jobvisor.jobs AS j ON j.id = f.job_id WHERE f.queue = 'rated'`,
    );
    const runs = rows.map((r) => ({ started: Number(r.started), scheduled: Number(r.scheduled), pid: r.pid }));
    const first = Math.min(...runs.map((r) => r.started));
    const inSpan = runs.filter((r) => r.started >= first + 500 && r.started < first + 500 + RATE_SECONDS * 1000);
    // A supervisor starves of CPU at times (the test machine is shared): a run
    // that reaches its thread more than 20 ms after its slot is not started but
    // re-paced (start_window.ts), so every start is on time: the slots are
    // (1 s + 25 ms) / 200 apart, and a 1-s window of starts holds the slots of at
    // most 1,020 ms (the 5 ms left cover Date.now()'s whole milliseconds).
    const onTime = runs.filter((r) => r.started - r.scheduled <= 20);
    const late = runs.length - onTime.length;
    const worstOnTime = maxStartsInWindow(
      onTime.map((r) => r.started),
      1000,
    );
    const worstAll = maxStartsInWindow(
      runs.map((r) => r.started),
      1000,
    );
    const worstScheduled = maxStartsInWindow(
      runs.map((r) => r.scheduled),
      1000,
    );
    const lags = runs.map((r) => r.started - r.scheduled).sort((x, y) => x - y);
    // Claimed rated jobs that did not start at their slot (given back, claimed again for a new one), by why.
    const handedBack = new Map<string, number>();
    for (const l of working.flatMap((s) => s.logs).filter((l) => l.msg === 'jobs handed back')) {
      const reason = String(l.reason);
      handedBack.set(reason, (handedBack.get(reason) ?? 0) + (l.jobIds as unknown[]).length);
    }
    console.log(
      `rateLimit 200/s: ${inSpan.length} starts in ${RATE_SECONDS} s (${(inSpan.length / (2 * RATE_SECONDS)).toFixed(1)} %); busiest 1-s window: ` +
        `${worstScheduled} scheduled, ${worstOnTime} on-time task starts, ${worstAll} with ${late} late ones; ` +
        `slot to task start p50 ${lags[Math.floor(lags.length / 2)]?.toFixed(1)} ms, max ${lags.at(-1)?.toFixed(1)} ms; ` +
        `supervisors ${new Set(runs.map((r) => r.pid)).size}; handed back ${JSON.stringify(Object.fromEntries(handedBack))}`,
    );
    assert.ok(worstScheduled <= 200, `busiest 1-s window of scheduled starts held ${worstScheduled}`);
    assert.ok(worstOnTime <= 200, `busiest 1-s window of on-time task starts held ${worstOnTime}`);
    assert.ok(worstAll <= 200, `busiest 1-s window of all task starts held ${worstAll}`);
    // Liveness: the limiter hands out at least 90 % of the slots. A slot whose job
    // reached its thread too late is handed back, not started (the exactness above),
    // and on a starved machine that took up to 11 % of the slots (631 in a run where
    // the test files kept both cores 90 % busy), so the starts themselves must reach
    // 80 %: 95-97 % when the supervisors get their CPU.
    const expected = 200 * RATE_SECONDS;
    const missedSlots = [...handedBack].filter(([why]) => why.includes('rate-limit start slot'));
    const missed = missedSlots.reduce((n, [, count]) => n + count, 0);
    assert.ok(
      inSpan.length + missed >= 0.9 * expected,
      `at least 90 % of ${expected} slots in ${RATE_SECONDS} s, got ${inSpan.length} starts and ${missed} missed`,
    );
    assert.ok(
      inSpan.length >= 0.8 * expected,
      `at least 80 % of ${expected} started in ${RATE_SECONDS} s, got ${inSpan.length}`,
    );
    assert.equal(new Set(runs.map((r) => r.pid)).size, 3, 'all three supervisors started jobs');
  });
});
