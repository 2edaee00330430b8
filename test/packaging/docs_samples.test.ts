/**
 * Every code sample of the docs site is checked:
 *
 * - TypeScript fences of every page (docs/**\/*.md), and of README.md (its
 *   library quick start), are written out, one folder per page, and
 *   type-checked strictly with `jobvisor` mapped to src/index.ts
 *   (`jobvisor/client`, … to src/entry/).
 *   docs/reference/api.md is left out: its blocks are the signatures TypeDoc
 *   prints from the types themselves.
 * - The shell fences marked `<!-- runnable -->` (test/helpers/doc_samples.ts)
 *   run in page order in that folder, against a new, empty database: the
 *   getting-started path end to end (migrate, enqueue in a transaction, a
 *   worker started by run() that runs the job, the job listed done). The
 *   page's own install step is replaced by linking the package, built from src
 *   as the tarball would ship it (the package is not on the registry yet).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import ts from 'typescript';
import { sharedPackage, type CompiledPackage } from '../helpers/compile.ts';
import { adminQuery, urlOf } from '../helpers/db.ts';
import { docPages, ROOT, samplesOf, TYPESCRIPT, writeSamples, type Sample } from '../helpers/doc_samples.ts';
import { until } from '../helpers/poll.ts';

const WORK = path.join(ROOT, '.jobvisor', `docs-samples-${process.pid}`);
const NOT_CHECKED = new Set(['reference/api.md']);

after(() => rmSync(WORK, { recursive: true, force: true }));

/** Type errors of the samples in `dir` (each named by page and line of the Markdown), with jobvisor from src. */
function typeErrors(
  files: Map<string, Sample>,
  dir: string,
  old?: ts.Program,
): { errors: string[]; program: ts.Program } {
  writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        allowImportingTsExtensions: true,
        lib: ['ES2024'],
        types: ['node'],
        paths: {
          jobvisor: [path.join(ROOT, 'src/index.ts')],
          'jobvisor/*': [path.join(ROOT, 'src/entry/*.ts')],
        },
      },
      include: ['**/*.ts'],
    }),
  );
  const config = ts.parseJsonConfigFileContent(
    ts.readConfigFile(path.join(dir, 'tsconfig.json'), (f) => ts.sys.readFile(f)).config,
    ts.sys,
    dir,
  );
  const program = ts.createProgram({ rootNames: config.fileNames, options: config.options, oldProgram: old });
  // The samples' own diagnostics only: each is checked against the types it uses, while the
  // whole program's (getPreEmitDiagnostics) would check all of src again for every page.
  const errors = program
    .getSourceFiles()
    .filter((file) => files.has(path.resolve(file.fileName)))
    .flatMap((file) => [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)])
    .map((d) => {
      const file = d.file as ts.SourceFile;
      const sample = files.get(path.resolve(file.fileName)) as Sample;
      const { line } = file.getLineAndCharacterOfPosition(d.start ?? 0);
      return `${path.posix.normalize(`docs/${sample.page}`)}:${sample.line + line}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
  return { errors, program };
}

describe('docs samples', { timeout: 300_000 }, () => {
  it('type-checks every TypeScript sample of every page against the sources', () => {
    let program: ts.Program | undefined;
    const errors: string[] = [];
    let checked = 0;
    for (const page of docPages()) {
      if (NOT_CHECKED.has(page)) continue;
      const samples = samplesOf(page).filter((s) => TYPESCRIPT.has(s.lang));
      if (samples.length === 0) continue;
      const dir = path.join(WORK, 'typecheck', page.replace(/\.md$/, ''));
      const files = writeSamples(samples, dir);
      const result = typeErrors(files, dir, program);
      program = result.program;
      errors.push(...result.errors);
      checked += samples.length;
    }
    // The README's library quick start, as the npm page shows it.
    const readme = samplesOf('../README.md', readFileSync(path.join(ROOT, 'README.md'), 'utf8')).filter((s) =>
      TYPESCRIPT.has(s.lang),
    );
    assert.ok(readme.length >= 1, 'README.md has its TypeScript quick start');
    const result = typeErrors(
      writeSamples(readme, path.join(WORK, 'typecheck', 'README')),
      path.join(WORK, 'typecheck', 'README'),
      program,
    );
    errors.push(...result.errors);
    checked += readme.length;
    assert.ok(checked >= 5, `only ${checked} TypeScript samples found: is the docs folder there?`);
    assert.deepEqual(errors, [], `samples that do not type-check:\n${errors.join('\n')}`);
  });

  it('runs the getting-started path end to end against a new database', async (t) => {
    const page = 'getting-started/index.md';
    const samples = samplesOf(page);
    const steps = samples.filter((s) => s.runnable);
    assert.ok(steps.length >= 4, `${page}: only ${steps.length} runnable samples`);
    const app = path.join(WORK, 'getting-started');
    writeSamples(samples, app);
    linkPackage(app, sharedPackage());

    const database = `docs_start_${process.pid}`;
    await adminQuery(`DROP DATABASE IF EXISTS ${database}`);
    await adminQuery(`CREATE DATABASE ${database}`);
    const background: Array<{ child: ChildProcess; sample: Sample; output: () => string }> = [];
    t.after(async () => {
      for (const b of background) if (b.child.exitCode === null) signalGroup(b.child, 'SIGKILL');
      await adminQuery(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    });
    const env = appEnv(app, urlOf(database));

    for (const step of steps) {
      const where = `docs/${page}:${step.line}`;
      const options = step.runnable as Record<string, string>;
      if ('background' in options) {
        const started = start(step.code, app, env);
        background.push({ ...started, sample: step });
        const until_ = options.until ?? '';
        await until(
          `${where}: output holding ${JSON.stringify(until_)}`,
          () => ({
            seen: started.output().includes(until_),
            exited: started.child.exitCode,
            tail: started.output().slice(-1500),
          }),
          (read) => read.seen || read.exited !== null,
          60_000,
        );
        assert.equal(started.child.exitCode, null, `${where} exited early:\n${started.output()}`);
        continue;
      }
      const { code, output } = await runToEnd(step.code, app, env);
      assert.equal(code, 0, `${where} exited ${code}:\n${output}`);
      if (options.expect) assert.ok(output.includes(options.expect), `${where}: no ${options.expect} in\n${output}`);
    }
    // The background commands (the worker) drain and exit 0 on Ctrl-C, as the page says: SIGINT
    // to the command's process group, as a terminal sends it.
    for (const b of background) {
      signalGroup(b.child, 'SIGINT');
      const code = await new Promise<number | null>((resolve) => {
        if (b.child.exitCode !== null) resolve(b.child.exitCode);
        else b.child.once('exit', (c) => resolve(c));
      });
      assert.equal(code, 0, `docs/${page}:${b.sample.line} exited ${code} on Ctrl-C:\n${b.output()}`);
    }
  });
});

/** What `npm install jobvisor` and the dev tools of the page leave in node_modules, linked from the checkout. */
function linkPackage(app: string, compiled: CompiledPackage): void {
  mkdirSync(path.join(app, 'node_modules/.bin'), { recursive: true });
  symlinkSync(compiled.root, path.join(app, 'node_modules/jobvisor'));
  symlinkSync(path.join(compiled.root, 'bin/jobvisor.js'), path.join(app, 'node_modules/.bin/jobvisor'));
  symlinkSync(path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'), path.join(app, 'node_modules/.bin/tsx'));
}

/** The environment of a user's shell: no npm_*, JOBVISOR_* or test variables; the app's bin first on PATH. */
function appEnv(app: string, databaseUrl: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!/^(npm_|JOBVISOR_|OTEL_|DATABASE_|NODE_ENV$|METRICS_|NODE_OPTIONS$)/.test(k)) env[k] = v;
  env.PATH = `${path.join(app, 'node_modules/.bin')}${path.delimiter}${env.PATH ?? ''}`;
  env.DATABASE_URL = databaseUrl;
  env.npm_config_offline = 'true';
  return env;
}

function start(code: string, cwd: string, env: NodeJS.ProcessEnv): { child: ChildProcess; output: () => string } {
  // Its own process group, as a shell's job: signalGroup() reaches every process of the command.
  const child = spawn('bash', ['-euo', 'pipefail', '-c', code], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  return { child, output: () => output };
}

async function runToEnd(
  code: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; output: string }> {
  const { child, output } = start(code, cwd, env);
  const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), 120_000);
  const exit = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code: exit, output: output() };
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-(child.pid as number), signal);
  } catch {
    // the group has already ended
  }
}
