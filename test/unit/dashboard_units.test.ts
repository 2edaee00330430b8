/** The dashboard's pure parts: token reading, credential checks, the same-site check, redaction, exposure, config. */
import { SECRET_KEYS } from '../../src/secrets.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/index.ts';
import { createAuth } from '../../src/dashboard/auth.ts';
import { cached } from '../../src/cached.ts';
import { refuseCrossSite } from '../../src/dashboard/origin.ts';
import { redactPayload } from '../../src/dashboard/redact.ts';
import { safeNext } from '../../src/dashboard/routes/login.ts';
import { checkExposure, isLoopback } from '../../src/dashboard/server.ts';
import { readDashboardToken } from '../../src/dashboard/token.ts';
import { ConfigError } from '../../src/errors.ts';

const TOKEN = 'abcdefghijklmnop0123456789';

describe('dashboard token', () => {
  it('comes from JOBVISOR_DASHBOARD_TOKEN, or from the file named by _FILE with its trailing newline dropped', () => {
    assert.equal(readDashboardToken({}), null);
    assert.equal(readDashboardToken({ JOBVISOR_DASHBOARD_TOKEN: TOKEN }), TOKEN);
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'jobvisor-token-')), 'token');
    writeFileSync(file, `${TOKEN}\n`);
    assert.equal(readDashboardToken({ JOBVISOR_DASHBOARD_TOKEN_FILE: file }), TOKEN);
  });

  it('refuses both variables, an unreadable file and a short token, without echoing the token', () => {
    assert.throws(
      () => readDashboardToken({ JOBVISOR_DASHBOARD_TOKEN: TOKEN, JOBVISOR_DASHBOARD_TOKEN_FILE: '/x' }),
      /not both/,
    );
    assert.throws(() => readDashboardToken({ JOBVISOR_DASHBOARD_TOKEN_FILE: '/nonexistent/token' }), ConfigError);
    assert.throws(
      () => readDashboardToken({ JOBVISOR_DASHBOARD_TOKEN: 'short-secret' }),
      (err: Error) =>
        err instanceof ConfigError && /at least 16/.test(err.message) && !err.message.includes('short-secret'),
    );
  });
});

describe('dashboard credentials', () => {
  const auth = createAuth(TOKEN);

  it('accepts the bearer token or the session cookie, and nothing else', () => {
    assert.equal(auth.check(`Bearer ${TOKEN}`, undefined), true);
    assert.equal(auth.check(`bearer  ${TOKEN}`, undefined), true);
    assert.equal(auth.check(undefined, auth.sessionValue()), true);
    assert.equal(auth.check(`Bearer ${TOKEN}x`, undefined), false);
    assert.equal(auth.check(`Basic ${TOKEN}`, undefined), false);
    assert.equal(auth.check(undefined, TOKEN), false, 'the cookie never holds the token itself');
    assert.equal(auth.check(undefined, undefined), false);
    assert.equal(auth.matches(TOKEN), true);
    assert.equal(auth.matches(''), false);
  });

  it('derives a session value that changes with the token and does not contain it', () => {
    const other = createAuth(`${TOKEN}-rotated`);
    assert.notEqual(auth.sessionValue(), other.sessionValue());
    assert.ok(!auth.sessionValue().includes(TOKEN));
    assert.equal(other.check(undefined, auth.sessionValue()), false);
  });

  it('is open without a token', () => {
    assert.equal(createAuth(null).required, false);
    assert.equal(createAuth(null).check(undefined, undefined), true);
  });
});

describe('same-site check', () => {
  it('accepts an Origin (or, without one, a Referer) naming the request host', () => {
    assert.equal(refuseCrossSite({ origin: 'http://localhost:9465', host: 'localhost:9465' }), null);
    assert.equal(refuseCrossSite({ referer: 'https://ops.example/jobvisor/jobs?x=1', host: 'ops.example' }), null);
    assert.equal(
      refuseCrossSite({ origin: 'https://ops.example', host: 'svc:9465', forwardedHost: 'ops.example' }),
      null,
    );
  });

  it('refuses a foreign or opaque Origin, and a request with neither header', () => {
    assert.match(refuseCrossSite({ origin: 'https://evil.example', host: 'ops.example' }) ?? '', /cross-site/);
    assert.match(
      refuseCrossSite({ origin: 'https://evil.example', referer: 'https://ops.example/', host: 'ops.example' }) ?? '',
      /cross-site/,
      'Origin wins over Referer',
    );
    assert.ok(refuseCrossSite({ origin: 'null', host: 'ops.example' }));
    assert.match(refuseCrossSite({ host: 'ops.example' }) ?? '', /missing/);
  });
});

