/**
 * The package's entry points as an app imports them from the packed tarball
 * (test/helpers/packed.ts), installed into an app of its own:
 * - what each one loads: every module (jobvisor's files and its dependencies'),
 *   counted by a module hook and require.cache in a fresh process. A web
 *   service that only enqueues imports `jobvisor/client`, which must load
 *   neither piscina (worker threads), hono (the dashboard) nor prom-client
 *   (metrics), nor any file of jobvisor's worker, supervisor, runner,
 *   metrics or dashboard, and stays within a module budget; the same through
 *   require(). Neither does the root (the application API: the client's
 *   exports, a `run` that loads the supervisor when called, `defineTask`, the
 *   task errors), which loads only a few light files more. `jobvisor/worker`
 *   and `jobvisor/dashboard` load them (so the probe can see them);
 * - how long the import of the root, of the client and of the worker entry
 *   takes (median of three fresh processes): reported, and the root must be
 *   faster than the worker entry;
 * - the root exports exactly the application API: the client's exports plus
 *   ROOT_EXTRA, the same objects as the subpaths' (one module instance, so
 *   `instanceof` holds across them) but for `run` and the deprecated
 *   `createDashboard`, which load their subpath's code when called; its `run`
 *   does, and rejects bad options as the worker's does;
 * - each subpath's types resolve, ES module and CommonJS, under the module
 *   settings apps use (moduleResolution node10 reads `typesVersions`).
 *
 * Needs the npm registry (or npm's cache) for the app's dependencies: skipped
 * with the reason when neither answers.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { depVersion, exec, npmInstall, packedTarball, ROOT, write } from '../helpers/packed.ts';

const work = mkdtempSync(path.join(tmpdir(), 'jobvisor-entry-points-'));
const app = path.join(work, 'app');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');

const ENTRY_POINTS = ['jobvisor', 'jobvisor/client', 'jobvisor/worker', 'jobvisor/dashboard'] as const;
type EntryPoint = (typeof ENTRY_POINTS)[number];
/** What a service that only enqueues must not pay for. */
const HEAVY = ['piscina', 'hono', '@hono/node-server', 'prom-client'];
/** jobvisor's folders that belong to the process that runs jobs, or to the dashboard. */
const WORKER_SIDE = ['worker', 'supervisor', 'run', 'metrics', 'dashboard', 'cluster', 'cli', 'bench', 'tasks'];
/** Modules `jobvisor/client` may load (65 when it was made: 41 of jobvisor's, 24 of cron-parser, luxon, ms, pg-copy-streams). */
const CLIENT_MODULE_BUDGET = 90;
/** Modules the root may load (93 when it was made: 66 of jobvisor's; the client's, convict's for loadConfig, and the light task side). */
const ROOT_MODULE_BUDGET = 150;
/** The root's files of the worker-side folders: each loads its subpath's code only when called, or is light. */
const ROOT_WORKER_SIDE = [
  'dashboard/checked_options.js',
  'dashboard/lazy.js',
  'dashboard/token.js',
  'run/lazy.js',
  'worker/define_task.js',
  'worker/errors.js',
  'worker/step_errors.js',
];
/**
 * The root's exports beyond `jobvisor/client`'s: the application API of the
 * process that runs jobs (docs/guides/entry-points.md). `Supervisor` is not
 * among them (`jobvisor/worker` only); `createDashboard` is, deprecated.
 */
const ROOT_EXTRA = [
  'BUILTIN_TASKS',
  'PermanentError',
  'RetryLaterError',
  'SnoozeError',
  'StepError',
  'builtinTask',
  'createDashboard',
  'defineTask',
  'loadConfig',
  'run',
];
/** Root exports that are not their subpath's object, but load it when called. */
const LAZY = ['createDashboard', 'run'];

