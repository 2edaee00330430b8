/**
 * `jobvisor start --processes N`, measured end to end with real processes:
 *
 *   npx tsx bench/cluster.ts [--processes 1,2] [--jobs 20000] [--thumbnails 60] [--rounds 1] [--json]
 *
 * For each N, on a fresh database of the configured server (DATABASE_URL, else
 * the embedded one):
 *   - first job: one job is waiting when the command starts; the time from the
 *     spawn to that job being done (process start, config, tasks, fork, pool);
 *   - burst: after 2,000 warm-up jobs, --jobs no-op jobs in one INSERT, the
 *     time until all are done (the shape of `jobvisor bench --scenario burst`,
 *     tuned: concurrency 50, jobsPerThread 50, prefetch 2000, one thread per
 *     process), with the supervisors' main-thread CPU per job read from
 *     /proc/<pid>/task/<pid>/stat (the cost more processes spread over cores);
 *   - thumbnails: --thumbnails real `thumbnail` jobs (sharp, one 2400x1600 JPEG
 *     to 320/640/1024 px), with the same number of threads in total (the CPUs)
 *     split over the N processes.
 * The load average before each run is printed: on a shared machine compare
 * rounds, not single numbers. A benchmark reports; it asserts nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { loadConfig } from '../src/config/index.ts';
import { ensureEmbeddedPostgres } from '../src/db/embedded.ts';
import { createBenchDatabase, type BenchDatabase } from '../src/bench/database.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    processes: { type: 'string', default: '1,2' },
    jobs: { type: 'string', default: '20000' },
    thumbnails: { type: 'string', default: '60' },
    rounds: { type: 'string', default: '1' },
    json: { type: 'boolean', default: false },
  },
});
const COUNTS = values.processes.split(',').map(Number);
const JOBS = Number(values.jobs);
const THUMBS = Number(values.thumbnails);
const ROUNDS = Number(values.rounds);
const CPUS = availableParallelism();
const TICK_MS = 10; // USER_HZ 100

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const count = async (db: BenchDatabase, status = 'done') =>
  Number((await db.pool.query('SELECT count(*)::int AS n FROM jobvisor.jobs WHERE status = $1', [status])).rows[0].n);
async function untilDone(db: BenchDatabase, n: number, everyMs = 10): Promise<void> {
  while ((await count(db)) < n) await sleep(everyMs);
}

/** CPU ms of a process's main thread (tid = pid). */
function mainThreadCpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

interface Started {
  proc: ChildProcess;
  t0: number;
  pids: () => number[];
  stop(): Promise<void>;
}

