/**
 * Fuzz: the jobvisor command with random and hostile arguments (seeded;
 * FUZZ_SEED replays). The contract: exit 0, or exit 2 with exactly one line on
 * stderr naming what is wrong and nothing written; exit 1 only for `jobs
 * retry|cancel` ids well formed but not changeable (a line per id). Most cases run the
 * command in this process (a process start per case would dominate the run);
 * a few need a real process: raw invalid UTF-8 in argv, a huge argument, a
 * broken config file, an unreachable database.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { int, nested, NASTY_STRINGS, pick, randomJson, randomString, type Random } from '../helpers/chaos/hostile.ts';
import { prng, report } from '../helpers/chaos/measure.ts';
import { runCli, runCliInProcess, runProcess, type CliRun as Run } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { BIN, writeConfig } from '../helpers/supervisor.ts';

const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
const CASES = 250;

let db: TestDatabase;

before(async () => {
  db = await createTestDatabase('fuzz_cli');
});

after(async () => {
  await db.drop();
});

const inProcess = (argv: string[]) => runCliInProcess(db.url, argv, { LOG_LEVEL: 'warn' });

function spawned(argv: string[], env: Record<string, string> = {}, shell?: string): Promise<Run> {
  const fullEnv = {
    ...process.env,
    DATABASE_URL: db.url,
    JOBVISOR_CONFIG: '',
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    ...env,
  };
  if (shell) return runProcess('/bin/sh', ['-c', shell], { env: { ...fullEnv, NODE: process.execPath, BIN } });
  return runCli(db.url, argv, { LOG_LEVEL: 'warn', ...env });
}

/** Everything the command could change, in one value. */
async function fingerprint(): Promise<string> {
  return (
    await db.pool.query(
      "SELECT count(*) || ':' || coalesce(md5(string_agg(id || status || attempts || coalesce(run_at::text, ''), ',' ORDER BY id)), '') AS f FROM jobvisor.jobs",
    )
  ).rows[0].f;
}

const oneLine = (text: string) =>
  text.endsWith('\n') && text.indexOf('\n') === text.length - 1 && text.startsWith('jobvisor: ');

function hostileValue(random: Random): string {
  return pick(random, [
    ...NASTY_STRINGS,
    '-1',
    '0',
    '1',
    '1.5',
    '1e3',
    '0x10',
    '99999999999999999999',
    '-1000001',
    '1000000',
    ' 7',
    '7 ',
    'NaN',
    '--json',
    '-',
    '2030-01-01T00:00:00Z',
    '2030-01-01',
    '1969-01-01T00:00:00Z',
    '99999-01-01T00:00:00Z',
    '2030-13-45T99:99:99Z',
    'now',
    '10s',
    '500ms',
    '-5s',
    '1e400s',
    '11y',
    '1\n2',
    'soon',
    'q.1',
    'default',
    'a:b',
  ]);
}

function brokenJson(random: Random): string {
  const good = JSON.stringify(randomJson(random, 3));
  return pick(random, [
    good.slice(0, Math.max(1, Math.floor(good.length / 2))),
    "{'a':1}",
    'NaN',
    '{"a":1,}',
    '[1,]',
    'undefined',
    '{"a":01}',
    '"\\x41"',
    '{"s":"\\u0000"}',
    '{"s":"\\ud800"}',
    '{"\\u0000":1}',
    JSON.stringify(nested(150)),
    '['.repeat(5000) + ']'.repeat(5000),
    JSON.stringify({ blob: 'x'.repeat(1024 * 1024 + 10) }),
    '',
    ' ',
    '{}garbage',
    '\ufeff{}',
  ]);
}

