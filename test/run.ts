/**
 * `npm test`: lints and type-checks src and test (side by side), prepares a
 * PostgreSQL (the one DATABASE_URL names, or the embedded server), migrates a
 * template database once, compiles src once for the child processes the tests
 * spawn (test/helpers/compile.ts) and test/ for the test processes
 * (test/helpers/test_mirror.ts), and runs every test file with node:test, each in its own process
 * on plain node (test/helpers/schedule.ts). Each file clones its own database from the
 * template (test/helpers/db.ts). Every run writes .test-report/durations.json
 * and prints the ten slowest files (test/helpers/durations.ts).
 *
 *   npm test                       lint, type-check, everything under test/
 *   npm run test:unit              one tier (unit, db, integration, system,
 *                                  plans, packaging): its folder, no lint or
 *                                  type-check; the unit tier starts no PostgreSQL
 *   npx tsx test/run.ts FILE|DIR...
 *                                  some files or folders (no lint or type-check)
 *   npx tsx test/run.ts --list [FILE|DIR...]
 *                                  the files a run would run, and how many
 *   npx tsx test/run.ts --node 22 [FILE...]
 *                                  those files, else the cross-version slice
 *                                  (NODE_SLICE), on another Node.js: the test
 *                                  processes, the processes they spawn and npm/npx
 *                                  all run on it (test/helpers/node_versions.ts
 *                                  installs it from the npm registry on first use)
 *
 * Every `*.test.ts` under test/ runs, tier folder or not: a file left at the
 * top of test/ (say, added by a branch older than the tiers) still runs in
 * `npm test`, and the run says it belongs in a tier.
 * JOBVISOR_TEST_TSX=1 runs every file under tsx instead of its compiled copy.
 * JOBVISOR_TEST_CONCURRENCY sets how many files run at once (default 2), and
 * JOBVISOR_TEST_MAX_CONCURRENCY how many may while the CPUs sit idle (default
 * twice the cores); JOBVISOR_TEST_FILE_TIMEOUT_MS a file's time limit (10 min).
 *
 * promtool and the Prometheus server (test/packaging/grafana.test.ts, test/system/prometheus.test.ts)
 * come from Debian's `prometheus` package, chromium (test/system/dashboard_browser.test.ts)
 * from Debian's `chromium`: when they are missing and the runner is
 * root with apt-get, it installs them; otherwise their tests are skipped with the
 * reason and the install command. JOBVISOR_TEST_INSTALL=0 forbids the install.
 */
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { loadConfig } from '../src/config/index.ts';
import { ensureEmbeddedPostgres } from '../src/db/embedded.ts';
import { migrate } from '../src/db/migrate.ts';
import { createLogger } from '../src/log.ts';
import { checks } from './helpers/checks.ts';
import { compilePackage } from './helpers/compile.ts';
import { compileTests } from './helpers/test_mirror.ts';
import { busyBetween, readCpu } from './helpers/cpu_idle.ts';
import { lastDurations, load, summary, writeReport } from './helpers/durations.ts';
import { alsoOnNode, NODE_SLICE, nodeBinary, versionOf } from './helpers/node_versions.ts';
import { runFiles } from './helpers/schedule.ts';
import { expand, list } from './helpers/test_files.ts';
import { findTool, installCommand, installMissing, TOOLS_BY_TEST } from './helpers/tools.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** One template per runner, so runs started together do not collide. */
const TEMPLATE = `jobvisor_test_template_${process.pid}`;