const APP: Record<string, string> = {
  'package.json': JSON.stringify({ name: 'entry-app', version: '1.0.0', private: true, type: 'module' }),
  // Runs in the loader's thread: appends each module's URL before it loads.
  'hooks.mjs': `import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function load(url, context, next) {
  appendFileSync(log, url + '\\n');
  return next(url, context);
}
`,
  // node loaded.mjs SPECIFIER LOG: every module the import loaded, ES modules and CommonJS.
  'loaded.mjs': `import { createRequire, register } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [specifier, log] = process.argv.slice(2);
writeFileSync(log, '');
register('./hooks.mjs', import.meta.url, { data: { log } });
await import(specifier);
const esm = readFileSync(log, 'utf8').split('\\n').filter((u) => u.startsWith('file:'));
const cjs = Object.keys(createRequire(import.meta.url).cache).map((f) => pathToFileURL(f).href);
const own = new Set([import.meta.url, new URL('./hooks.mjs', import.meta.url).href]);
console.log(JSON.stringify([...new Set([...esm, ...cjs])].filter((u) => !own.has(u)).sort()));
`,
  // node required.cjs SPECIFIER: the CommonJS modules a require() loaded.
  'required.cjs': `require(process.argv[2]);
console.log(JSON.stringify(Object.keys(require.cache).filter((f) => f !== __filename)));
`,
  'time.mjs': `const t0 = performance.now();
await import(process.argv[2]);
console.log(performance.now() - t0);
`,
  // Each root export: the subpaths that export the same object.
  'exports.mjs': `const [root, ...entries] = await Promise.all(process.argv.slice(2).map((s) => import(s)));
const owners = {};
for (const name of Object.keys(root)) {
  owners[name] = [];
  for (const [i, entry] of entries.entries()) if (entry[name] === root[name]) owners[name].push(process.argv[3 + i]);
}
console.log(JSON.stringify({ root: Object.keys(root).sort(), owners }));
`,
  // The root's run, called with bad options: rejects as the worker's does, having loaded the supervisor's code.
  'lazy_run.mjs': `import { createRequire } from 'node:module';
import { ConfigError, run } from 'jobvisor';
const piscina = () => Object.keys(createRequire(import.meta.url).cache).some((f) => f.includes('/node_modules/piscina/'));
const before = piscina();
const err = await run({ connectionString: 'postgres://nobody@127.0.0.1:1/none', notAnOption: true }).then(
  () => null,
  (e) => e,
);
console.log(JSON.stringify({ before, after: piscina(), configError: err instanceof ConfigError, code: err?.code, message: err?.message }));
`,
  // Types of each subpath; the marked misuses are errors only while the types resolve.
  'esm/package.json': JSON.stringify({ type: 'module' }),
  'esm/usage.ts': typesUsage(),
  'cjs/package.json': JSON.stringify({ type: 'commonjs' }),
  'cjs/usage.ts': typesUsage(),
};

/** A file that imports each subpath and misuses each once (the marked lines must be errors). */
function typesUsage(): string {
  return `import { Pool } from 'pg';
import { enqueue, listJobs, InputError, type JobRow } from 'jobvisor/client';
import { defineTask, run, type TaskContext } from 'jobvisor/worker';
import { createDashboard } from 'jobvisor/dashboard';

declare module 'jobvisor/client' {
  interface TaskPayloads {
    send_invoice: { invoiceId: number };
  }
}

export async function main(pool: Pool): Promise<JobRow[]> {
  await enqueue(pool, 'send_invoice', { invoiceId: 7 });
  // @ts-expect-error the payload type of a declared kind
  await enqueue(pool, 'send_invoice', { invoiceId: '7' });
  // @ts-expect-error run() takes options
  await run(42);
  // @ts-expect-error createDashboard takes options
  createDashboard('pool');
  const task = defineTask<{ n: number }>(async (payload, ctx: TaskContext) => payload.n + ctx.job.attempt);
  // @ts-expect-error the task's payload
  void task({ n: '1' }, {} as TaskContext);
  if (new InputError('x') instanceof Error) return (await listJobs({ db: pool, schema: 'jobvisor' }, {}, { limit: 10 })).jobs;
  return [];
}
`;
}

let skipReason: string | undefined;

before(() => {
  const { tarball } = packedTarball();
  write(app, APP);
  const installed = npmInstall(app, [
    tarball,
    `pg@${depVersion('pg')}`,
    `@types/node@${depVersion('@types/node')}`,
    `@types/pg@${depVersion('@types/pg')}`,
  ]);
  skipReason = installed.offline;
});

after(() => {
  if (process.env.JOBVISOR_TEST_KEEP !== '1') rmSync(work, { recursive: true, force: true });
});

