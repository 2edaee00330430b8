/**
 * The package's entry points as an app imports them from the packed tarball
 * (test/helpers/packed.ts), installed into an app of its own:
 * - what each one loads: every module (jobvisor's files and its dependencies'),
 *   counted by a module hook and require.cache in a fresh process. A web
 *   service that only enqueues imports `jobvisor/client`, which must load
 *   neither piscina (worker threads), hono (the dashboard) nor prom-client
 *   (metrics), nor any file of jobvisor's worker, supervisor, runner,
 *   metrics or dashboard, and stays within a module budget; the same through
 *   require(). The root loads them (so the probe can see them);
 * - how long the import of the root and of the client takes (median of three
 *   fresh processes): reported, and the client must be faster;
 * - the root exports exactly the union of `jobvisor/client`, `jobvisor/worker`
 *   and `jobvisor/dashboard`, the same objects (one module instance, so
 *   `instanceof` holds across them);
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
  'exports.mjs': `const [root, ...entries] = await Promise.all(process.argv.slice(2).map((s) => import(s)));
const owners = {};
for (const [i, entry] of entries.entries())
  for (const [name, value] of Object.entries(entry)) {
    (owners[name] ??= []).push(process.argv[3 + i]);
    if (root[name] !== value) owners[name].push('(not the root one)');
  }
console.log(JSON.stringify({ root: Object.keys(root).sort(), owners }));
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

/** Median milliseconds of `import(entry)` over three fresh processes. */
function importMs(entry: EntryPoint): number {
  const runs = Array.from({ length: 3 }, () => {
    const r = exec(process.execPath, ['time.mjs', entry], app);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    return Number(r.stdout.trim());
  }).sort((a, b) => a - b);
  return runs[1] as number;
}

describe('the entry points of the packed package', () => {
  const loaded = new Map<EntryPoint, string[]>();
  const load = (entry: EntryPoint) => loaded.get(entry) ?? loaded.set(entry, loadedBy(entry)).get(entry)!;

  test('jobvisor/client loads no worker, supervisor, dashboard or metrics: no piscina, hono or prom-client', (t) => {
    if (skipReason) return t.skip(skipReason);
    const root = load('jobvisor');
    const client = load('jobvisor/client');
    // The probe sees them where they are loaded, or its silence below would prove nothing.
    for (const name of HEAVY) assert.ok(packagesOf(root).has(name), `the root loads ${name}`);
    const heavy = HEAVY.filter((name) => packagesOf(client).has(name));
    assert.deepEqual(heavy, [], `jobvisor/client loads ${heavy.join(', ')}`);
    const workerSide = ownFiles(client).filter((f) => WORKER_SIDE.includes(f.split('/')[0] as string));
    assert.deepEqual(workerSide, [], 'jobvisor/client loads files of the worker side');
    assert.ok(
      client.length <= CLIENT_MODULE_BUDGET,
      `jobvisor/client loads ${client.length} modules (budget ${CLIENT_MODULE_BUDGET}): ${client.join('\n')}`,
    );
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

  test('require("jobvisor/client") from a CommonJS file loads no piscina, hono or prom-client either', (t) => {
    if (skipReason) return t.skip(skipReason);
    const required = (specifier: string) => {
      const r = exec(process.execPath, ['required.cjs', specifier], app);
      assert.equal(r.status, 0, r.stdout + r.stderr);
      return packagesOf((JSON.parse(r.stdout) as string[]).map((f) => `file://${f}`));
    };
    const root = required('jobvisor');
    assert.ok(root.has('piscina') && root.has('prom-client'), `require("jobvisor") loads ${[...root].join(' ')}`);
    const client = required('jobvisor/client');
    assert.deepEqual(
      HEAVY.filter((name) => client.has(name)),
      [],
    );
  });

  test('jobvisor/client imports faster than the root (median of three fresh processes)', (t) => {
    if (skipReason) return t.skip(skipReason);
    const ms = { root: importMs('jobvisor'), client: importMs('jobvisor/client') };
    t.diagnostic(`import('jobvisor'): ${ms.root.toFixed(0)} ms; import('jobvisor/client'): ${ms.client.toFixed(0)} ms`);
    assert.ok(ms.client < ms.root, JSON.stringify(ms));
  });

  test('the root exports exactly the union of the subpaths, the same objects, each name once', (t) => {
    if (skipReason) return t.skip(skipReason);
    const r = exec(process.execPath, ['exports.mjs', ...ENTRY_POINTS], app);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const { root, owners } = JSON.parse(r.stdout) as { root: string[]; owners: Record<string, string[]> };
    assert.deepEqual(Object.keys(owners).sort(), root);
    const odd = Object.entries(owners).filter(([, where]) => where.length !== 1);
    assert.deepEqual(odd, [], 'a name in two subpaths, or not the root object');
    assert.ok(owners.enqueue?.[0] === 'jobvisor/client' && owners.run?.[0] === 'jobvisor/worker');
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