describe('redaction', () => {
  it('hides the configured keys case-insensitively at any depth, inside arrays, without touching the input', () => {
    const payload = {
      user: 1,
      Password: 'p',
      nested: { deep: [{ TOKEN: 't', keep: 'k' }], Authorization: 'Bearer x' },
      secrets: 'not a listed key',
    };
    const out = redactPayload(payload, ['password', 'token', 'secret', 'authorization']);
    assert.deepEqual(out, {
      user: 1,
      Password: '[redacted]',
      nested: { deep: [{ TOKEN: '[redacted]', keep: 'k' }], Authorization: '[redacted]' },
      secrets: 'not a listed key',
    });
    assert.equal(payload.Password, 'p');
  });

  it('keeps a "__proto__" payload key as data', () => {
    const out = redactPayload(JSON.parse('{"__proto__": {"secret": "s"}}'), ['secret']) as Record<string, unknown>;
    assert.deepEqual(Object.keys(out), ['__proto__']);
    assert.equal(Object.getPrototypeOf(out), Object.prototype);
    assert.equal(JSON.stringify(out), '{"__proto__":{"secret":"[redacted]"}}');
  });
});

describe('exposure', () => {
  it('treats only loopback addresses as local', () => {
    for (const h of ['127.0.0.1', 'localhost', '::1', '[::1]', '127.1.2.3']) assert.equal(isLoopback(h), true, h);
    for (const h of ['0.0.0.0', '::', '10.0.0.5', 'example.com']) assert.equal(isLoopback(h), false, h);
  });

  it('refuses a non-loopback bind without a token, in one line', () => {
    assert.throws(
      () => checkExposure('0.0.0.0', null),
      (err: Error) =>
        err instanceof ConfigError && !err.message.includes('\n') && /JOBVISOR_DASHBOARD_TOKEN/.test(err.message),
    );
    assert.doesNotThrow(() => checkExposure('0.0.0.0', TOKEN));
    assert.doesNotThrow(() => checkExposure('127.0.0.1', null));
  });

  it('sends the browser back only to a path under basePath after login', () => {
    assert.equal(safeNext('/ui/jobs?status=failed', '/ui/'), '/ui/jobs?status=failed');
    assert.equal(safeNext('https://evil.example/', '/ui/'), '/ui/');
    assert.equal(safeNext('//evil.example/', '/'), '/');
    assert.equal(safeNext('/\\evil.example', '/'), '/');
    assert.equal(safeNext(undefined, '/'), '/');
  });
});

describe('dashboard configuration', () => {
  it('has the documented defaults and DASHBOARD_PORT', () => {
    const s = loadConfig({ env: { DASHBOARD_PORT: '9999' } });
    assert.deepEqual(s.dashboard, {
      port: 9999,
      host: '127.0.0.1',
      readOnly: false,
      basePath: '/',
      allowedHosts: [],
      redact: [...SECRET_KEYS],
    });
  });

  it('is strict: bad values and unknown keys are named', () => {
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ basePath: 'jobs' }, /dashboard\.basePath/],
      [{ basePath: '/a//b' }, /dashboard\.basePath/],
      [{ readOnly: 'yes' }, /dashboard\.readOnly must be true or false/],
      [{ redact: 'password' }, /dashboard\.redact/],
      [{ redact: [''] }, /dashboard\.redact/],
      [{ port: 70000 }, /dashboard\.port/],
      [{ redakt: [] }, /unknown key "dashboard\.redakt" \(did you mean "dashboard\.redact"\?\)/],
    ];
    for (const [dashboard, message] of bad)
      assert.throws(() => loadConfig({ env: {}, overrides: { dashboard } }), message, JSON.stringify(dashboard));
    assert.equal(
      loadConfig({ env: {}, overrides: { dashboard: { basePath: '/ops/jobvisor' } } }).dashboard.basePath,
      '/ops/jobvisor',
    );
  });
});

describe('chart cache', () => {
  it('reloads after its time-to-live, shares a load in flight, and keeps no failure', async () => {
    let clock = 0;
    let loads = 0;
    let fail = false;
    const get = cached(
      1000,
      async () => {
        loads++;
        await new Promise((r) => setImmediate(r));
        if (fail) throw new Error('database down');
        return loads;
      },
      { now: () => clock },
    );
    assert.deepEqual(await Promise.all([get(), get()]), [1, 1], 'one load for concurrent callers');
    clock = 999;
    assert.equal(await get(), 1);
    clock = 1000;
    fail = true;
    await assert.rejects(get(), /database down/);
    fail = false;
    assert.equal(await get(), 3, 'the failure was not kept');
    assert.equal(loads, 3);
  });

  it('can wait in proportion to how long a load took, and keep a failure for retryMs', async () => {
    let clock = 0;
    let loads = 0;
    let fail = false;
    const get = cached(
      (lastLoadMs) => 10 * lastLoadMs,
      () => {
        loads++;
        clock += 50; // each load takes 50 ms
        return fail ? Promise.reject(new Error('database down')) : Promise.resolve(loads);
      },
      { now: () => clock, retryMs: 200 },
    );
    assert.equal(await get(), 1);
    clock += 499;
    assert.equal(await get(), 1, 'a 50 ms load is kept for 500 ms');
    clock += 1;
    fail = true;
    await assert.rejects(get(), /database down/);
    fail = false;
    clock += 199;
    await assert.rejects(get(), /database down/, 'the failure is kept for retryMs');
    clock += 1;
    assert.equal(await get(), 3);
    assert.equal(loads, 3);
  });
});