/** Every module a fresh `import(entry)` loads, as URLs. */
function loadedBy(entry: EntryPoint): string[] {
  const log = path.join(work, `loaded-${entry.replace('/', '-')}.txt`);
  const r = exec(process.execPath, ['loaded.mjs', entry, log], app);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  return JSON.parse(r.stdout) as string[];
}

/** The installed packages among `modules` (by their folder under node_modules), jobvisor's own files apart. */
function packagesOf(modules: string[]): Set<string> {
  return new Set(
    modules
      .map((m) => /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(m)?.[1])
      .filter((p): p is string => p !== undefined && p !== 'jobvisor'),
  );
}

/** jobvisor's own files among `modules`, relative to its dist/. */
function ownFiles(modules: string[]): string[] {
  return modules.flatMap((m) => /\/node_modules\/jobvisor\/dist\/(.*)$/.exec(m)?.[1] ?? []);
}

/**
 * Median milliseconds of `import(entry)` for each entry, over three fresh
 * processes each, taken in turns (root, client, worker, root, …) so that a
 * change of the machine's load weighs on every entry alike.
 */
function importMs<E extends EntryPoint>(entries: readonly E[]): Record<E, number> {
  const runs = new Map<E, number[]>(entries.map((e) => [e, []]));
  for (let round = 0; round < 3; round++)
    for (const entry of entries) {
      const r = exec(process.execPath, ['time.mjs', entry], app);
      assert.equal(r.status, 0, r.stdout + r.stderr);
      runs.get(entry)!.push(Number(r.stdout.trim()));
    }
  return Object.fromEntries(entries.map((e) => [e, runs.get(e)!.sort((a, b) => a - b)[1]])) as Record<E, number>;
}