function start(db: BenchDatabase, n: number, config: Record<string, unknown>, dir: string): Started {
  const file = path.join(dir, `config-${n}.json`);
  writeFileSync(file, JSON.stringify({ metrics: { port: 0, host: '127.0.0.1' }, ...config }));
  const t0 = performance.now();
  const proc = spawn(process.execPath, [path.join(root, 'bin/jobvisor.js'), 'start', '--processes', String(n)], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      ...process.env,
      DATABASE_URL: db.url,
      JOBVISOR_CONFIG: file,
      JOBVISOR_TASKS_DIR: path.join(root, 'src/bench/tasks'),
      LOG_LEVEL: 'info',
    },
  });
  const children: number[] = [];
  let buffer = '';
  proc.stdout?.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    let i;
    while ((i = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
      if (line.includes('"supervisor process started"')) children.push(Number(JSON.parse(line).childPid));
    }
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return {
    proc,
    t0,
    pids: () => (n === 1 ? [proc.pid as number] : children),
    async stop() {
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

async function burst(serverUrl: string, n: number, dir: string) {
  const db = await createBenchDatabase(serverUrl, `cluster_burst_${n}`);
  try {
    await db.pool.query(`INSERT INTO jobvisor.jobs (kind, payload) VALUES ('noop', '{}')`);
    const s = start(
      db,
      n,
      { queues: { default: { concurrency: 50, jobsPerThread: 50, prefetch: 2000 } }, pool: { maxThreads: 1 } },
      dir,
    );
    try {
      await untilDone(db, 1, 5);
      const firstJobMs = performance.now() - s.t0;
      await db.pool.query(
        `INSERT INTO jobvisor.jobs (kind, payload) SELECT 'noop', '{}' FROM generate_series(1, 2000)`,
      );
      await untilDone(db, 2001);
      const cpu0 = s.pids().map(mainThreadCpuMs);
      await db.pool.query(
        `INSERT INTO jobvisor.jobs (kind, payload) SELECT 'noop', '{}' FROM generate_series(1, $1::int)`,
        [JOBS],
      );
      const t1 = performance.now();
      await untilDone(db, 2001 + JOBS);
      const seconds = (performance.now() - t1) / 1000;
      const cpu = s.pids().map((p, i) => mainThreadCpuMs(p) - (cpu0[i] ?? 0));
      const mainCpuMs = cpu.reduce((a, b) => a + b, 0);
      return {
        firstJobMs: Math.round(firstJobMs),
        jobsPerSec: Math.round(JOBS / seconds),
        mainThreadUsPerJob: Math.round((mainCpuMs * 1000) / JOBS),
        mainThreadCpuShare: cpu.map((ms) => Math.round((ms / (seconds * 1000)) * 100) / 100),
      };
    } finally {
      await s.stop();
    }
  } finally {
    await db.drop();
  }
}

async function thumbnails(serverUrl: string, n: number, dir: string, source: string) {
  const db = await createBenchDatabase(serverUrl, `cluster_thumbs_${n}`);
  const threads = Math.max(1, Math.floor(CPUS / n));
  try {
    const s = start(
      db,
      n,
      {
        pool: { maxThreads: threads },
        queues: { default: { concurrency: threads, jobsPerThread: 1, prefetch: threads } },
        thumbnails: { dir, format: 'webp', sourceRoots: [dir] },
      },
      dir,
    );
    const insert = (k: number, tag: string) =>
      db.pool.query(`INSERT INTO jobvisor.jobs (kind, payload) SELECT 'thumbnail', p FROM unnest($1::jsonb[]) AS p`, [
        Array.from({ length: k }, (_, i) =>
          JSON.stringify({ source, widths: [320, 640, 1024], outDir: path.join(dir, `${tag}-${n}`, String(i)) }),
        ),
      ]);
    try {
      await insert(2 * CPUS, 'warm');
      await untilDone(db, 2 * CPUS, 20);
      const t1 = performance.now();
      await insert(THUMBS, 'run');
      await untilDone(db, 2 * CPUS + THUMBS, 20);
      return {
        threadsPerProcess: threads,
        thumbnailsPerSec: Math.round((THUMBS / ((performance.now() - t1) / 1000)) * 10) / 10,
      };
    } finally {
      await s.stop();
    }
  } finally {
    await db.drop();
  }
}

async function main() {
  const settings = loadConfig();
  let serverUrl = settings.database.url;
  if (!serverUrl) {
    const embedded = await ensureEmbeddedPostgres({
      dir: settings.database.embedded.dir,
      port: settings.database.embedded.port,
    });
    serverUrl = embedded.url;
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'jobvisor-cluster-bench-'));
  const source = path.join(dir, 'source.jpg');
  await sharp({
    create: {
      width: 2400,
      height: 1600,
      channels: 3,
      background: '#406080',
      noise: { type: 'gaussian', mean: 128, sigma: 30 },
    },
  })
    .jpeg({ quality: 88 })
    .toFile(source);
  const results: Array<Record<string, unknown>> = [];
  try {
    for (let r = 0; r < ROUNDS; r++)
      for (const n of COUNTS) {
        const load = loadavg().map((l) => Math.round(l * 100) / 100);
        const b = await burst(serverUrl, n, dir);
        const t = await thumbnails(serverUrl, n, dir, source);
        const row = { round: r + 1, processes: n, loadAverage: load, ...b, ...t };
        results.push(row);
        if (!values.json) console.log(JSON.stringify(row));
      }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  if (values.json) console.log(JSON.stringify({ cpus: CPUS, jobs: JOBS, thumbnails: THUMBS, results }, null, 2));
}

await main();
process.exit(0);
