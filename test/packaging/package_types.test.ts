/**
 * The types an app gets from the packed package, and a CommonJS app in
 * TypeScript that uses them. An app's own declarations of its kinds
 * (test/fixtures/types: a registry in jobs.ts, right and wrong uses in
 * usage.ts, mistyped kinds in typo.ts, no registry in untyped.ts) are checked
 * against the installed tarball by TypeScript 5.9 (the project's) and 7 (the
 * native compiler, installed in the app), as CommonJS files (`"type":
 * "commonjs"`, as a NestJS app compiled by tsc) and as ES module files (a
 * folder with `"type": "module"`), under each module setting docs/getting-started/install.md names
 * (ES module files under node16 are checked by test/packaging/package.test.ts).
 * TypeScript 7 also checks the package's declarations (skipLibCheck off; it is
 * fast); 5.9 skips them as most apps do. A wrong setting loses the package's
 * types silently (everything `any`), so usage.ts holds lines that are errors
 * only while the types resolve. Then the CommonJS app is compiled by tsc and
 * run: require() of the package, a duplicate's id as a parent, a defineJob queue.
 *
 * Needs the npm registry (or npm's cache) for the app's dependencies: skipped
 * with the reason when neither answers.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { cleanEnv, depVersion, execAsync, npmInstall, packedTarball, ROOT, write } from '../helpers/packed.ts';
import { markedErrors, reportedErrors } from '../helpers/type_errors.ts';

const work = mkdtempSync(path.join(tmpdir(), 'jobvisor-package-types-'));
const app = path.join(work, 'typed-app');
const TYPE_FIXTURES = path.join(ROOT, 'test/fixtures/types');
const TS59 = path.join(ROOT, 'node_modules/typescript/bin/tsc');
/** TypeScript 7, the native compiler (`npm i typescript@7`), beside the project's 5.9. */
const TS7_PACKAGE = 'typescript7@npm:typescript@7.0.2';
const TS7 = path.join(app, 'node_modules/typescript7/bin/tsc');

const APP: Record<string, string> = {
  'package.json': JSON.stringify({ name: 'typed-app', version: '1.0.0', private: true, type: 'commonjs' }),
  'esm/package.json': JSON.stringify({ type: 'module' }),
  'src/main.ts': `import { Pool } from 'pg';
import { enqueue, migrate } from 'jobvisor';
import { resizeImage } from '../types/jobs.js';

async function main(): Promise<void> {
  const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
  await migrate(pool);
  const invoice = { invoiceId: 7, email: 'a@example.com' };
  const first = await enqueue(pool, 'send_invoice', invoice, { uniqueKey: 'invoice-7' });
  const again = await enqueue(pool, 'send_invoice', invoice, { uniqueKey: 'invoice-7' });
  const child = await enqueue(pool, resizeImage, { imageId: 'i7', widths: [64] }, { dependsOn: [again.id] });
  const { rows } = await pool.query(
    'SELECT id::text, queue, status, max_attempts FROM jobvisor.jobs WHERE id = ANY($1) ORDER BY id',
    [[first.id, child.id]],
  );
  await pool.end();
  console.log(JSON.stringify({ first, again, child, rows }));
}
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
`,
};

type Version = '5.9' | '7';
interface Setting {
  label: string;
  compilerOptions: Record<string, unknown>;
  /** The versions that have the setting: TypeScript 7 removed moduleResolution node10. */
  versions: Version[];
}

/** CommonJS files (module node16 has a test of its own). */
const COMMONJS: Setting[] = [
  { label: 'module nodenext', compilerOptions: { module: 'nodenext' }, versions: ['5.9', '7'] },
  {
    label: 'module commonjs, moduleResolution node10, no esModuleInterop',
    compilerOptions: { module: 'commonjs', moduleResolution: 'node10', esModuleInterop: false },
    versions: ['5.9'],
  },
  { label: 'module commonjs, its default resolution', compilerOptions: { module: 'commonjs' }, versions: ['7'] },
];
const ES_MODULES: Setting[] = [
  { label: 'module nodenext', compilerOptions: { module: 'nodenext' }, versions: ['5.9', '7'] },
  {
    label: 'module esnext, moduleResolution bundler',
    compilerOptions: { module: 'esnext', moduleResolution: 'bundler' },
    versions: ['5.9', '7'],
  },
];

const REGISTRY = ['jobs.ts', 'usage.ts'];
const WITH_TYPOS = [...REGISTRY, 'typo.ts'];

let db: TestDatabase;
let skipReason: string | undefined;
let checks = 0;