describe('the entry points of the packed package', () => {
  const loaded = new Map<EntryPoint, string[]>();
  const load = (entry: EntryPoint) => loaded.get(entry) ?? loaded.set(entry, loadedBy(entry)).get(entry)!;

  test('the root and jobvisor/client load no worker, supervisor, dashboard or metrics: no piscina, hono or prom-client', (t) => {
    if (skipReason) return t.skip(skipReason);
    // The probe sees them where they are loaded, or its silence below would prove nothing.
    const seen = new Set([...packagesOf(load('jobvisor/worker')), ...packagesOf(load('jobvisor/dashboard'))]);
    for (const name of HEAVY) assert.ok(seen.has(name), `a subpath loads ${name}`);
    for (const [entry, budget, allowed] of [
      ['jobvisor/client', CLIENT_MODULE_BUDGET, []],
      ['jobvisor', ROOT_MODULE_BUDGET, ROOT_WORKER_SIDE],
    ] as const) {
      const modules = load(entry);
      const heavy = HEAVY.filter((name) => packagesOf(modules).has(name));
      assert.deepEqual(heavy, [], `${entry} loads ${heavy.join(', ')}`);
      const workerSide = ownFiles(modules).filter(
        (f) => WORKER_SIDE.includes(f.split('/')[0] as string) && !(allowed as readonly string[]).includes(f),
      );
      assert.deepEqual(workerSide, [], `${entry} loads files of the worker side`);
      assert.ok(
        modules.length <= budget,
        `${entry} loads ${modules.length} modules (budget ${budget}): ${modules.join('\n')}`,
      );
    }
    for (const entry of ENTRY_POINTS) {
      const modules = load(entry);
      t.diagnostic(
        `${entry}: ${modules.length} modules (${ownFiles(modules).length} of jobvisor's), packages: ${[...packagesOf(modules)].sort().join(' ')}`,
      );
    }
  });

  test('jobvisor/worker loads no dashboard (hono); jobvisor/dashboard no piscina or prom-client', (t) => {
    if (skipReason) return t.skip(skipReason);
    const worker = packagesOf(load('jobvisor/worker'));
    assert.ok(!worker.has('hono') && !worker.has('@hono/node-server'), [...worker].join(' '));
    assert.ok(worker.has('piscina'), 'the worker entry loads its threads');
    const dashboard = packagesOf(load('jobvisor/dashboard'));
    assert.ok(!dashboard.has('piscina') && !dashboard.has('prom-client'), [...dashboard].join(' '));
  });

  test('require("jobvisor") and require("jobvisor/client") from a CommonJS file load no piscina, hono or prom-client either', (t) => {
    if (skipReason) return t.skip(skipReason);
    const required = (specifier: string) => {
      const r = exec(process.execPath, ['required.cjs', specifier], app);
      assert.equal(r.status, 0, r.stdout + r.stderr);
      return packagesOf((JSON.parse(r.stdout) as string[]).map((f) => `file://${f}`));
    };
    const worker = required('jobvisor/worker');
    assert.ok(
      worker.has('piscina') && worker.has('prom-client'),
      `require("jobvisor/worker") loads ${[...worker].join(' ')}`,
    );
    for (const specifier of ['jobvisor', 'jobvisor/client']) {
      const loaded = required(specifier);
      assert.deepEqual(
        HEAVY.filter((name) => loaded.has(name)),
        [],
        specifier,
      );
    }
  });

  test('the root imports faster than jobvisor/worker (median of three fresh processes)', (t) => {
    if (skipReason) return t.skip(skipReason);
    const ms = importMs(['jobvisor', 'jobvisor/client', 'jobvisor/worker'] as const);
    t.diagnostic(
      `import('jobvisor'): ${ms.jobvisor.toFixed(0)} ms; import('jobvisor/client'): ${ms['jobvisor/client'].toFixed(0)} ms; import('jobvisor/worker'): ${ms['jobvisor/worker'].toFixed(0)} ms`,
    );
    assert.ok(ms.jobvisor < ms['jobvisor/worker'], JSON.stringify(ms));
  });

  test('the root exports exactly the application API: the client, run, defineTask, the task errors', (t) => {
    if (skipReason) return t.skip(skipReason);
    const r = exec(process.execPath, ['exports.mjs', ...ENTRY_POINTS], app);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const { root, owners } = JSON.parse(r.stdout) as { root: string[]; owners: Record<string, string[]> };
    const client = root.filter((name) => owners[name]?.includes('jobvisor/client'));
    assert.deepEqual(root, [...new Set([...client, ...ROOT_EXTRA])].sort());
    assert.ok(!root.includes('Supervisor'), 'Supervisor is in jobvisor/worker only');
    // One module instance: the same objects as the subpath's, so instanceof holds across them.
    const odd = root.filter((name) => !LAZY.includes(name) && owners[name]?.length !== 1);
    assert.deepEqual(odd, [], "a root export that is not exactly one subpath's object");
    for (const name of LAZY) assert.deepEqual(owners[name], [], `${name}: the root's loads its subpath when called`);
  });

  test("the root's run loads the supervisor when called, and rejects bad options as jobvisor/worker's does", (t) => {
    if (skipReason) return t.skip(skipReason);
    const r = exec(process.execPath, ['lazy_run.mjs'], app);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const got = JSON.parse(r.stdout) as { before: boolean; after: boolean; configError: boolean; code: string };
    assert.deepEqual(
      { before: got.before, after: got.after, configError: got.configError, code: got.code },
      { before: false, after: true, configError: true, code: 'CONFIG_INVALID' },
      r.stdout,
    );
  });

  for (const [label, folder, compilerOptions] of [
    ['ES module, nodenext', 'esm', { module: 'nodenext' }],
    ['ES module, bundler', 'esm', { module: 'esnext', moduleResolution: 'bundler' }],
    ['CommonJS, nodenext', 'cjs', { module: 'nodenext' }],
    ['CommonJS, node10 (typesVersions)', 'cjs', { module: 'commonjs', moduleResolution: 'node10' }],
  ] as const) {
    test(`the subpaths' types resolve: ${label}`, (t) => {
      if (skipReason) return t.skip(skipReason);
      const config = `tsconfig.${label.replace(/\W+/g, '-')}.json`;
      const options = { target: 'es2022', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] };
      writeFileSync(
        path.join(app, config),
        JSON.stringify({ compilerOptions: { ...options, ...compilerOptions }, files: [`${folder}/usage.ts`] }),
      );
      const r = exec(process.execPath, [TSC, '-p', config, '--pretty', 'false'], app);
      assert.equal(r.status, 0, r.stdout + r.stderr);
    });
  }
});
