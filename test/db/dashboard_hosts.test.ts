/**
 * Two ways past the dashboard's protections, over real HTTP against a real
 * database: DNS rebinding of the open (token-less) dashboard, which must answer
 * only loopback Host names and the configured `dashboard.allowedHosts`; and the
 * text filter `q`, which must never match inside a redacted payload value
 * (a list that shows whether anything matched gives a secret away one prefix
 * at a time). The browser side of rebinding is test/system/dashboard_rebinding.test.ts.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/index.ts';
import { ConfigError } from '../../src/errors.ts';
import { countJobs, listJobs } from '../../src/queue/admin/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { seedDeadLetters, serveTestDashboard, TEST_TOKEN, type ServedDashboard } from '../helpers/dashboard.ts';

/** One HTTP request with a Host header of our choosing (fetch does not let a caller set Host). */
function send(
  url: string,
  options: { host: string; method?: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: { ...options.headers, host: options.host } });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('the open dashboard and DNS rebinding', () => {
  let t: TestDatabase;
  let open: ServedDashboard;
  let tokened: ServedDashboard;
  let id: string;
  let port: string;

  before(async () => {
    t = await createTestDatabase();
    open = await serveTestDashboard({ pool: t.pool, auth: false, allowedHosts: ['jobs.internal'] });
    tokened = await serveTestDashboard({ pool: t.pool });
    port = new URL(open.origin).port;
    [id] = (await seedDeadLetters(t.pool, {
      kind: 'payout',
      count: 1,
      payload: { iban: 'DE89370400440532013000' },
    })) as [string];
  });
  after(async () => {
    await open?.close();
    await tokened?.close();
    await t?.drop();
  });

  const exists = async () => (await t.pool.query('SELECT 1 FROM jobvisor.jobs WHERE id = $1', [id])).rowCount === 1;

  it('refuses a page, a job and an action for a Host that is not this machine, with a 403 that says why', async () => {
    const evil = `evil.test:${port}`;
    for (const p of ['', 'jobs', `jobs/${id}`, 'static/app.js']) {
      const r = await send(`${open.url}${p}`, { host: evil });
      assert.equal(r.status, 403, p);
      assert.match(r.body, /host evil\.test is not allowed.*dashboard\.allowedHosts/s, p);
      assert.doesNotMatch(r.body, /DE89/, p);
    }
    // The rebinding page's own origin: Origin and Host agree, so only the Host check stands in the way.
    const del = await send(`${open.url}jobs/${id}/delete`, {
      host: evil,
      method: 'POST',
      headers: { origin: `http://${evil}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    });
    assert.equal(del.status, 403);
    assert.ok(await exists(), 'the job is still there');
    for (const host of ['evil.test', 'localhost.evil.test', '127.0.0.1.evil.test', 'localhost.', `[::2]:${port}`]) {
      assert.equal((await send(`${open.url}jobs/${id}`, { host })).status, 403, JSON.stringify(host));
    }
  });

  it('serves localhost, 127.0.0.0/8, [::1] and the configured names, any case', async () => {
    for (const host of [
      `localhost:${port}`,
      `LOCALHOST:${port}`,
      `127.0.0.1:${port}`,
      '127.0.0.1',
      `127.1.2.3:${port}`,
      `[::1]:${port}`,
      `jobs.internal:${port}`,
      'Jobs.Internal',
    ]) {
      const r = await send(`${open.url}jobs/${id}`, { host });
      assert.equal(r.status, 200, host);
      assert.match(r.body, /DE89370400440532013000/, host);
    }
  });

  it('with a token, serves any Host (a rebound page has neither the token nor the cookie)', async () => {
    const r = await send(`${tokened.url}jobs/${id}`, {
      host: 'dashboard.example.com',
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
    });
    assert.equal(r.status, 200);
    const anonymous = await send(`${tokened.url}jobs/${id}`, { host: 'evil.test' });
    assert.equal(anonymous.status, 303, 'sent to the login form');
  });

  it('reads dashboard.allowedHosts from files and DASHBOARD_ALLOWED_HOSTS, and refuses anything but host names', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-hosts-'));
    try {
      writeFileSync(path.join(dir, 'default.json'), JSON.stringify({ dashboard: { allowedHosts: ['jobs.internal'] } }));
      assert.deepEqual(loadConfig({ configDir: dir, env: {} }).dashboard.allowedHosts, ['jobs.internal']);
      const env = { DASHBOARD_ALLOWED_HOSTS: 'a.internal, b.internal,[::2]' };
      assert.deepEqual(loadConfig({ configDir: dir, env }).dashboard.allowedHosts, [
        'a.internal',
        'b.internal',
        '[::2]',
      ]);
      assert.deepEqual(loadConfig({ configDir: mkdtempSync(path.join(dir, 'x')), env: {} }).dashboard.allowedHosts, []);
      for (const bad of [['http://jobs.internal'], ['jobs.internal:8080'], [''], 'jobs.internal', [7]])
        assert.throws(
          () => loadConfig({ configDir: dir, env: {}, overrides: { dashboard: { allowedHosts: bad } } }),
          (err: Error) => err instanceof ConfigError && /dashboard\.allowedHosts/.test(err.message),
          JSON.stringify(bad),
        );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the text filter and redaction', () => {
  let t: TestDatabase;
  let d: ServedDashboard;
  let secretJob: string;
  let nestedJob: string;
  const bearer = { authorization: `Bearer ${TEST_TOKEN}` };

  before(async () => {
    t = await createTestDatabase();
    d = await serveTestDashboard({ pool: t.pool, readOnly: true });
    [secretJob] = (await seedDeadLetters(t.pool, {
      kind: 'charge',
      count: 1,
      payload: { order: 'order-7731', token: 'tok_live_9f3a7c' },
    })) as [string];
    [nestedJob] = (await seedDeadLetters(t.pool, {
      kind: 'charge',
      count: 1,
      payload: { order: 'order-7732', auth: [{ Password: 'hunter2-zebra' }], note: 'zebra crossing' },
    })) as [string];
  });
  after(async () => {
    await d?.close();
    await t?.drop();
  });

  const listed = async (q: string) => {
    const res = await fetch(`${d.url}jobs?q=${encodeURIComponent(q)}`, { headers: bearer });
    assert.equal(res.status, 200, q);
    const body = await res.text();
    return [secretJob, nestedJob].filter((id) => body.includes(`href="/jobs/${id}"`));
  };

  it('finds nothing by any prefix of a redacted value, at any depth, in any case of the key', async () => {
    for (const q of ['tok_', 'tok_live', 'tok_live_9f3a7c', 'live_9f', '9f3a7c']) {
      const hits = await listed(q);
      assert.ok(!hits.includes(secretJob), `q=${q} matched inside the redacted token`);
    }
    for (const q of ['hunter', 'hunter2-zebra']) assert.deepEqual(await listed(q), [], q);
    // The bulk actions' count (the confirm page's number) uses the same filter.
    const store = { db: t.pool, schema: 'jobvisor' };
    assert.equal((await countJobs(store, { payloadText: 'tok_live', payloadRedact: ['Token'] })).count, 0);
  });

  it('still finds text outside redacted values, and key names (which the page shows)', async () => {
    assert.deepEqual(await listed('order-7731'), [secretJob]);
    assert.deepEqual(await listed('order-77'), [secretJob, nestedJob]);
    assert.deepEqual(await listed('zebra'), [nestedJob], 'note matches; the password does not');
    assert.deepEqual(await listed('"token"'), [secretJob], 'the key itself is visible on the page');
    assert.deepEqual(await listed('[redacted]'), [], 'a match must be in the stored payload too');
  });

  it('leaves the admin API without payloadRedact (the CLI) searching the whole payload', async () => {
    const store = { db: t.pool, schema: 'jobvisor' };
    const page = await listJobs(store, { payloadText: 'tok_live' }, { limit: 10 });
    assert.deepEqual(
      page.jobs.map((j) => j.id),
      [secretJob],
    );
  });
});