/** `--node N` and the files, from the command line. */
function parseArgs(argv: string[]): { node: string | undefined; files: string[] } {
  const at = argv.indexOf('--node');
  if (at < 0) return { node: undefined, files: argv };
  const node = argv[at + 1] ?? '';
  const files = argv.filter((_, i) => i !== at && i !== at + 1);
  return { node, files: files.length > 0 ? files : NODE_SLICE };
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv[0] === '--list') return list(root, argv.slice(1));
  const { node: major, files } = parseArgs(argv);
  // Another Node.js: its binary runs the tests, and comes first in PATH for the npm and npx they spawn.
  const node = major === undefined ? process.execPath : nodeBinary(major);
  if (major !== undefined) process.stdout.write(`running on Node.js ${versionOf(node)} (${node})\n`);
  if (files.length === 0 && !(await checks(root))) return 1;
  const testFiles = expand(root, files.length > 0 ? files : ['test']);
  if (typeof testFiles === 'string') {
    process.stderr.write(`${testFiles}\n`);
    return 2;
  }
  const untiered = testFiles.filter((f) => path.dirname(f) === 'test');
  if (untiered.length > 0) {
    process.stdout.write(`not in a tier folder (they run, but belong in test/<tier>/): ${untiered.join(' ')}\n`);
  }
  const log = createLogger({ level: 'warn', fd: 2 });
  // The unit tier needs no PostgreSQL: none is started for it.
  const needsDatabase = testFiles.some((f) => !f.startsWith(`test${path.sep}unit${path.sep}`));
  const given = process.env.JOBVISOR_TEST_DATABASE_URL || process.env.DATABASE_URL;
  const settings = loadConfig({ env: {} });
  const embedded =
    given || !needsDatabase
      ? null
      : await ensureEmbeddedPostgres({
          dir: settings.database.embedded.dir,
          port: settings.database.embedded.port,
          log,
          // No flush to disk (a commit took 0.8 ms with it, 0.35 without, on this 2-core
          // machine): the tests' data outlives no machine crash, and a server killed with
          // -9 still loses no commit. Tests of durability restart a PostgreSQL of their own.
          settings: ['fsync=off', 'full_page_writes=off'],
        });
  const serverUrl = needsDatabase ? serverOf(given ?? (embedded?.url as string)) : '';
  // The package as users run it, compiled once for every child process of the run (test/helpers/compile.ts).
  const compiled = compilePackage('run');
  // The test files as JavaScript on it, run without tsx (test/helpers/test_mirror.ts); JOBVISOR_TEST_TSX=1 runs them under tsx.
  const mirror = process.env.JOBVISOR_TEST_TSX === '1' ? undefined : compileTests(compiled, 'run');
  try {
    const copy = needsDatabase ? await prepareTemplate(serverUrl) : '';
    provideTools(testFiles);
    const env = {
      ...process.env,
      PATH: major === undefined ? process.env.PATH : `${path.dirname(node)}${path.delimiter}${process.env.PATH ?? ''}`,
      JOBVISOR_TEST_DATABASE_URL: serverUrl,
      JOBVISOR_TEST_TEMPLATE: needsDatabase ? TEMPLATE : '',
      JOBVISOR_TEST_TEMPLATE_COPY: copy,
      JOBVISOR_TEST_COMPILED: compiled.root,
      // Set in a run on another Node.js (--node): what does not depend on the version may skip.
      JOBVISOR_TEST_SLICE: major === undefined ? '' : `node${major}`,
      DATABASE_URL: '',
    };
    const concurrency = Number(process.env.JOBVISOR_TEST_CONCURRENCY) || (major === undefined ? 2 : 1);
    // More files while the CPUs sit idle (test/helpers/schedule.ts); not in a --node slice, which
    // .ci/run runs beside another.
    const maxConcurrency =
      Number(process.env.JOBVISOR_TEST_MAX_CONCURRENCY) ||
      (major === undefined ? Math.max(concurrency, 2 * os.availableParallelism()) : concurrency);
    const loadStart = load();
    const cpuStart = readCpu();
    const started = performance.now();
    // Timing tests run alone, after the rest: event-loop delay with every thread busy, a rate
    // limit's throughput (a start that reaches its thread past its slot's guard is re-paced,
    // so CPU taken by a neighbouring file costs slots: 75 % of 200/s beside other files, 95 %
    // alone), the exactness of rate-limited starts (a start's error grows with a claim's round
    // trip and the threads' wait for a core: 21 starts in a 1-s window of a 20/s limit once, at
    // load 8), a lone queue's start beside a busy one (p50 6 ms, p99 60 ms at load 15), and
    // thread hand-over order. The pack-and-install tests (npm pack's tsc build,
    // npm installs, type-checks by TypeScript 5.9 and 7) run among the rest, one at a time.
    // CI's other Node.js versions (JOBVISOR_TEST_ALSO_NODE) share this run's scheduler.
    const also = major === undefined ? alsoOnNode(process.env.JOBVISOR_TEST_ALSO_NODE ?? '', testFiles, env) : [];
    const launches = new Map(also.map((l) => [l.name, l]));
    const base = (name: string): string => path.basename(launches.get(name)?.file ?? name);
    const { runs, peak } = await runFiles({
      node,
      files: [...testFiles, ...launches.keys()],
      launch: (name) => launches.get(name),
      mirror: mirror && ((file) => mirror.fileOf(file)),
      concurrency,
      maxConcurrency,
      alone: (f) => ALONE.test(base(f)),
      group: (f) => (PACKING.test(base(f)) ? 'packing' : undefined),
      expected: lastDurations(root),
      env,
      cwd: root,
    });
    const reportName = major === undefined ? '' : `node${major}`;
    const report = writeReport(
      root,
      {
        finishedAt: new Date().toISOString(),
        node: versionOf(node),
        concurrency,
        maxConcurrency,
        peak,
        loadStart,
        loadEnd: load(),
        machineBusy: busyBetween(cpuStart, readCpu()),
        wallMs: Math.round(performance.now() - started),
        files: runs,
      },
      reportName,
    );
    process.stdout.write(summary(root, report, reportName));
    return Math.max(0, ...runs.map((r) => r.status));
  } finally {
    mirror?.remove();
    compiled.remove();
    if (needsDatabase) await dropTemplate(serverUrl).catch(() => {});
    // Another test run (or a developer's supervisor) may be using the server too.
    if (embedded?.startedHere && !(await othersConnected(serverUrl))) await embedded.stop();
  }
}