function randomArgv(random: Random): { argv: string[]; note: string; enqueue?: { json?: string } } {
  const r = random();
  if (r < 0.6) {
    const argv = ['enqueue'];
    const kind = random() < 0.6 ? 'chaos_echo' : pick(random, [...NASTY_STRINGS, 'a.b', '--kind', '-k', 'ok_kind']);
    const withKind = random() < 0.95;
    if (withKind) argv.push(kind);
    let json: string | undefined;
    const j = random();
    if (j < 0.5) json = JSON.stringify(randomJson(random, 3, true));
    else if (j < 0.75) json = brokenJson(random);
    else if (j < 0.85) json = randomString(random, true);
    if (json !== undefined) argv.push(json);
    for (const option of ['--queue', '--priority', '--run-at', '--delay', '--max-attempts', '--unique-key']) {
      if (random() < 0.2) argv.push(option, hostileValue(random));
    }
    if (random() < 0.1) argv.push('--json');
    if (random() < 0.05) argv.push(pick(random, ['--bogus', '--queue', 'extra', '--priority=3', '-x']));
    // Without a kind, the JSON argument is taken for the kind: no payload to compare.
    return { argv, note: 'enqueue', enqueue: { json: withKind ? json : undefined } };
  }
  if (r < 0.75) {
    const argv = ['jobs', 'list'];
    for (const option of ['--status', '--kind', '--queue', '--limit'])
      if (random() < 0.3) argv.push(option, hostileValue(random));
    if (random() < 0.2) argv.push('--json');
    return { argv, note: 'jobs list' };
  }
  if (r < 0.87) {
    const argv = ['jobs', pick(random, ['retry', 'cancel'])];
    for (let i = int(random, 0, 3); i > 0; i--)
      argv.push(
        pick(random, [
          '1',
          '2',
          '0',
          '-1',
          '1e3',
          '99999999999999999999',
          'abc',
          '',
          '1,2',
          ' 1',
          '9223372036854775807',
          '123456789012345678',
        ]),
      );
    if (random() < 0.2) argv.push(pick(random, ['--failed', '--kind', '--failed --kind x']));
    return { argv, note: 'jobs retry/cancel' };
  }
  if (r < 0.95)
    return {
      argv: ['stats', ...(random() < 0.5 ? [pick(random, ['--json', '--verbose', 'x', '--json=1'])] : [])],
      note: 'stats',
    };
  return {
    argv: [pick(random, ['', 'frobnicate', 'ENQUEUE', '--queue', '-v', 'jobs', 'help'])].filter(
      (a) => a !== '' || random() < 0.5,
    ),
    note: 'other',
  };
}

