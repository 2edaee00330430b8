/**
 * Secrets never shown: what logs (jobvisor's and a task's ctx.log), a job's
 * recorded errors and the dashboard print. One list of names (src/secrets.ts),
 * at any depth; a URL keeps its host and loses its password.
 *
 * The pure rules first, then a real supervisor process whose tasks log
 * secrets three levels down, fail quoting a card token, and meet a payload
 * whose token is an integer beyond 2^53: neither its log, nor `last_error`,
 * nor the dashboard's pages show any of them.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { LOG_REDACTION, redactChildren } from '../../src/log.ts';
import { redactSecrets, redactText, secretKeyNames, secretValues, SECRET_KEYS } from '../../src/secrets.ts';
import { withoutSecrets } from '../../src/worker/convert.ts';
import { parsePayload, PayloadError } from '../../src/worker/payload.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { serveTestDashboard, TEST_TOKEN } from '../helpers/dashboard.ts';
import { FIXTURE_TASKS } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';
import { assertDrains, killAll, spawnSupervisor, type SpawnedSupervisor } from '../helpers/supervisor.ts';

/** Lines a logger built with jobvisor's redaction writes. */
function capture(): { log: pino.Logger; lines: () => Array<Record<string, unknown>> } {
  let text = '';
  const stream = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  const log = redactChildren(pino({ ...LOG_REDACTION, base: null, timestamp: false }, stream));
  return {
    log,
    lines: () =>
      text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

describe('the rules', () => {
  it('hide values under secret names at any depth, in any spelling, and keep the rest', () => {
    const url = new URL('https://svc:url-pw@h.example/x?access_token=abc&page=2');
    const out = redactSecrets({
      a: { b: { c: { d: { password: 'p' } } } },
      token: 't',
      headers: { Authorization: 'Bearer x', 'X-Api-Key': 'k', accept: 'json' },
      apiKey: 'k2',
      list: [{ refresh_token: 'r' }, { clientSecret: 's' }],
      url: 'postgres://app:pw@db:5432/app',
      plain: 'https://example.com/a?b=c',
      href: url,
      tokenCount: 5,
      tokens: [1, 2],
      uniqueKey: 'u',
      token2: null,
      password: null,
    });
    assert.deepEqual(JSON.parse(JSON.stringify(out)), {
      a: { b: { c: { d: { password: '[redacted]' } } } },
      token: '[redacted]',
      headers: { Authorization: '[redacted]', 'X-Api-Key': '[redacted]', accept: 'json' },
      apiKey: '[redacted]',
      list: [{ refresh_token: '[redacted]' }, { clientSecret: '[redacted]' }],
      url: 'postgres://app:[redacted]@db:5432/app',
      plain: 'https://example.com/a?b=c',
      href: 'https://svc:[redacted]@h.example/x?access_token=[redacted]&page=2',
      tokenCount: 5,
      tokens: [1, 2],
      uniqueKey: 'u',
      token2: null,
      password: null,
    });
  });

  it('copy nothing when nothing is hidden, and survive cycles and throwing getters', () => {
    const clean = { a: [{ b: 1 }], s: 'x' };
    assert.equal(redactSecrets(clean), clean);
    const cyclic: Record<string, unknown> = { secret: 's', n: 1 };
    cyclic.self = cyclic;
    const out = redactSecrets(cyclic) as Record<string, unknown>;
    assert.equal(out.secret, '[redacted]');
    assert.equal(cyclic.secret, 's', 'the logged object itself is untouched');
    const hostile = {
      get boom(): never {
        throw new Error('getter');
      },
    };
    assert.deepEqual(redactSecrets({ x: hostile }), { x: '[redacted]' });
  });

  it('one list: every name, without underscores and with hyphens', () => {
    for (const k of ['password', 'token', 'secret', 'authorization', 'api_key', 'cookie'])
      assert.ok((SECRET_KEYS as readonly string[]).includes(k), k);
    assert.deepEqual(secretKeyNames(['API_Key']).sort(), ['api-key', 'api_key', 'apikey']);
  });

  it('a text loses the values a payload holds under secret names, and URL passwords', () => {
    const payload = { amount: 1200, card: { token: 'tok_live_4242', last4: 4242 }, pin: { secret: 987654 } };
    const secrets = secretValues(payload);
    assert.deepEqual(secrets.sort(), ['987654', 'tok_live_4242']);
    assert.equal(
      redactText('card tok_live_4242 (4242, 1200) pin 987654 at postgres://u:pw@h/db', secrets),
      'card [redacted] (4242, 1200) pin [redacted] at postgres://u:[redacted]@h/db',
    );
    const error = withoutSecrets(
      {
        name: 'Error',
        message: 'failed for tok_live_4242',
        stack: 'at x (file.js:1:1)',
        permanent: false,
        retryInMs: null,
      },
      payload,
    );
    assert.equal(error.message, 'failed for [redacted]');
  });

  it('a payload error names where the unsafe integer is, and quotes it only outside a secret', () => {
    const under = (text: string) => {
      try {
        parsePayload(text);
      } catch (err) {
        assert.ok(err instanceof PayloadError);
        return err.message;
      }
      return assert.fail('refused');
    };
    const secret = under('{"card": {"token": 9007199254740993}}');
    assert.match(
      secret,
      /^payload\.card\.token is an integer beyond 2\^53 - 1 that JavaScript cannot hold exactly; send it/,
    );
    assert.doesNotMatch(secret, /900719925474099/);
    assert.match(under('{"order": {"id": 9007199254740993}}'), /payload\.order\.id .*\(9007199254740993\)/);
    // JSON.parse's own message quotes the text: never passed on.
    assert.doesNotMatch(under('{"token": "s3cr3t-value" x}'), /s3cr3t/);
  });

  it('loggers built with LOG_REDACTION hide them in the object, in bindings and in a serialized error', () => {
    const { log, lines } = capture();
    const err = Object.assign(new Error('connect to postgres://app:err-pw@db/app failed'), {
      config: { password: 'cfg-pw' },
    });
    log
      .child({ session: { token: 'child-token' } })
      .child({ password: 'grandchild-pw' })
      .info({ deep: { er: { password: 'pw-3' } } }, 'one');
    log.error({ err }, 'two');
    const text = JSON.stringify(lines());
    for (const s of ['child-token', 'grandchild-pw', 'pw-3', 'err-pw', 'cfg-pw']) assert.ok(!text.includes(s), s);
    assert.match(text, /postgres:\/\/app:\[redacted\]@db\/app failed/);
  });
});

describe('a supervisor process, its logs, its errors and the dashboard', () => {
  let db: TestDatabase;
  const spawned: SpawnedSupervisor[] = [];

  before(async () => {
    db = await createTestDatabase('secrets');
  });
  after(async () => {
    await killAll(spawned);
    await db.drop();
  });

  it('show no secret a task logged, quoted or was given', async () => {
    const s = await spawnSupervisor({
      databaseUrl: db.url,
      tasksDir: FIXTURE_TASKS,
      config: { backoff: { base: '10ms', max: '10ms' } },
      env: { LOG_LEVEL: 'debug' },
      readyTimeoutMs: 60_000,
    });
    spawned.push(s);
    const { rows } = await db.pool.query<{ id: string }>(
      `INSERT INTO jobvisor.jobs (kind, payload, max_attempts) VALUES
         ('log_secrets_deep', '{}', 1),
         ('fail_quoting', '{"amount": 1200, "card": {"token": "tok_live_card_8"}}', 2),
         ('record', '{"card": {"token": 9007199254740993}}', 3)
       RETURNING id`,
    );
    const [logged, quoting, unsafe] = rows.map((r) => r.id) as [string, string, string];
    // Written by an older version, or by hand: the page still hides what the payload hides.
    const [seeded] = (
      await db.pool.query<{ id: string }>(
        `INSERT INTO jobvisor.jobs (kind, payload, status, attempts, last_error, errors, finished_at)
         VALUES ('old', '{"password": "seeded-pw-9"}', 'failed', 1, 'Error: login seeded-pw-9 refused',
                 '[{"attempt": 1, "at": "2026-01-01T00:00:00Z", "error": "Error: login seeded-pw-9 refused"}]', now())
         RETURNING id`,
      )
    ).rows.map((r) => r.id) as [string];
    const jobs = await until(
      'every job finished',
      async () =>
        (
          await db.pool.query<{ id: string; status: string; last_error: string | null; errors: unknown }>(
            'SELECT id, status, last_error, errors FROM jobvisor.jobs WHERE id = ANY($1) ORDER BY id',
            [[logged, quoting, unsafe]],
          )
        ).rows,
      (r) => r.every((j) => j.status === 'done' || j.status === 'failed'),
      60_000,
    );
    await s.waitForLog(/job dead-lettered/, 30_000, (l) => JSON.stringify(l).includes(unsafe));
    await assertDrains(s);

    const secrets = [
      'auth-secret-1',
      'apikey-secret-2',
      'deep-password-3',
      'top-token-4',
      'refresh-secret-5',
      'url-password-6',
      'query-secret-7',
      'tok_live_card_8',
      '9007199254740993',
      '9007199254740992',
    ];
    const logText = JSON.stringify(s.logs);
    for (const secret of secrets) assert.ok(!logText.includes(secret), `the supervisor's log shows ${secret}`);
    const line = s.logs.find((l) => l.msg === 'task logged secrets at depth');
    assert.ok(line, 'the task logged');
    assert.equal(line.url, 'https://api.example.com/v1/hooks?page=2', 'a url without credentials is shown as it is');
    assert.equal(line.database, 'postgres://app:[redacted]@db.internal:5432/app');
    assert.equal(line.callback, 'https://hooks.example.com/in?token=[redacted]&page=3');
    assert.equal(line.tokenCount, 12);

    const rowsText = JSON.stringify(jobs);
    for (const secret of secrets) assert.ok(!rowsText.includes(secret), `last_error or errors show ${secret}`);
    const byId = new Map(jobs.map((j) => [j.id, j]));
    assert.match(byId.get(quoting)?.last_error ?? '', /^Error: charge of 1200 failed for card token \[redacted\]/);
    assert.match(
      byId.get(unsafe)?.last_error ?? '',
      /^PayloadError: payload\.card\.token is an integer beyond 2\^53 - 1 that/,
    );

    const d = await serveTestDashboard({ pool: db.pool });
    try {
      const page = async (path: string) =>
        (await fetch(`${d.url}${path}`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } })).text();
      for (const path of [`jobs/${quoting}`, `jobs/${unsafe}`, `jobs/${seeded}`, 'jobs?status=failed', 'jobs']) {
        const html = await page(path);
        for (const secret of [...secrets, 'seeded-pw-9']) assert.ok(!html.includes(secret), `${path} shows ${secret}`);
      }
      assert.match(await page(`jobs/${seeded}`), /login \[redacted\] refused/);
    } finally {
      await d.close();
    }
  });
});