async function othersConnected(serverUrl: string): Promise<boolean> {
  return withAdmin(serverUrl, async (admin) => {
    const { rows } = await admin.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
    );
    return rows[0].n > 0;
  });
}

async function dropTemplate(serverUrl: string): Promise<void> {
  await withAdmin(serverUrl, (admin) => admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE} WITH (FORCE)`));
}

/** Runs `fn` with a client connected to the server's `postgres` database. */
async function withAdmin<T>(serverUrl: string, fn: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.end();
  }
}

const ALONE = /^(cpu_pool|chaos_flow_rate|chaos_rate_pacing|flow_queues|thread_share)\.test\.ts$/;
/** The files that pack and install the package: one at a time (each is most of a core for a minute). */
const PACKING = /^(package|package_types|package_entry_points)\.test\.ts$/;

/** Installs the programs the chosen tests need, or says once why their tests will be skipped. */
function provideTools(testFiles: string[]): void {
  const tools = [...new Set(testFiles.flatMap((f) => TOOLS_BY_TEST[path.basename(f)] ?? []))];
  const reason = installMissing(tools);
  if (reason) {
    const missing = tools.filter((t) => !findTool(t));
    process.stdout.write(
      `${missing.map((t) => t.name).join(', ')} missing (${reason}): their tests are skipped; install with \`${installCommand(missing)}\`\n`,
    );
  }
}

/** The same server, database `postgres`. */
function serverOf(url: string): string {
  const u = new URL(url);
  u.pathname = '/postgres';
  return u.toString();
}

/**
 * The template every test database is made from (test/helpers/db.ts), migrated;
 * how to copy it: `STRATEGY FILE_COPY` on PostgreSQL 15 and later. Their
 * default, WAL_LOG, writes the whole template (4.5 MB) to the WAL for each of
 * the run's 200 databases: 0.16 s a database against 0.10 on a quiet server,
 * and on the db and integration tiers 141.5 s against 134.8 in all, 101 s of
 * the server's CPU against 93. FILE_COPY takes two checkpoints a database,
 * which cost nothing to speak of without fsync (the run's own server has it
 * off); on a server that flushes, WAL_LOG stays.
 */
async function prepareTemplate(serverUrl: string): Promise<string> {
  const fileCopy = await withAdmin(serverUrl, async (admin) => {
    await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${TEMPLATE}`);
    const { rows } = await admin.query<{ v: string; fsync: string }>(
      `SELECT current_setting('server_version_num') AS v, current_setting('fsync') AS fsync`,
    );
    return rows[0]?.fsync === 'off' && Number(rows[0].v) >= 150000;
  });
  const u = new URL(serverUrl);
  u.pathname = `/${TEMPLATE}`;
  const pool = new pg.Pool({ connectionString: u.toString(), max: 1 });
  try {
    await migrate(pool);
  } finally {
    await pool.end();
  }
  return fileCopy ? 'STRATEGY FILE_COPY' : '';
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`test runner: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