/** tsc of `version` over `files` of the app under `compilerOptions`; its errors as `file:line TSnnnn`. */
async function typeCheck(version: Version, compilerOptions: Record<string, unknown>, files: string[]) {
  const config = `tsconfig.check-${++checks}.json`;
  writeFileSync(
    path.join(app, config),
    JSON.stringify({
      compilerOptions: {
        target: 'es2022',
        strict: true,
        noEmit: true,
        types: ['node'],
        skipLibCheck: version === '5.9',
        ...compilerOptions,
      },
      files,
    }),
  );
  const r = await execAsync(process.execPath, [version === '7' ? TS7 : TS59, '-p', config, '--pretty', 'false'], app);
  return {
    ...r,
    errors: reportedErrors(r.stdout),
    output: `TypeScript ${version}, ${config}:\n${r.stdout}${r.stderr}`,
  };
}

before(() => {
  const { tarball } = packedTarball();
  write(app, APP);
  for (const dir of ['types', 'esm/types']) cpSync(TYPE_FIXTURES, path.join(app, dir), { recursive: true });
  const installed = npmInstall(app, [
    tarball,
    `pg@${depVersion('pg')}`,
    `@types/node@${depVersion('@types/node')}`,
    `@types/pg@${depVersion('@types/pg')}`,
    TS7_PACKAGE,
  ]);
  skipReason = installed.offline;
});

after(async () => {
  await db?.drop();
  if (process.env.JOBVISOR_TEST_KEEP !== '1') rmSync(work, { recursive: true, force: true });
});

// The tests run at once: each compiler is a process of its own, and the file has the runner's
// 300 s, packing and installing included, on a machine that may be busy with other work.
describe('an app that declares its kinds, with the packed package', { concurrency: 4 }, () => {
  test('CommonJS, module node16: tsc 5.9 and 7 pass on its declared kinds and fail on a mistyped kind', async (t) => {
    if (skipReason) return t.skip(skipReason);
    // One run each: its errors are exactly the lines marked in typo.ts, so the declared kinds'
    // files (jobs.ts, usage.ts) pass in the same program.
    const files = WITH_TYPOS.map((f) => `types/${f}`);
    const runs = await Promise.all((['5.9', '7'] as const).map((v) => typeCheck(v, { module: 'node16' }, files)));
    for (const wrong of runs) {
      assert.notEqual(wrong.status, 0, wrong.output);
      assert.deepEqual(wrong.errors, markedErrors(app, files), wrong.output);
      assert.match(
        wrong.stdout,
        /typo\.ts\(7,\d+\): error TS2345: Argument of type '"welcom_email"' is not assignable/,
      );
    }
  });

  // One run per setting: the errors are exactly the lines marked in typo.ts, nothing in usage.ts.
  for (const [format, folder, settings] of [
    ['CommonJS', 'types', COMMONJS],
    ['ES module', 'esm/types', ES_MODULES],
  ] as const) {
    for (const { label, compilerOptions, versions } of settings) {
      test(`${format}, ${label}: declared kinds compile, each mistyped kind is the error marked on its line`, async (t) => {
        if (skipReason) return t.skip(skipReason);
        const files = WITH_TYPOS.map((f) => `${folder}/${f}`);
        for (const r of await Promise.all(versions.map((v) => typeCheck(v, compilerOptions, files))))
          assert.deepEqual(r.errors, markedErrors(app, files), r.output);
      });
    }
  }

  // TypeScript 5.9 checks this one against the sources (test/packaging/types.test.ts).
  test('CommonJS, module node16, no kind declared: any kind takes any payload', async (t) => {
    if (skipReason) return t.skip(skipReason);
    const r = await typeCheck('7', { module: 'node16' }, ['types/untyped.ts']);
    assert.equal(r.status, 0, r.output);
  });

  test('CommonJS, compiled by tsc and run: require() of the package, a duplicate id as a parent, a defineJob queue', async (t) => {
    if (skipReason) return t.skip(skipReason);
    db = await createTestDatabase('package_types');
    const options = ['--module', 'node16', '--target', 'es2022', '--strict', '--types', 'node', '--skipLibCheck'];
    const build = await execAsync(
      process.execPath,
      [TS59, ...options, '--outDir', 'out', '--rootDir', '.', 'src/main.ts', 'types/jobs.ts'],
      app,
    );
    assert.equal(build.status, 0, build.stdout + build.stderr);
    assert.match(readFileSync(path.join(app, 'out/src/main.js'), 'utf8'), /require\("jobvisor"\)/);
    const r = await execAsync(process.execPath, ['out/src/main.js'], app, cleanEnv({ DATABASE_URL: db.url }));
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1) as string) as {
      first: { id: string; duplicate: boolean };
      again: { id: string; duplicate: boolean };
      child: { id: string; duplicate: boolean };
      rows: Array<{ id: string; queue: string; status: string; max_attempts: number }>;
    };
    assert.deepEqual(out.again, { id: out.first.id, duplicate: true });
    assert.deepEqual(out.rows, [
      { id: out.first.id, queue: 'default', status: 'pending', max_attempts: 8 },
      { id: out.child.id, queue: 'images', status: 'blocked', max_attempts: 3 },
    ]);
  });
});
