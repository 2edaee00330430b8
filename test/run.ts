/**
 * `npm test`: type-checks src and test, prepares a PostgreSQL (the one
 * DATABASE_URL names, or the embedded server), migrates a template database
 * once, and runs every test file with node:test. Each file clones its own
 * database from the template (test/helpers/db.ts).
 *
 *   npm test                       lint, type-check, everything
 *   npx tsx test/run.ts FILE...    some files (no lint or type-check)
 *   npx tsx test/run.ts --node 22 [FILE...]
 *                                  those files, else the cross-version slice
 *                                  (NODE_SLICE), on another Node.js: the test
 *                                  processes, the processes they spawn and npm/npx
 *                                  all run on it (test/helpers/node_versions.ts
 *                                  installs it from the npm registry on first use)
 *
 * promtool and the Prometheus server (test/grafana.test.ts, test/prometheus.test.ts)
 * come from Debian's `prometheus` package, chromium (test/dashboard_browser.test.ts)
 * from Debian's `chromium`: when they are missing and the runner is
 * root with apt-get, it installs them; otherwise their tests are skipped with the
 * reason and the install command. JOBVISOR_TEST_INSTALL=0 forbids the install.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { loadConfig } from '../src/config/index.ts';
import { ensureEmbeddedPostgres } from '../src/db/embedded.ts';
import { migrate } from '../src/db/migrate.ts';
import { createLogger } from '../src/log.ts';
import { nodeBinary, versionOf } from './helpers/node_versions.ts';
import { findTool, installCommand, installMissing, TOOLS_BY_TEST } from './helpers/tools.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** One template per runner, so runs started together do not collide. */
const TEMPLATE = `jobvisor_test_template_${process.pid}`;

/**
 * What runs on every supported Node.js besides the one of `npm test` (.ci/run):
 * the packed tarball in separate apps, the library path (run()), compiled
 * jobvisor with .ts tasks (Node's own type stripping), worker threads and their
 * faults, the cluster, and a chaos case (supervisors killed mid-job).
 */
const NODE_SLICE = [
  'test/package.test.ts',
  'test/run_api.test.ts',
  'test/run_compiled.test.ts',
  'test/chaos_threads.test.ts',
  'test/cluster_shutdown.test.ts',
  'test/chaos_kill.test.ts',
];

/** `--node N` and the files, from the command line. */
function parseArgs(argv: string[]): { node: string | undefined; files: string[] } {
  const at = argv.indexOf('--node');
  if (at < 0) return { node: undefined, files: argv };
  const node = argv[at + 1] ?? '';
  const files = argv.filter((_, i) => i !== at && i !== at + 1);
  return { node, files: files.length > 0 ? files : NODE_SLICE };
}

async function main(): Promise<number> {
  const { node: major, files } = parseArgs(process.argv.slice(2));
  // Another Node.js: its binary runs the tests, and comes first in PATH for the npm and npx they spawn.
  const node = major === undefined ? process.execPath : nodeBinary(major);
  if (major !== undefined) process.stdout.write(`running on Node.js ${versionOf(node)} (${node})\n`);
  if (files.length === 0) {
    process.stdout.write('type-checking src and test…\n');
    const tsc = spawnSync(
      process.execPath,
      [path.join(root, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', path.join(root, 'tsconfig.check.json')],
      { stdio: 'inherit' },
    );
    if (tsc.status !== 0) return 1;
    process.stdout.write('linting (npm run lint)…\n');
    const lint = spawnSync('npm', ['run', '--silent', 'lint'], { cwd: root, stdio: 'inherit' });
    if (lint.status !== 0) return 1;
  }
  const missing = files.filter((f) => !existsSync(f));
  if (missing.length > 0) {
    process.stderr.write(`no such test file: ${missing.join(', ')}\n`);
    return 2;
  }
  const log = createLogger({ level: 'warn', fd: 2 });
  const given = process.env.JOBVISOR_TEST_DATABASE_URL || process.env.DATABASE_URL;
  const settings = loadConfig({ env: {} });
  const embedded = given
    ? null
    : await ensureEmbeddedPostgres({ dir: settings.database.embedded.dir, port: settings.database.embedded.port, log });
  const serverUrl = serverOf(given ?? (embedded?.url as string));
  try {
    await prepareTemplate(serverUrl);
    const testFiles =
      files.length > 0
        ? files
        : readdirSync(path.join(root, 'test'))
            .filter((f) => f.endsWith('.test.ts'))
            .sort()
            .map((f) => path.join('test', f));
    provideTools(testFiles);
    // Timing tests run alone, after the rest: event-loop delay with every thread busy, a rate
    // limit's throughput (a start that reaches its thread past its slot's guard is re-paced,
    // so CPU taken by a neighbouring file costs slots: 75 % of 200/s beside other files, 95 %
    // alone), and thread hand-over order. So do the pack-and-install tests (npm pack's tsc
    // build, npm installs, type-checks by TypeScript 5.9 and 7).
    const alone = testFiles.filter((f) => ALONE.test(path.basename(f)));
    const together = testFiles.filter((f) => !alone.includes(f));
    const env = {
      ...process.env,
      PATH: major === undefined ? process.env.PATH : `${path.dirname(node)}${path.delimiter}${process.env.PATH ?? ''}`,
      JOBVISOR_TEST_DATABASE_URL: serverUrl,
      JOBVISOR_TEST_TEMPLATE: TEMPLATE,
      DATABASE_URL: '',
    };
    // On another Node.js (the CI slice) one file at a time: its chaos files are timing tests too.
    let status = together.length > 0 ? await runTests(node, together, major === undefined ? 2 : 1, env) : 0;
    if (alone.length > 0) status = Math.max(status, await runTests(node, alone, 1, env));
    return status;
  } finally {
    await dropTemplate(serverUrl).catch(() => {});
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

const ALONE = /^(cpu_pool|package|package_types|package_entry_points|chaos_flow_limits|thread_share)\.test\.ts$/;

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

function runTests(node: string, files: string[], concurrency: number, env: NodeJS.ProcessEnv): Promise<number> {
  const child = spawn(
    node,
    ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-timeout=300000', ...files],
    { cwd: root, stdio: 'inherit', env },
  );
  return new Promise<number>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
}

/** The same server, database `postgres`. */
function serverOf(url: string): string {
  const u = new URL(url);
  u.pathname = '/postgres';
  return u.toString();
}

async function prepareTemplate(serverUrl: string): Promise<void> {
  await withAdmin(serverUrl, async (admin) => {
    await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${TEMPLATE}`);
  });
  const u = new URL(serverUrl);
  u.pathname = `/${TEMPLATE}`;
  const pool = new pg.Pool({ connectionString: u.toString(), max: 1 });
  try {
    await migrate(pool);
  } finally {
    await pool.end();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`test runner: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
