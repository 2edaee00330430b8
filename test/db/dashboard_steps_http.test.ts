/**
 * The job page's durable steps and its send-signal action over real HTTP
 * against a real database: the steps with their folded results redacted like
 * payloads (a secret the fold cut in two included), what the job waits for,
 * and a signal sent, or refused with a clear error and nothing sent: from
 * another origin, without credentials, read-only, bad JSON, a bad name, a
 * finished or missing job.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { DASHBOARD_STATEMENT_TIMEOUT_MS } from '../../src/dashboard/db.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { serveTestDashboard, TEST_TOKEN, type ServedDashboard } from '../helpers/dashboard.ts';

describe('dashboard steps and signals over HTTP', () => {
  let t: TestDatabase;
  let d: ServedDashboard;
  let ro: ServedDashboard;
  const bearer = { authorization: `Bearer ${TEST_TOKEN}` };
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  const send = (id: string, fields: Record<string, string>, headers: Record<string, string>, on = d) =>
    fetch(`${on.url}jobs/${id}/signal`, {
      method: 'POST',
      headers: { ...form, ...headers },
      body: new URLSearchParams(fields),
      redirect: 'manual',
    });
  const signals = async (id: string) =>
    (
      await t.pool.query<{ name: string; payload: unknown }>(
        'SELECT name, payload FROM jobvisor.job_signals WHERE job_id = $1 ORDER BY name',
        [id],
      )
    ).rows;
  const statusOf = async (id: string) =>
    (await t.pool.query<{ status: string }>('SELECT status FROM jobvisor.jobs WHERE id = $1', [id])).rows[0]?.status;

  /** A job parked in waitFor('approve'), as a run leaves it, with two recorded steps. */
  async function waitingJob(): Promise<string> {
    const { rows } = await t.pool.query<{ id: string }>(
      `INSERT INTO jobvisor.jobs (kind, payload, status, waiting_for, run_at, has_steps, attempts)
       VALUES ('charge', '{"user": 7, "api_key": "sk-live-4242abcd"}', 'waiting', 'approve',
               now() + interval '1 day', true, 1) RETURNING id`,
    );
    const id = rows[0]?.id as string;
    // The password's value starts before the fold (200 characters) and ends after it (jsonb
    // orders keys shorter first: z, a_pad, password).
    const big = { a_pad: 'p'.repeat(150), password: `hunter2-${'x'.repeat(100)}`, z: 1 };
    await t.pool.query(
      `INSERT INTO jobvisor.job_steps (job_id, name, kind, result, attempt, started_at, finished_at, wake_at) VALUES
         ($1, 'charge', 'step', $2, 1, now() - interval '2 s', now() - interval '1500 ms', NULL),
         ($1, 'big', 'step', $3, 1, now() - interval '1 s', now() - interval '900 ms', NULL),
         ($1, 'approve', 'wait', NULL, 1, now(), NULL, now() + interval '1 day')`,
      [id, JSON.stringify({ charge: 'ch_1', token: 'tok-9f8e7d6c', echo: 'sk-live-4242abcd' }), JSON.stringify(big)],
    );
    return id;
  }

  before(async () => {
    t = await createTestDatabase();
    d = await serveTestDashboard({ pool: t.pool });
    ro = await serveTestDashboard({ pool: t.pool, readOnly: true });
  });
  after(async () => {
    await d?.close();
    await ro?.close();
    await t?.drop();
  });

  it('shows the steps with redacted folded results, the current wait, and the signal form', async () => {
    const id = await waitingJob();
    const page = await (await fetch(`${d.url}jobs/${id}`, { headers: bearer })).text();
    const table = /<table id="steps"[\s\S]*?<\/table>/.exec(page)?.[0] ?? '';
    const row = (name: string) => new RegExp(`<tr data-step="${name}">([\\s\\S]*?)</tr>`).exec(table)?.[1] ?? '';
    assert.match(row('charge'), /<td data-label="Kind">step<\/td>/);
    assert.match(row('charge'), /<td data-label="Attempt" class="num">1<\/td>/);
    assert.match(row('charge'), /<td data-label="Duration" class="num">500 ms<\/td>/);
    assert.match(row('charge'), /&quot;charge&quot;: &quot;ch_1&quot;/);
    assert.match(row('charge'), /&quot;token&quot;:&quot;\[redacted\]&quot;/, 'a secret key, as in payloads');
    assert.match(row('charge'), /&quot;echo&quot;: &quot;\[redacted\]&quot;/, "the payload's secret, quoted by a step");
    assert.match(
      row('big'),
      /&quot;password&quot;:&quot;\[redacted\]&quot;…/,
      'the cut secret is hidden, the fold kept',
    );
    assert.match(row('approve'), /waiting, deadline \d{4}-/);
    for (const secret of ['tok-9f8e7d6c', 'sk-live-4242abcd', 'hunter2'])
      assert.ok(!page.includes(secret), `the page shows ${secret}`);
    assert.match(page, /<p class="flash warn" id="parked">\s*Waiting for signal <code>approve<\/code> until \d{4}-/);
    assert.match(page, /<form method="post" action="\/jobs\/\d+\/signal" id="signal-form"/);
    assert.match(page, /<input type="text" name="name" value="approve"/, 'the awaited name filled in');
    // The form stays out of the auto-refreshed box, so what is typed survives a refresh.
    assert.ok(page.indexOf('id="signal-form"') > page.lastIndexOf('id="result"'));

    const readOnly = await (await fetch(`${ro.url}jobs/${id}`, { headers: bearer })).text();
    assert.match(readOnly, /<table id="steps"/);
    assert.ok(!readOnly.includes('signal-form'), 'no form on a read-only dashboard');
  });

  it('refuses a signal from another origin, without credentials, or read-only, sending nothing', async () => {
    const id = await waitingJob();
    const fields = { name: 'approve', payload: '{"by": "mallory"}' };
    for (const headers of [
      { ...bearer, origin: 'http://evil.example' },
      { ...bearer, origin: 'null' },
      { ...bearer, referer: 'http://evil.example/page' },
      { ...bearer },
    ]) {
      const res = await send(id, fields, headers);
      assert.equal(res.status, 403, JSON.stringify(headers));
      assert.match(await res.text(), /did not come from the dashboard/);
    }
    const anonymous = await send(id, fields, { origin: d.origin });
    assert.equal(anonymous.status, 401);
    const wrong = await send(id, fields, { authorization: 'Bearer not-the-token', origin: d.origin });
    assert.equal(wrong.status, 401);
    const readOnly = await send(id, fields, { ...bearer, origin: ro.origin }, ro);
    assert.equal(readOnly.status, 403);
    assert.match(await readOnly.text(), /read-only/);
    assert.deepEqual(await signals(id), []);
    assert.equal(await statusOf(id), 'waiting');
  });

  it('refuses bad JSON and a bad name with a clear error, sending nothing', async () => {
    const id = await waitingJob();
    const headers = { ...bearer, origin: d.origin };
    const bad = await send(id, { name: 'approve', payload: '{by: ann}' }, headers);
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /The payload is not JSON \([^)]+\); nothing was sent/);
    const unnamed = await send(id, { name: '', payload: '' }, headers);
    assert.equal(unnamed.status, 400);
    assert.match(await unnamed.text(), /signal name must be a string of 1 to 200 characters/);
    const long = await send(id, { name: 'n'.repeat(201) }, headers);
    assert.equal(long.status, 400);
    assert.deepEqual(await signals(id), []);
    assert.equal(await statusOf(id), 'waiting');
  });

  it('wakes the waiting job with its payload, then says a repeat changed nothing', async () => {
    const id = await waitingJob();
    const headers = { ...bearer, origin: d.origin };
    const res = await send(id, { name: 'approve', payload: ' {"by": "ann"} ' }, headers);
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), `/jobs/${id}?done=signal-woke`);
    assert.deepEqual(await signals(id), [{ name: 'approve', payload: { by: 'ann' } }]);
    assert.equal(await statusOf(id), 'pending');
    const page = await (await fetch(`${d.url}jobs/${id}?done=signal-woke`, { headers: bearer })).text();
    assert.match(page, /Signal sent: the job was waiting for it and runs now\./);
    assert.ok(!page.includes('id="parked"'), 'no longer waiting');

    const again = await send(id, { name: 'approve', payload: '{"by": "bob"}' }, headers);
    assert.equal(again.headers.get('location'), `/jobs/${id}?done=signal-duplicate`);
    // No payload: a signal of another name is kept for a later waitFor.
    const kept = await send(id, { name: 'later', payload: '' }, headers);
    assert.equal(kept.headers.get('location'), `/jobs/${id}?done=signal-kept`);
    assert.deepEqual(await signals(id), [
      { name: 'approve', payload: { by: 'ann' } },
      { name: 'later', payload: null },
    ]);
  });

  it('refuses a finished or missing job with the reason, and offers no form for a finished one', async () => {
    const id = await waitingJob();
    await t.pool.query(
      `UPDATE jobvisor.jobs SET status = 'done', finished_at = now(), waiting_for = NULL WHERE id = $1`,
      [id],
    );
    const headers = { ...bearer, origin: d.origin };
    const finished = await send(id, { name: 'approve', payload: '{}' }, headers);
    assert.equal(finished.status, 409);
    assert.match(
      await finished.text(),
      new RegExp(`job ${id} is done, so no wait of it can receive signal &quot;approve&quot;; nothing was sent`),
    );
    const missing = await send('999999999', { name: 'approve' }, headers);
    assert.equal(missing.status, 404);
    assert.match(await missing.text(), /job 999999999 does not exist/);
    assert.deepEqual(await signals(id), []);
    const page = await (await fetch(`${d.url}jobs/${id}`, { headers: bearer })).text();
    assert.ok(!page.includes('signal-form'));
  });

  it('bounds the signal like every action: a job locked elsewhere answers 503 in time, nothing sent', async () => {
    const id = await waitingJob();
    const locker = new pg.Client({ connectionString: t.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM jobvisor.jobs WHERE id = $1 FOR UPDATE', [id]);
      const started = performance.now();
      // Unbounded, the signal would wait for the row as long as the lock is held.
      const res = await fetch(`${d.url}jobs/${id}/signal`, {
        method: 'POST',
        headers: { ...form, ...bearer, origin: d.origin },
        body: new URLSearchParams({ name: 'approve', payload: '{}' }),
        redirect: 'manual',
        signal: AbortSignal.timeout(DASHBOARD_STATEMENT_TIMEOUT_MS + 10_000),
      });
      const ms = performance.now() - started;
      assert.equal(res.status, 503);
      assert.match(await res.text(), /statement timeout/);
      assert.ok(ms < DASHBOARD_STATEMENT_TIMEOUT_MS + 4_000, `answered after ${Math.round(ms)} ms`);
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    assert.deepEqual(await signals(id), []);
    assert.equal(await statusOf(id), 'waiting');
  });
});
