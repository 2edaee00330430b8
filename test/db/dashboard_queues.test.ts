/**
 * The queue controls over real HTTP against a real database: pause and resume
 * behind the login, the same-site check and read-only mode, the queue page's
 * counts, supervisor settings and limit use, the "no live supervisor" flag, and
 * a no-op answered as a warning.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { beatSupervisor } from '../../src/queue/admin/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { serveTestDashboard, TEST_TOKEN, type ServedDashboard } from '../helpers/dashboard.ts';

describe('dashboard queue controls over HTTP', () => {
  let t: TestDatabase;
  let d: ServedDashboard;
  let ro: ServedDashboard;
  const bearer = { authorization: `Bearer ${TEST_TOKEN}` };
  const paused = async (queue: string) =>
    (await t.pool.query<{ paused: boolean }>('SELECT paused FROM jobvisor.queues WHERE queue = $1', [queue])).rows[0]
      ?.paused ?? false;
  const post = (url: string, headers: Record<string, string>, body: Record<string, string> = {}) =>
    fetch(url, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(body),
      redirect: 'manual',
    });
  const page = async (path: string) => {
    const res = await fetch(`${d.url}${path}`, { headers: bearer });
    assert.equal(res.status, 200, path);
    return res.text();
  };

  before(async () => {
    t = await createTestDatabase();
    d = await serveTestDashboard({ pool: t.pool, basePath: '/ops' });
    ro = await serveTestDashboard({ pool: t.pool, readOnly: true });
    const store = { db: t.pool, schema: 'jobvisor' };
    await beatSupervisor(store, {
      id: 'h:1:a',
      host: 'h',
      pid: 1,
      version: '1.0.0',
      queues: { mail: 5 },
      queueConfig: {
        mail: {
          concurrency: 5,
          jobsPerThread: 5,
          prefetch: 0,
          timeoutMs: null,
          globalConcurrency: 3,
          perKeyConcurrency: 1,
          rateLimit: { count: 10, periodMs: 60_000, perKey: false },
        },
      },
      inFlight: 2,
      leaseMs: 60_000,
    });
    await t.pool.query(`
      INSERT INTO jobvisor.jobs (kind, queue, status, run_at, concurrency_key, locked_by, locked_until, started_at)
      VALUES ('k', 'mail', 'pending', now() - interval '1 minute', NULL, NULL, NULL, NULL),
             ('k', 'mail', 'pending', now() + interval '1 hour', NULL, NULL, NULL, NULL),
             ('k', 'mail', 'running', now(), 'tenant-1', 'h:1:a', now() + interval '1 minute', now()),
             ('k', 'mail', 'running', now(), 'tenant-2', 'h:1:a', now() + interval '1 minute', now()),
             ('k', 'orphan', 'pending', now() - interval '1 minute', NULL, NULL, NULL, NULL)`);
    await t.pool.query(
      `INSERT INTO jobvisor.rate_starts (queue, key, started_at) SELECT 'mail', '', now() - g * interval '1 second' FROM generate_series(1, 4) g`,
    );
  });
  after(async () => {
    await d?.close();
    await ro?.close();
    await t?.drop();
  });

  it('pauses and resumes a queue from the overview and the queue page, returning where it was sent from', async () => {
    const refused = await post(`${d.url}queues/mail/pause`, { ...bearer, origin: 'http://evil.example' });
    assert.equal(refused.status, 403);
    const anonymous = await post(`${d.url}queues/mail/pause`, { origin: d.origin });
    assert.equal(anonymous.status, 401);
    assert.equal(await paused('mail'), false, 'nothing changed');

    const res = await post(`${d.url}queues/mail/pause`, { ...bearer, origin: d.origin }, { back: 'overview' });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get('location'), '/ops/?done=paused&queue=mail');
    assert.equal(await paused('mail'), true);
    const overview = await page('?done=paused&queue=mail');
    assert.match(overview, /class="flash ok"[^>]*>\s*Paused: no job of this queue starts/);
    assert.match(overview, /action="\/ops\/queues\/mail\/resume"/, 'the overview offers Resume for it');

    const again = await post(`${d.url}queues/mail/pause`, { ...bearer, origin: d.origin }, { back: 'queue' });
    assert.equal(again.headers.get('location'), '/ops/queues/mail?done=already-paused');
    assert.match(await page('queues/mail?done=already-paused'), /class="flash warn"[^>]*>\s*Nothing changed/);

    const resumed = await post(`${d.url}queues/mail/resume`, { ...bearer, origin: d.origin }, { back: 'queue' });
    assert.equal(resumed.headers.get('location'), '/ops/queues/mail?done=resumed');
    assert.equal(await paused('mail'), false);
  });

  it('refuses pause and resume in read-only mode, and shows no buttons there', async () => {
    const res = await post(`${ro.url}queues/mail/pause`, { ...bearer, origin: ro.origin });
    assert.equal(res.status, 403);
    assert.equal(await paused('mail'), false);
    const html = await (await fetch(`${ro.url}queues/mail`, { headers: bearer })).text();
    assert.doesNotMatch(html, /queues\/mail\/pause/);
  });

  it('answers 404 for a name that is not a queue name, and writes nothing', async () => {
    const res = await post(`${d.url}queues/${encodeURIComponent('bad name!')}/pause`, { ...bearer, origin: d.origin });
    assert.equal(res.status, 404);
    assert.equal((await t.pool.query('SELECT 1 FROM jobvisor.queues WHERE queue = $1', ['bad name!'])).rowCount, 0);
  });

  it('shows the queue page: counts by status, each supervisor settings, limits against use', async () => {
    const html = await page('queues/mail');
    const counts = /<dl class="facts" id="queue-counts">([\s\S]*?)<\/dl>/.exec(html)?.[1] ?? '';
    assert.match(counts, /Due now<\/dt>\s*<dd><a[^>]*>1</);
    assert.match(counts, /Scheduled \(not yet due\)<\/dt>\s*<dd><a href="[^"]*status=scheduled"[^>]*>1</);
    assert.match(counts, /Running<\/dt>\s*<dd><a[^>]*>2</);
    assert.match(html, /id="limit-global">2 of 3</);
    assert.match(html, /id="limit-per-key">1</);
    assert.match(html, /id="limit-rate">10 per 1m 0s</);
    const byKey = /<table id="running-by-key"[^>]*>([\s\S]*?)<\/table>/.exec(html)?.[1] ?? '';
    assert.match(byKey, /tenant-1<\/td>\s*<td class="num">1<\/td>/);
    assert.match(html, /<table id="recent-starts"[^>]*>[\s\S]*whole queue[\s\S]*<td class="num">4<\/td>/);
    assert.match(html, /<table id="queue-supervisors"[^>]*>[\s\S]*h:1:a[\s\S]*jobs\.timeout/);
    assert.doesNotMatch(html, /id="unserved"/);
  });

  it('flags a queue that no live supervisor serves, on the overview and on its page', async () => {
    const overview = await page('');
    assert.match(overview, /id="unserved"[\s\S]*No live supervisor has queue <b>orphan<\/b> in its config/);
    assert.doesNotMatch(overview, /queue <b>mail<\/b> in its config/);
    assert.match(overview, /orphan<\/a> <span class="status status-unserved"/);
    assert.match(await page('queues/orphan'), /id="unserved"[\s\S]*queue <b>orphan<\/b>/);
  });
});
