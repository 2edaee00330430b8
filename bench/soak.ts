/**
 * The soak: the chaos suite's faults at random, for minutes, under a steady
 * load, against a PostgreSQL of its own. Then the promise is checked: every job
 * done (or dead-lettered when it was meant to fail), each e-mail sent once,
 * nothing lost; re-runs are counted and explained.
 *
 *   npm run soak -- [--minutes 10] [--supervisors 3] [--rate 200] [--seed N] [--json]
 *
 * Faults, one every 5–20 s: SIGKILL (and a replacement), SIGTERM (and a
 * replacement), SIGSTOP past the lease, a network cut past the lease (each
 * supervisor reaches PostgreSQL through a proxy of its own), a terminated and a
 * silently dead LISTEN connection, PostgreSQL restarts (fast and immediate).
 * Load: --rate jobs/s of chaos_run (0–200 ms), welcome_email (one per user) and
 * chaos_fail (meant to dead-letter after 2 attempts). Every 30 s a probe job
 * measures pickup (the poll interval is 10 s: only LISTEN makes it fast).
 * Recovery of a fault is timed from its end (healed, resumed, restarted,
 * replaced) to every supervisor answering /readyz 200.
 * Exit status 0 when every check holds, 1 otherwise. Needs PostgreSQL binaries
 * (see test/helpers/chaos/postgres.ts); runs as root or not.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { enqueueMany, type JobSpec } from '../src/queue/enqueue.ts';
import { clockPasses, httpGet, prng, summary, until } from '../test/helpers/chaos/measure.ts';
import { createMigratedDatabase, startChaosPostgres, type ChaosPostgres } from '../test/helpers/chaos/postgres.ts';
import { startProxy, type Proxy } from '../test/helpers/chaos/proxy.ts';
import { FIXTURE_TASKS } from '../test/helpers/inprocess.ts';
import { checkPromise } from './soak_checks.ts';
import { spawnSupervisor, type SpawnedSupervisor } from '../test/helpers/supervisor.ts';

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    supervisors: { type: 'string', default: '3' },
    rate: { type: 'string', default: '200' },
    seed: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const MINUTES = Number(args.minutes);
const SUPERVISORS = Number(args.supervisors);
const RATE = Number(args.rate);
const SEED = Number(args.seed ?? Date.now() % 1_000_000);
const LEASE_MS = 6000;
const random = prng(SEED);
const say = (line: string) => process.stderr.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

interface Member {
  supervisor: SpawnedSupervisor;
  proxy: Proxy;
}

const CONFIG = {
  pool: { maxThreads: 2, dbPoolSize: 4 },
  queues: { default: { concurrency: 30, jobsPerThread: 30 } },
  jobs: { lease: `${LEASE_MS / 1000}s`, maxAttempts: 20, timeout: '30s' },
  reaper: { interval: '1s' },
  poll: { interval: '10s' },
  backoff: { base: '200ms', max: '2s' },
  shutdown: { grace: '5s' },
};

async function main(): Promise<number> {
  say(`seed ${SEED}: ${MINUTES} min, ${SUPERVISORS} supervisors, ${RATE} jobs/s`);
  const server: ChaosPostgres = await startChaosPostgres({ settings: { max_connections: 200 } });
  const members: Member[] = [];
  const everyone: SpawnedSupervisor[] = [];
  const faulted = new Set<number>();
  const faults: Array<{ kind: string; at: number; recoveredMs: number | null; pid?: number }> = [];
  const pickups: number[] = [];
  let pool: pg.Pool | undefined;
  try {
    const url = await createMigratedDatabase(server, 'soak');
    pool = new pg.Pool({ connectionString: url, max: 4, connectionTimeoutMillis: 5000 });
    pool.on('error', () => {});
    const db = pool;
    await db.query(
      'CREATE TABLE chaos_runs (job_id bigint NOT NULL, attempt int NOT NULL, pid int NOT NULL, at timestamptz DEFAULT clock_timestamp())',
    );
    await db.query(
      'CREATE TABLE public.emails_sent (user_id bigint PRIMARY KEY, job_id bigint NOT NULL, sent_at timestamptz NOT NULL DEFAULT now())',
    );

    const join = async (): Promise<Member> => {
      const proxy = await startProxy({ port: server.port });
      const supervisor = await spawnSupervisor({
        databaseUrl: proxy.urlFor(url),
        tasksDir: FIXTURE_TASKS,
        config: CONFIG,
        env: { LOG_LEVEL: 'info', WELCOME_EMAIL_SEND_MS: '20' },
        readyTimeoutMs: 120_000,
      });
      everyone.push(supervisor);
      const m = { supervisor, proxy };
      members.push(m);
      return m;
    };
    const leave = async (m: Member, signal: NodeJS.Signals) => {
      members.splice(members.indexOf(m), 1);
      faulted.add(m.supervisor.pid);
      await m.supervisor.stop(signal, 30_000);
      await m.proxy.close();
    };
    for (let i = 0; i < SUPERVISORS; i++) await join();

    // Load: a batch every 250 ms.
    let users = 0;
    let enqueued = 0;
    let producing = true;
    const producer = (async () => {
      while (producing) {
        const batch: JobSpec[] = [];
        let newUsers = 0;
        for (let i = 0; i < Math.max(1, Math.round(RATE / 4)); i++) {
          const r = random();
          if (r < 0.1) batch.push({ kind: 'welcome_email', payload: { user_id: users + ++newUsers } });
          else if (r < 0.12) batch.push({ kind: 'chaos_fail', maxAttempts: 2 });
          else batch.push({ kind: 'chaos_run', payload: { ms: Math.floor(random() * 200) } });
        }
        try {
          await enqueueMany(db, batch);
          enqueued += batch.length;
          users += newUsers;
        } catch {
          // the database is restarting: this batch was not written (all or nothing), its
          // user ids are used again by the next one; the producer carries on
        }
        await clockPasses('next batch', 250, 50);
      }
    })();

    const allReady = () =>
      until(
        'every supervisor ready',
        async () =>
          (await Promise.all(members.map((m) => httpGet(m.supervisor.metricsPort, '/readyz')))).every(
            (r) => r.status === 200,
          ),
        (ok) => ok,
        120_000,
        200,
      );
    const pick = () => members[Math.floor(random() * members.length)] as Member;
    /** Keeps a fault in place for `ms` (the fault's length is what is being injected). */
    const hold = (ms: number) => {
      const over = Date.now() + ms;
      return until(
        'fault held',
        () => Date.now(),
        (now) => now >= over,
        ms + 1000,
        100,
      );
    };

    const end = Date.now() + MINUTES * 60_000;
    let nextProbe = Date.now() + 30_000;
    while (Date.now() < end) {
      const gap = 5000 + Math.floor(random() * 15_000);
      const resumeAt = Math.min(end, Date.now() + gap);
      while (Date.now() < resumeAt) {
        if (Date.now() >= nextProbe) {
          nextProbe = Date.now() + 30_000;
          const { rows } = await db
            .query("INSERT INTO jobvisor.jobs (kind) VALUES ('chaos_noop') RETURNING id")
            .catch(() => ({ rows: [] as Array<{ id: string }> }));
          if (rows[0]) {
            const row = await until(
              'probe',
              async () =>
                (
                  await db.query(
                    'SELECT status, extract(epoch FROM started_at - created_at) * 1000 AS ms FROM jobvisor.jobs WHERE id = $1',
                    [rows[0]?.id],
                  )
                ).rows[0],
              (r) => r?.status === 'done',
              60_000,
              50,
            ).catch(() => null);
            if (row) pickups.push(Math.round(Number(row.ms)));
          }
        }
        await until(
          'between faults',
          () => Date.now(),
          (now) => now >= Math.min(resumeAt, nextProbe),
          40_000,
          100,
        );
      }
      if (Date.now() >= end) break;
      const kind = ['kill', 'term', 'freeze', 'cut', 'listener-kill', 'listener-freeze', 'pg-fast', 'pg-immediate'][
        Math.floor(random() * 8)
      ] as string;
      const at = Date.now();
      const m = pick();
      say(
        `fault ${kind}${['kill', 'term', 'freeze', 'cut', 'listener-freeze'].includes(kind) ? ` on ${m.supervisor.pid}` : ''}`,
      );
      switch (kind) {
        case 'kill':
        case 'term':
          await leave(m, kind === 'kill' ? 'SIGKILL' : 'SIGTERM');
          await join();
          break;
        case 'freeze':
          faulted.add(m.supervisor.pid);
          process.kill(m.supervisor.pid, 'SIGSTOP');
          await hold(LEASE_MS + 2000);
          process.kill(m.supervisor.pid, 'SIGCONT');
          break;
        case 'cut':
          faulted.add(m.supervisor.pid);
          m.proxy.cut();
          await hold(LEASE_MS + 2000);
          m.proxy.heal();
          break;
        case 'listener-kill':
          await db
            .query(
              "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'jobvisor-listener'",
            )
            .catch(() => {});
          break;
        case 'listener-freeze':
          m.proxy.freeze((c) => c.applicationName === 'jobvisor-listener');
          break;
        default:
          for (const x of members) faulted.add(x.supervisor.pid);
          await server.stop(kind === 'pg-fast' ? 'fast' : 'immediate');
          await hold(2000 + Math.floor(random() * 3000));
          await server.start();
      }
      // Recovery: from the end of the fault (healed, resumed, restarted, replaced) to every supervisor ready.
      const healedAt = Date.now();
      const recovered = await allReady().then(
        () => Date.now() - healedAt,
        () => null,
      );
      faults.push({ kind, at, recoveredMs: recovered, pid: m.supervisor.pid });
    }

    producing = false;
    await producer;
    say(`load stopped after ${enqueued} jobs; draining`);
    await until(
      'queue drained',
      async () =>
        Number(
          (await db.query("SELECT count(*) AS n FROM jobvisor.jobs WHERE status IN ('pending', 'running')")).rows[0].n,
        ),
      (n) => n === 0,
      300_000,
      500,
    );
    for (const m of [...members]) await leave(m, 'SIGTERM');

    const checked = await checkPromise(db, faulted);
    const result = {
      seed: SEED,
      minutes: MINUTES,
      supervisors: SUPERVISORS,
      enqueued,
      ...checked.figures,
      users,
      faults: Object.entries(
        faults.reduce<Record<string, number[]>>((acc, f) => ((acc[f.kind] ??= []).push(f.recoveredMs ?? -1), acc), {}),
      ).map(([kind, ms]) => ({ kind, count: ms.length, recoveredMs: summary(ms) })),
      pickupMs: summary(pickups),
    };
    const ok = checked.ok && checked.figures.emailsSent === users;
    if (args.json) process.stdout.write(`${JSON.stringify({ ok, ...result })}\n`);
    else process.stdout.write(`${JSON.stringify(result, null, 2)}\nsoak: ${ok ? 'ok' : 'FAILED'}\n`);
    return ok ? 0 : 1;
  } finally {
    for (const m of members) await m.proxy.close().catch(() => {});
    await Promise.all(everyone.map((s) => s.stop('SIGKILL').catch(() => null)));
    await pool?.end().catch(() => {});
    await server.destroy();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`soak: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
