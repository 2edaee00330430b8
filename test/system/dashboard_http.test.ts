/**
 * The dashboard over real HTTP against a real database, without a browser:
 * credentials, the same-site check, read-only mode, escaping and redaction in
 * the served HTML, the statement bound, and the start-up refusal.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_REDACT } from '../../src/config/dashboard.ts';
import { pauseQueue, resumeQueue } from '../../src/queue/pause.ts';
import { BIN, writeConfig } from '../helpers/supervisor.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { seedDeadLetters, serveTestDashboard, TEST_TOKEN, type ServedDashboard } from '../helpers/dashboard.ts';

const WARNINGS: string[] = [];
process.on('warning', (w) => WARNINGS.push(w.message));

const XSS = `<script>alert(1)</script>"><img src=x onerror=alert(2)>`;

describe('dashboard over HTTP', () => {
  let t: TestDatabase;
  let d: ServedDashboard;
  let ids: string[];
  const bearer = { authorization: `Bearer ${TEST_TOKEN}` };

  before(async () => {
    t = await createTestDatabase();
    d = await serveTestDashboard({ pool: t.pool, basePath: '/ops/jobvisor' });
    ids = await seedDeadLetters(t.pool, { kind: 'mailer', count: 3 });
  });
  after(async () => {
    await d?.close();
    await t?.drop();
  });

  const status = async (id: string) =>
    (await t.pool.query<{ status: string }>('SELECT status FROM jobvisor.jobs WHERE id = $1', [id])).rows[0]?.status;

  it('sends a browser without credentials to the login form, and answers 401 to anything else', async () => {
    const page = await fetch(`${d.url}jobs?status=failed`, { redirect: 'manual' });
    assert.equal(page.status, 303);
    assert.equal(page.headers.get('location'), '/ops/jobvisor/login?next=%2Fops%2Fjobvisor%2Fjobs%3Fstatus%3Dfailed');
    const wrong = await fetch(`${d.url}jobs`, { headers: { authorization: 'Bearer wrong-token-wrong-token' } });
    assert.equal(wrong.status, 401);
    const post = await fetch(`${d.url}jobs/${ids[0]}/retry`, { method: 'POST', headers: { origin: d.origin } });
    assert.equal(post.status, 401);
    assert.equal(await status(ids[0] as string), 'failed');
  });

  it('logs in with the token into an HttpOnly, SameSite=Strict cookie scoped to basePath, and returns to next', async () => {
    const bad = await fetch(`${d.url}login`, {
      method: 'POST',
      headers: { origin: d.origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: 'not-the-token', next: '/ops/jobvisor/jobs' }),
      redirect: 'manual',
    });
    assert.equal(bad.status, 401);
    assert.equal(bad.headers.get('set-cookie'), null);
    const good = await fetch(`${d.url}login`, {
      method: 'POST',
      headers: { origin: d.origin, 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-proto': 'https' },
      body: new URLSearchParams({ token: TEST_TOKEN, next: 'https://evil.example/' }),
      redirect: 'manual',
    });
    assert.equal(good.status, 303);
    assert.equal(good.headers.get('location'), '/ops/jobvisor/', 'never redirects off-site');
    const cookie = good.headers.get('set-cookie') ?? '';
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Strict/);
    assert.match(cookie, /Path=\/ops\/jobvisor(;|$)/);
    assert.match(cookie, /Secure/, 'behind an https ingress');
    assert.ok(!cookie.includes(TEST_TOKEN), 'the cookie does not hold the token');
    const page = await fetch(`${d.url}jobs`, { headers: { cookie: cookie.split(';')[0] as string } });
    assert.equal(page.status, 200);
  });

  it('refuses a state-changing request from another origin, or with no Origin or Referer', async () => {
    for (const headers of [
      { ...bearer, origin: 'http://evil.example' },
      { ...bearer, origin: 'null' },
      { ...bearer, referer: 'http://evil.example/page' },
      { ...bearer },
    ]) {
      const res = await fetch(`${d.url}jobs/${ids[0]}/retry`, { method: 'POST', headers, redirect: 'manual' });
      assert.equal(res.status, 403, JSON.stringify(headers));
    }
    assert.equal(await status(ids[0] as string), 'failed', 'nothing changed');
    const ok = await fetch(`${d.url}jobs/${ids[0]}/retry`, {
      method: 'POST',
      headers: { ...bearer, origin: d.origin },
      redirect: 'manual',
    });
    assert.equal(ok.status, 303);
    assert.equal(ok.headers.get('location'), `/ops/jobvisor/jobs/${ids[0]}?done=retried`);
    assert.equal(await status(ids[0] as string), 'pending');
  });

  it('sets a CSP without inline script, and serves its script and style from its own path', async () => {
    const res = await fetch(d.url, { headers: bearer });
    assert.equal(res.status, 200);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self'/);
    assert.ok(!csp.includes('unsafe-inline'));
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    const html = await res.text();
    assert.ok(!/<script>/.test(html) && !/\son[a-z]+=/i.test(html), 'no inline script or handler');
    assert.equal((await fetch(`${d.url}static/app.js`)).status, 200);
    const outside = await fetch(`${d.origin}/other`);
    assert.equal(await outside.text(), 'outside the dashboard', 'requests outside basePath go on to next()');
  });

  it('escapes kind, payload and error everywhere, and redacts payload keys at any depth', async () => {
    const [id] = await seedDeadLetters(t.pool, {
      kind: XSS,
      count: 1,
      error: XSS,
      payload: { note: XSS, [XSS]: 1, auth: { Password: 'hunter2', nested: [{ TOKEN: 'tok-123' }] } },
    });
    for (const path of [`jobs/${id}`, `jobs?kind=${encodeURIComponent(XSS)}`, 'dead-letters', '']) {
      const html = await (await fetch(`${d.url}${path}`, { headers: bearer })).text();
      assert.ok(!html.includes('<script>alert'), `${path}: raw script tag`);
      assert.ok(!html.includes('<img src=x'), `${path}: raw img tag`);
      if (path !== '') assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), `${path}: escaped text shown`);
    }
    const job = await (await fetch(`${d.url}jobs/${id}`, { headers: bearer })).text();
    assert.ok(!job.includes('hunter2') && !job.includes('tok-123'), 'secrets hidden');
    assert.equal(job.match(/\[redacted\]/g)?.length, 2);
    for (const name of ['password', 'token', 'secret', 'authorization']) assert.ok(DEFAULT_REDACT.includes(name), name);
  });

  it('answers 400 to a bad filter and 404 to a job that does not exist, naming nothing internal', async () => {
    assert.equal((await fetch(`${d.url}jobs?status=bogus`, { headers: bearer })).status, 400);
    assert.equal((await fetch(`${d.url}jobs?id=1;drop`, { headers: bearer })).status, 400);
    assert.equal((await fetch(`${d.url}jobs/999999`, { headers: bearer })).status, 404);
    assert.equal((await fetch(`${d.url}jobs/abc`, { headers: bearer })).status, 404);
  });

  it('asks for confirmation with the count before a bulk action, and refuses one without a filter', async () => {
    const form = (fields: Record<string, string>) => ({
      method: 'POST',
      headers: { ...bearer, origin: d.origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields),
      redirect: 'manual' as const,
    });
    const ask = await fetch(`${d.url}jobs/delete`, form({ kind: 'mailer' }));
    assert.equal(ask.status, 200);
    assert.match(await ask.text(), /Delete <b>3<\/b> jobs matching/);
    const cancel = await fetch(`${d.url}jobs/cancel`, form({ kind: 'mailer' }));
    assert.match(await cancel.text(), /Cancel <b>1<\/b> job matching/, 'counts only the rows the action applies to');
    const none = await fetch(`${d.url}jobs/delete`, form({}));
    assert.equal(none.status, 400);
    const go = await fetch(`${d.url}jobs/delete`, form({ status: 'failed', kind: 'mailer', confirm: '2' }));
    assert.equal(go.status, 303);
    assert.match(go.headers.get('location') ?? '', /done=deleted&n=2$/);
    assert.equal(await status(ids[1] as string), undefined, 'deleted');
  });
});

describe('dashboard pages and bounds', () => {
  let t: TestDatabase;
  let d: ServedDashboard;
  const bearer = { authorization: `Bearer ${TEST_TOKEN}` };
  before(async () => {
    t = await createTestDatabase();
    d = await serveTestDashboard({
      pool: t.pool,
      statementTimeoutMs: 300,
      schedules: [
        {
          name: 'nightly',
          cron: '0 3 * * *',
          kind: 'daily_report',
          payload: {},
          queue: 'default',
          priority: 0,
          timezone: 'UTC',
        },
      ],
    });
  });
  after(async () => {
    await d?.close();
    await t?.drop();
  });

  it('marks a paused queue on the overview, and unmarks it on resume', async () => {
    const row = async () => {
      const html = await (await fetch(d.url, { headers: bearer })).text();
      return /<tr>\s*<td>\s*<a href="[^"]*queues\/held">held<\/a>(.*?)<\/td>/s.exec(html)?.[1] ?? null;
    };
    await pauseQueue(t.pool, 'held');
    assert.match(
      (await row()) ?? '',
      /class="status status-paused"[^>]*>paused</,
      'the paused queue is listed and marked',
    );
    await resumeQueue(t.pool, 'held');
    assert.equal(await row(), null, 'a resumed queue without jobs is not listed');
  });

  it('lists each schedule with its next fire times and the last fire’s job', async () => {
    const { rows } = await t.pool.query<{ id: string }>(
      `INSERT INTO jobvisor.jobs (kind, payload, unique_key) VALUES ('daily_report', '{}', 'schedule:nightly:2026-01-01T03:00:00.000Z') RETURNING id`,
    );
    const html = await (await fetch(`${d.url}schedules`, { headers: bearer })).text();
    assert.match(html, /nightly/);
    assert.equal(html.match(/\d{4}-\d\d-\d\d 03:00:00Z<br/g)?.length, 3, 'three next fire times');
    assert.ok(html.includes(`href="/jobs/${rows[0]?.id}"`), 'links the last fire’s job');
  });

  it('groups dead letters by kind and first error line, and retries a whole group after confirming its count', async () => {
    await seedDeadLetters(t.pool, { kind: 'grp', count: 4, error: 'Error: boom\n    at task (grp.js:1:1)' });
    await seedDeadLetters(t.pool, { kind: 'grp', count: 2, error: 'Error: other' });
    const page = await (await fetch(`${d.url}dead-letters`, { headers: bearer })).text();
    assert.match(
      page,
      /<td>grp<\/td>\s*<td class="err"><a href="\/jobs\?status=failed&amp;kind=grp&amp;errorPrefix=Error%3A\+boom">Error: boom<\/a><\/td>\s*<td class="num">4<\/td>/,
    );
    const form = (fields: Record<string, string>) => ({
      method: 'POST',
      headers: { ...bearer, origin: d.origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ status: 'failed', kind: 'grp', errorPrefix: 'Error: boom', ...fields }),
      redirect: 'manual' as const,
    });
    assert.match(await (await fetch(`${d.url}jobs/retry`, form({}))).text(), /Retry <b>4<\/b> jobs/);
    assert.equal((await fetch(`${d.url}jobs/retry`, form({ confirm: '4' }))).status, 303);
    const { rows } = await t.pool.query(
      `SELECT status, count(*)::int AS n FROM jobvisor.jobs WHERE kind = 'grp' GROUP BY status ORDER BY status`,
    );
    assert.deepEqual(rows, [
      { status: 'failed', n: 2 },
      { status: 'pending', n: 4 },
    ]);
  });

  it('queues statements issued together on its one client itself (no pg deprecation warning)', async () => {
    for (const path of ['', 'schedules', ''])
      assert.equal((await fetch(`${d.url}${path}`, { headers: bearer })).status, 200, path);
    await new Promise((r) => setImmediate(r));
    // pg warns once per process: WARNINGS holds every warning since this file started.
    assert.deepEqual(
      WARNINGS.filter((w) => /already executing a query/.test(w)),
      [],
    );
  });

  it('cancels and runs a job now from its page', async () => {
    const { rows } = await t.pool.query<{ id: string }>(
      `INSERT INTO jobvisor.jobs (kind, payload, run_at) VALUES ('later', '{}', now() + interval '1 day') RETURNING id`,
    );
    const id = rows[0]?.id as string;
    const post = (action: string) =>
      fetch(`${d.url}jobs/${id}/${action}`, {
        method: 'POST',
        headers: { ...bearer, origin: d.origin },
        redirect: 'manual',
      });
    assert.equal((await post('run-now')).headers.get('location'), `/jobs/${id}?done=ran-now`);
    const due = await t.pool.query('SELECT run_at <= now() AS due FROM jobvisor.jobs WHERE id = $1', [id]);
    assert.equal(due.rows[0].due, true);
    assert.equal((await post('cancel')).headers.get('location'), `/jobs/${id}?done=cancelled`);
    assert.equal((await post('cancel')).headers.get('location'), `/jobs/${id}?done=unchanged`, 'already cancelled');
    const page = await (await fetch(`${d.url}jobs/${id}?done=unchanged`, { headers: bearer })).text();
    assert.match(page, /Nothing changed/);
  });

  it('bounds every statement: a blocked table answers 503 in time, and the pool keeps its own setting', async () => {
    const locker = await t.pool.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE jobvisor.jobs IN ACCESS EXCLUSIVE MODE');
      const res = await fetch(`${d.url}jobs?status=failed`, { headers: bearer });
      assert.equal(res.status, 503);
      assert.match(await res.text(), /statement timeout/);
    } finally {
      await locker.query('ROLLBACK');
      locker.release();
    }
    const settings = await Promise.all(
      Array.from({ length: 5 }, () => t.pool.query<{ v: string }>(`SELECT current_setting('statement_timeout') AS v`)),
    );
    assert.ok(
      settings.every((r) => r.rows[0]?.v === '0'),
      'the shared pool’s clients are handed back as they were',
    );
    assert.equal((await fetch(`${d.url}jobs`, { headers: bearer })).status, 200);
  });
});

describe('read-only dashboard', () => {
  let t: TestDatabase;
  let d: ServedDashboard;
  before(async () => {
    t = await createTestDatabase();
    d = await serveTestDashboard({ pool: t.pool, readOnly: true });
  });
  after(async () => {
    await d?.close();
    await t?.drop();
  });

  it('answers 403 to every action, shows no action buttons, and changes nothing', async () => {
    const [id] = await seedDeadLetters(t.pool, { kind: 'ro', count: 1 });
    const headers = { authorization: `Bearer ${TEST_TOKEN}`, origin: d.origin };
    for (const path of [
      `jobs/${id}/retry`,
      `jobs/${id}/cancel`,
      `jobs/${id}/run-now`,
      `jobs/${id}/delete`,
      'jobs/retry',
      'jobs/cancel',
      'jobs/delete',
    ]) {
      const res = await fetch(`${d.url}${path}`, {
        method: 'POST',
        headers,
        body: new URLSearchParams({ kind: 'ro' }),
      });
      assert.equal(res.status, 403, path);
    }
    const page = await (await fetch(`${d.url}jobs/${id}`, { headers })).text();
    assert.ok(!page.includes('>Retry<') && !page.includes('>Delete<'));
    const { rows } = await t.pool.query('SELECT status FROM jobvisor.jobs WHERE id = $1', [id]);
    assert.equal(rows[0].status, 'failed');
  });
});

/** `jobvisor ...` in a child process (in-process, capturing stdout would swallow this test's own report). */
function cli(args: string[], env: Record<string, string>) {
  const base = { ...process.env };
  delete base.JOBVISOR_DASHBOARD_TOKEN;
  delete base.JOBVISOR_DASHBOARD_TOKEN_FILE;
  return spawnSync(process.execPath, [BIN, ...args], {
    env: { ...base, DATABASE_URL: 'postgres://127.0.0.1:1/none', JOBVISOR_CONFIG: '', NODE_ENV: 'test', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
}

describe('jobvisor dashboard start-up', () => {
  it('serves under the configured basePath with the token from a mounted file, and exits 0 on SIGTERM', async () => {
    const t = await createTestDatabase();
    const dir = mkdtempSync(path.join(tmpdir(), 'jobvisor-dashboard-'));
    const tokenFile = path.join(dir, 'token');
    writeFileSync(tokenFile, `${TEST_TOKEN}\n`);
    const child = spawn(process.execPath, [BIN, 'dashboard', '--port', '0'], {
      env: {
        ...process.env,
        DATABASE_URL: t.url,
        JOBVISOR_CONFIG: writeConfig({ dashboard: { basePath: '/ops', readOnly: true } }),
        JOBVISOR_DASHBOARD_TOKEN_FILE: tokenFile,
        NODE_ENV: 'test',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const listening = await new Promise<Record<string, unknown>>((resolve, reject) => {
        let buffer = '';
        child.stdout.on('data', (chunk: Buffer) => {
          buffer += chunk.toString();
          for (const line of buffer.split('\n')) if (line.includes('dashboard listening')) resolve(JSON.parse(line));
        });
        child.on('exit', (code) => reject(new Error(`exited ${code} before listening: ${buffer}`)));
      });
      assert.equal(listening.readOnly, true);
      assert.ok(!JSON.stringify(listening).includes(TEST_TOKEN), 'the token is never logged');
      const url = `http://127.0.0.1:${listening.port as number}/ops/`;
      assert.equal((await fetch(url, { headers: { authorization: `Bearer ${TEST_TOKEN}` } })).status, 200);
      assert.equal((await fetch(url, { redirect: 'manual' })).headers.get('location'), '/ops/login?next=%2Fops%2F');
      const exit = new Promise<number | null>((resolve) => child.on('exit', resolve));
      child.kill('SIGTERM');
      assert.equal(await exit, 0);
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      await t.drop();
    }
  });

  it('refuses a non-loopback bind without credentials, in one line, before listening', () => {
    const run = cli(['dashboard', '--host', '0.0.0.0', '--port', '0'], {});
    assert.equal(run.status, 2);
    assert.match(
      run.stderr,
      /^jobvisor: refusing to serve the dashboard on 0\.0\.0\.0 without credentials: set JOBVISOR_DASHBOARD_TOKEN/,
    );
    assert.equal(run.stderr.trim().split('\n').length, 1);
  });

  it('refuses a token too short to be a secret, without printing it', () => {
    const run = cli(['dashboard', '--port', '0'], { JOBVISOR_DASHBOARD_TOKEN: 'hunter2' });
    assert.equal(run.status, 2);
    assert.match(run.stderr, /at least 16 characters/);
    assert.ok(!run.stderr.includes('hunter2'));
  });
});
