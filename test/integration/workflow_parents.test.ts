/**
 * Reading a fan-in's parents in bounded pages. Directly: pages of at most
 * PARENT_PAGE_ROWS parents, cut by PARENT_PAGE_BYTES of results, in id order,
 * whole across their boundaries. Through a supervisor with real threads: a
 * fan-in within the documented limits (9,000 parents of 60,000 characters
 * each, 540 M characters in all, past V8's longest string) is read whole by
 * ctx.eachParent(), and ctx.parents() fails it at once with
 * ParentsTooLargeError (permanent) instead of on every attempt.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eachParent, listParents, PARENT_PAGE_BYTES, PARENT_PAGE_ROWS, parentPages } from '../../src/queue/parents.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startSupervisor } from '../helpers/inprocess.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;

before(async () => {
  db = await createTestDatabase('workflow_parents');
});

after(async () => {
  await db?.drop();
});

/**
 * `n` done parents whose results are strings of `chars` characters (letter i % 26), and
 * `children` jobs of `kind` due now that depend on all of them; returns the children's ids.
 */
async function fanIn(n: number, chars: number, children: Array<{ kind: string; payload: unknown }>): Promise<string[]> {
  const { rows } = await db.pool.query<{ id: string }>(
    `WITH p AS (
       INSERT INTO jobvisor.jobs (kind, status, result, finished_at, has_dependents)
       SELECT 'wf_parent', 'done', to_jsonb(repeat(chr(97 + i % 26), $2)), now(), true FROM generate_series(1, $1) AS i
       RETURNING id
     ), c AS (
       INSERT INTO jobvisor.jobs (kind, payload, status, parents_waiting, max_attempts)
       SELECT k, pl, 'pending', 0, 3 FROM unnest($3::text[], $4::jsonb[]) AS x(k, pl)
       RETURNING id
     ), e AS (
       INSERT INTO jobvisor.job_dependencies (child_id, parent_id, counted) SELECT c.id, p.id, true FROM c, p
     )
     SELECT id::text FROM c ORDER BY id`,
    [n, chars, children.map((c) => c.kind), children.map((c) => JSON.stringify(c.payload))],
  );
  return rows.map((r) => r.id);
}

describe('pages of parents', () => {
  it('reads 2,500 parents in pages of at most 1,000, whole and in id order', async () => {
    const [child] = (await fanIn(2500, 10, [{ kind: 'wf_none', payload: {} }])) as [string];
    const pages: number[] = [];
    const ids: bigint[] = [];
    for await (const page of parentPages(db.pool, 'jobvisor', child)) {
      pages.push(page.length);
      for (const p of page) ids.push(BigInt(p.id));
    }
    assert.ok(pages.length >= 3 && pages.every((n) => n <= PARENT_PAGE_ROWS), `pages: ${pages.join(', ')}`);
    assert.equal(ids.length, 2500);
    assert.ok(
      ids.every((id, i) => i === 0 || id > (ids[i - 1] as bigint)),
      'in id order, none twice',
    );
    const all = await listParents(db.pool, 'jobvisor', child);
    assert.deepEqual(
      all.map((p) => BigInt(p.id)),
      ids,
    );
    assert.deepEqual(all[0]?.result, 'bbbbbbbbbb');
  });

  it('cuts a page at about 8 MiB of results, keeps at least one, and skips a parent deleted by hand', async () => {
    const [child] = (await fanIn(40, 1_000_000, [{ kind: 'wf_none', payload: {} }])) as [string];
    const gone = (
      await db.pool.query<{ id: string }>(
        'DELETE FROM jobvisor.jobs WHERE id = (SELECT min(parent_id) FROM jobvisor.job_dependencies WHERE child_id = $1) RETURNING id::text',
        [child],
      )
    ).rows[0]?.id;
    const pages: number[] = [];
    for await (const page of parentPages(db.pool, 'jobvisor', child)) {
      pages.push(page.length);
      assert.ok(JSON.stringify(page).length <= PARENT_PAGE_BYTES + 1_100_000, 'one result past the bound at most');
    }
    assert.equal(
      pages.reduce((a, b) => a + b, 0),
      39,
    );
    assert.ok(pages.length >= 5, `pages: ${pages.join(', ')}`);
    let n = 0;
    for await (const p of eachParent(db.pool, 'jobvisor', child)) {
      assert.notEqual(p.id, gone);
      assert.equal((p.result as string).length, 1_000_000);
      n++;
    }
    assert.equal(n, 39);
  });
});

describe('a fan-in past the longest string', () => {
  it('9,000 parents of 60,000 characters: eachParent reads them all, parents() dead-letters at once', async () => {
    const [each, all] = (await fanIn(9000, 60_000, [
      { kind: 'wf_fanin', payload: { each: true } },
      { kind: 'wf_fanin', payload: {} },
    ])) as [string, string];
    const supervisor = startSupervisor(db.url, { queues: { default: { concurrency: 2 } } });
    await supervisor.start();
    const started = performance.now();
    try {
      const rows = await until(
        'both children finished',
        async () =>
          (
            await db.pool.query<{
              id: string;
              status: string;
              result: unknown;
              last_error: string | null;
              attempts: number;
            }>(
              'SELECT id::text, status, result, last_error, attempts FROM jobvisor.jobs WHERE id = ANY ($1::bigint[]) ORDER BY id',
              [[each, all]],
            )
          ).rows,
        (r) => r.every((j) => j.status === 'done' || j.status === 'failed'),
        180_000,
        200,
      );
      process.stderr.write(`# 9,000 × 60,000 characters read in ${Math.round(performance.now() - started)} ms\n`);
      const [e, a] = rows as [(typeof rows)[0], (typeof rows)[0]];
      assert.equal(e.status, 'done', e.last_error ?? '');
      assert.deepEqual(e.result, { n: 9000, chars: 9000 * 60_002, ordered: true });
      assert.equal(a.status, 'failed');
      assert.equal(a.attempts, 1);
      assert.match(a.last_error ?? '', /ParentsTooLargeError.*read them one at a time with ctx\.eachParent\(\)/);
    } finally {
      await supervisor.stop();
    }
  });
});
