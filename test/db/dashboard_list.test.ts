/**
 * The jobs list and job page over real HTTP against a real database: the
 * "scheduled" status, bulk actions on exactly the ticked rows, only the
 * actions that apply, no-ops answered as warnings, and pages both ways.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { seedDeadLetters, serveTestDashboard, TEST_TOKEN, type ServedDashboard } from '../helpers/dashboard.ts';

describe('dashboard jobs list over HTTP', () => {
  let t: TestDatabase;
  let d: ServedDashboard;
  const bearer = { authorization: `Bearer ${TEST_TOKEN}` };
  const get = async (path: string) => {
    const res = await fetch(`${d.url}${path}`, { headers: bearer });
    assert.equal(res.status, 200, path);
    return res.text();
  };
  const post = (path: string, body: URLSearchParams) =>
    fetch(`${d.url}${path}`, {
      method: 'POST',
      headers: { ...bearer, origin: d.origin, 'content-type': 'application/x-www-form-urlencoded' },
      body,
      redirect: 'manual',
    });
  const rowIds = (html: string) =>
    [...html.matchAll(/<td data-label="Id"><a href="[^"]*">(\d+)<\/a>/g)].map((m) => m[1]);
  const insert = async (sql: string) => (await t.pool.query<{ id: string }>(sql)).rows.map((r) => r.id);

  before(async () => {
    t = await createTestDatabase();
    d = await serveTestDashboard({ pool: t.pool });
  });
  after(async () => {
    await d?.close();
    await t?.drop();
  });

  it('filters "scheduled" (pending, not yet due) and shows it distinctly from due pending jobs', async () => {
    const due = await insert(
      `INSERT INTO jobvisor.jobs (kind, queue, run_at) SELECT 'sched', 'parked', now() - interval '1 minute' FROM generate_series(1, 2) RETURNING id`,
    );
    const later = await insert(
      `INSERT INTO jobvisor.jobs (kind, queue, run_at) SELECT 'sched', 'parked', now() + interval '1 hour' FROM generate_series(1, 3) RETURNING id`,
    );
    const scheduled = await get('jobs?status=scheduled&kind=sched');
    assert.deepEqual(rowIds(scheduled).sort(), [...later].sort());
    assert.equal(scheduled.match(/class="status status-scheduled"/g)?.length, 3);
    assert.match(scheduled, /<option value="scheduled" selected>/);
    const pending = await get('jobs?status=pending&kind=sched');
    assert.equal(rowIds(pending).length, 5, 'pending keeps meaning due or not');
    assert.equal(pending.match(/class="status status-pending"/g)?.length, 2);
    assert.match(await get(`jobs/${later[0]}`), /<h1>Job \d+ <span class="status status-scheduled">scheduled/);
    assert.match(await get(`jobs/${due[0]}`), /<h1>Job \d+ <span class="status status-pending">pending/);
  });

  it('retries exactly the ticked rows of ten dead letters, after a confirmation of their count', async () => {
    const ids = await seedDeadLetters(t.pool, { kind: 'ticked', queue: 'parked', count: 10 });
    const chosen = [ids[1], ids[4], ids[8]] as string[];
    const body = new URLSearchParams([['selection', '1'], ...chosen.map((id): [string, string] => ['ids', id])]);
    const confirm = await post('jobs/retry', body);
    assert.equal(confirm.status, 200);
    const page = await confirm.text();
    assert.match(page, /<h1>Retry 3 jobs\?<\/h1>/);
    const done = await post('jobs/retry', new URLSearchParams({ id: chosen.join(','), confirm: '3' }));
    assert.equal(done.status, 303);
    assert.match(done.headers.get('location') ?? '', /done=retried&n=3/);
    const { rows } = await t.pool.query<{ id: string; status: string }>(
      `SELECT id, status FROM jobvisor.jobs WHERE kind = 'ticked' ORDER BY id`,
    );
    assert.deepEqual(
      rows.filter((r) => r.status === 'pending').map((r) => r.id),
      chosen,
    );
    assert.equal(rows.filter((r) => r.status === 'failed').length, 7);
    const none = await post('jobs/retry', new URLSearchParams({ selection: '1' }));
    assert.equal(none.status, 400, 'nothing ticked');
  });

  it('offers only the actions that apply: no Cancel or Run now on a dead letter', async () => {
    const [dead] = await seedDeadLetters(t.pool, { kind: 'offers', count: 1 });
    const [later] = await insert(
      `INSERT INTO jobvisor.jobs (kind, run_at) VALUES ('offers', now() + interval '1 day') RETURNING id`,
    );
    const actions = (html: string) => [...html.matchAll(/action="\/jobs\/\d+\/([a-z-]+)"/g)].map((m) => m[1]);
    assert.deepEqual(actions(await get(`jobs/${dead}`)), ['retry', 'delete']);
    // And a folded form to send a signal, for a job that has not finished (a finished one refuses it).
    assert.deepEqual(actions(await get(`jobs/${later}`)), ['cancel', 'run-now', 'delete', 'signal']);
    // A waiting job (ctx.waitFor): Run now times its wait out now.
    const [waiting] = await insert(
      `INSERT INTO jobvisor.jobs (kind, status, waiting_for, run_at, has_steps)
       VALUES ('offers', 'waiting', 'go', now() + interval '1 day', true) RETURNING id`,
    );
    assert.deepEqual(actions(await get(`jobs/${waiting}`)), ['cancel', 'run-now', 'delete', 'signal']);
    const list = await get('jobs?status=failed&kind=offers');
    assert.match(list, /Retry all matching/);
    assert.doesNotMatch(list, /Cancel all matching|Cancel\s+selected/);
    assert.match(list, /Retry\s+selected/);
  });

  it('answers an action that changed nothing with a warning, not a success', async () => {
    const [dead] = await seedDeadLetters(t.pool, { kind: 'noop', count: 1 });
    const one = await post(`jobs/${dead}/cancel`, new URLSearchParams());
    assert.equal(one.headers.get('location'), `/jobs/${dead}?done=unchanged`);
    assert.match(await get(`jobs/${dead}?done=unchanged`), /class="flash warn"[^>]*>\s*Nothing changed/);
    const bulk = await post('jobs/cancel', new URLSearchParams({ id: String(dead), confirm: '0' }));
    assert.match(bulk.headers.get('location') ?? '', /done=none-changed&n=0/);
    assert.match(await get(`jobs?id=${dead}&done=none-changed&n=0`), /class="flash warn"/);
    assert.match(await get(`jobs?id=${dead}&done=retried&n=1`), /class="flash ok"/);
  });

  it('pages both ways: Older → then ← Newer back to the same rows', async () => {
    await insert(`INSERT INTO jobvisor.jobs (kind) SELECT 'paged' FROM generate_series(1, 120) RETURNING id`);
    const first = await get('jobs?kind=paged');
    assert.doesNotMatch(first, /← Newer/, 'the first page has no newer page');
    const older = /<a rel="next" href="\/jobs\?([^"]+)">Older →/.exec(first)?.[1];
    assert.ok(older);
    const second = await get(`jobs?${older.replaceAll('&amp;', '&')}`);
    assert.equal(rowIds(second).length, 50);
    const newer = /<a rel="prev" href="\/jobs\?([^"]+)">← Newer/.exec(second)?.[1];
    assert.ok(newer, 'the second page links back');
    const back = await get(`jobs?${newer.replaceAll('&amp;', '&')}`);
    assert.deepEqual(rowIds(back), rowIds(first));
    assert.doesNotMatch(back, /← Newer/, 'back on the first page');
    assert.match(back, /Older →/);
  });
});