describe('fuzz: the jobvisor command', () => {
  it(`${CASES} random and hostile command lines: exit 0, or exit 2 with one line and nothing written (seed ${SEED})`, async () => {
    const random = prng(SEED);
    const failures: string[] = [];
    const codes: Record<string, number> = {};
    for (let i = 0; i < CASES; i++) {
      const c = randomArgv(random);
      const before = await fingerprint();
      let run: Run;
      try {
        run = await inProcess(c.argv);
      } catch (err) {
        failures.push(`#${i} threw ${(err as Error).message}: ${JSON.stringify(c.argv).slice(0, 200)}`);
        continue;
      }
      codes[String(run.code)] = (codes[String(run.code)] ?? 0) + 1;
      const shown = JSON.stringify(c.argv).slice(0, 200);
      const after = await fingerprint();
      if (run.code === 2 && c.argv.length === 0) {
        if (!run.stdout.startsWith('usage: jobvisor')) failures.push(`#${i} no command: exit 2 without the usage text`);
      } else if (run.code === 2) {
        if (!oneLine(run.stderr))
          failures.push(
            `#${i} exit 2 without exactly one line: ${JSON.stringify(run.stderr.slice(0, 200))} for ${shown}`,
          );
        if (run.stdout !== '') failures.push(`#${i} exit 2 with output on stdout for ${shown}`);
        if (after !== before) failures.push(`#${i} exit 2 but the jobs table changed for ${shown}`);
      } else if (run.code === 1) {
        // retry/cancel: well-formed ids that could not be changed, one line each (the others were changed).
        const allowed =
          c.note === 'jobs retry/cancel' &&
          run.stderr
            .trim()
            .split('\n')
            .every((l) => /^job \d+: /.test(l));
        if (!allowed) failures.push(`#${i} exit 1 (${JSON.stringify(run.stderr.slice(0, 200))}) for ${shown}`);
      } else if (run.code === 0) {
        if (c.note === 'enqueue') {
          const json = run.stdout.trim().startsWith('{');
          const id = (json ? JSON.parse(run.stdout).id : run.stdout.trim()) as string;
          // A unique key an earlier case already used: the id is that job's, and so is the payload.
          // Its line may follow a warning (no task for the kind here): any line of stderr.
          const duplicate = json ? JSON.parse(run.stdout).duplicate === true : /^skipped: /m.test(run.stderr);
          const row = (await db.pool.query('SELECT payload::text AS payload FROM jobvisor.jobs WHERE id = $1', [id]))
            .rows[0];
          if (!row) failures.push(`#${i} exit 0 but job ${JSON.stringify(id)} not found for ${shown}`);
          else if (c.enqueue?.json !== undefined && !duplicate) {
            try {
              assert.deepEqual(JSON.parse(row.payload), JSON.parse(c.enqueue.json));
            } catch {
              failures.push(`#${i} stored payload differs from the argument for ${shown}`);
            }
          }
        }
      } else failures.push(`#${i} exit ${run.code} for ${shown}`);
    }
    report('fuzz.cli', {
      seed: SEED,
      cases: CASES,
      exitCodes: codes,
      failures: failures.length,
      firstFailures: failures.slice(0, 5),
    });
    assert.deepEqual(failures.slice(0, 10), [], `${failures.length} failing cases (FUZZ_SEED=${SEED})`);
  });

  it('real processes: raw invalid UTF-8, a huge argument, a broken config file, an unreachable database, a newline in a value', async () => {
    const before = await fingerprint();
    const brokenConfig = writeConfig({ jobs: { maxAttempts: 3 }, 'poll\n': { interval: '1s' } });
    const secret = 'Unreachable-Secret-4f1d9c';
    const [badKind, badPayload, huge, config, unreachable, newline] = await Promise.all([
      spawned([], {}, `exec "$NODE" "$BIN" enqueue "$(printf 'k\\377\\376')" '{}'`),
      spawned([], {}, `exec "$NODE" "$BIN" enqueue chaos_echo "$(printf '{"s":"a\\377b"}')"`),
      spawned(['enqueue', 'chaos_echo', JSON.stringify({ blob: 'y'.repeat(120_000) })]),
      spawned(['enqueue', 'chaos_echo', '{}'], { JOBVISOR_CONFIG: brokenConfig }),
      spawned(['stats'], { DATABASE_URL: `postgres://someone:${secret}@127.0.0.1:1/nowhere` }),
      spawned(['enqueue', 'chaos_echo', '{}', '--delay', '1\n2']),
    ]);
    const runs = { badKind, badPayload, huge, config, unreachable, newline };
    report(
      'fuzz.cli.processes',
      Object.fromEntries(
        Object.entries(runs).map(([k, r]) => [k, { code: r.code, stderr: r.stderr.trim().slice(0, 140) }]),
      ),
    );
    assert.equal(badKind.code, 2, badKind.stderr);
    assert.ok(oneLine(badKind.stderr), badKind.stderr);
    // Node decodes invalid UTF-8 in argv as U+FFFD before jobvisor sees it: stored as data.
    assert.equal(badPayload.code, 0, badPayload.stderr);
    const stored = (
      await db.pool.query('SELECT payload ->> $2 AS s FROM jobvisor.jobs WHERE id = $1', [
        badPayload.stdout.trim(),
        's',
      ])
    ).rows[0];
    assert.equal(stored?.s, 'a\ufffd\ufffdb'.replace('\ufffd\ufffd', '\ufffd'));
    assert.equal(huge.code, 0, huge.stderr);
    assert.equal(config.code, 2, config.stderr);
    assert.ok(oneLine(config.stderr), `one line: ${JSON.stringify(config.stderr)}`);
    assert.match(config.stderr, /unknown key "poll\\n"/);
    assert.equal(unreachable.code, 1, unreachable.stderr);
    assert.ok(oneLine(unreachable.stderr), `one line: ${JSON.stringify(unreachable.stderr)}`);
    assert.ok(
      !unreachable.stderr.includes(secret) && !unreachable.stdout.includes(secret),
      'the password is not printed',
    );
    assert.equal(newline.code, 2, newline.stderr);
    assert.ok(oneLine(newline.stderr), `one line: ${JSON.stringify(newline.stderr)}`);
    const after = await fingerprint();
    assert.equal(
      Number(after.split(':')[0]),
      Number(before.split(':')[0]) + 2,
      'only the two accepted jobs were written',
    );
  });
});
