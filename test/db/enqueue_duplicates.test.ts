/**
 * The id a skipped duplicate reports (EnqueueResult.id is always a string):
 * the job holding the key, read by a statement after the insert, so a holder
 * committed by a concurrent transaction while the insert waited is found; a
 * holder deleted between the two statements means the key is free, and the
 * job is inserted again; a holder this role cannot read is an error.
 *
 * The deletion between two statements is made deterministic by a connection
 * that runs a real DELETE, on another connection, just before the id is read.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { JobvisorError } from '../../src/errors.ts';
import { enqueue, enqueueMany } from '../../src/queue/enqueue.ts';
import { createLoginRole, createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { until } from '../helpers/poll.ts';

let db: TestDatabase;

before(async () => {
  db = await createTestDatabase('enqueue_duplicates');
});
after(async () => {
  await db.drop();
});

/** `pool`, running `beforeFind` (once) just before the statement that reads a duplicate's holder. */
function deletingBeforeFind(pool: pg.Pool, beforeFind: () => Promise<unknown>): pg.Pool {
  let armed = true;
  return {
    query: async (config: pg.QueryConfig) => {
      if (armed && config.text.includes('jobvisor_find_unique')) {
        armed = false;
        await beforeFind();
      }
      return pool.query(config);
    },
  } as unknown as pg.Pool;
}

const jobsWithKey = async (key: string) =>
  (await db.pool.query('SELECT id::text, payload FROM jobvisor.jobs WHERE unique_key = $1', [key])).rows;

describe('a skipped duplicate', () => {
  it('reports the id of a holder that a concurrent transaction committed while the insert waited', async () => {
    const other = await db.pool.connect();
    try {
      await other.query('BEGIN');
      const holder = await enqueue(other, 'report', { by: 'other' }, { uniqueKey: 'concurrent' });
      const waiting = enqueue(db.pool, 'report', { by: 'me' }, { uniqueKey: 'concurrent' });
      await until(
        'the insert waiting for the other transaction',
        async () =>
          (
            await db.pool.query(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%jobvisor_insert_jobs%'",
            )
          ).rows[0].n,
        (n) => n === 1,
      );
      await other.query('COMMIT');
      assert.deepEqual(await waiting, { id: holder.id, duplicate: true });
    } finally {
      other.release();
    }
  });

  it('whose holder is deleted before its id is read is inserted again, with its id', async () => {
    const holder = await enqueue(db.pool, 'report', { n: 1 }, { uniqueKey: 'vanishing' });
    const pool = deletingBeforeFind(db.pool, () =>
      db.pool.query('DELETE FROM jobvisor.jobs WHERE id = $1', [holder.id]),
    );
    const again = await enqueue(pool, 'report', { n: 2 }, { uniqueKey: 'vanishing' });
    assert.equal(again.duplicate, false);
    assert.equal(typeof again.id, 'string');
    assert.deepEqual(await jobsWithKey('vanishing'), [{ id: again.id, payload: { n: 2 } }]);
  });

  it('of a batch with parents, inserted again, keeps the parents it named by index', async () => {
    const holder = await enqueue(db.pool, 'report', {}, { uniqueKey: 'vanishing-child' });
    const pool = deletingBeforeFind(db.pool, () =>
      db.pool.query('DELETE FROM jobvisor.jobs WHERE id = $1', [holder.id]),
    );
    const [parent, kept, child] = await enqueueMany(pool, [
      { kind: 'report', payload: { parent: true } },
      { kind: 'report', uniqueKey: 'kept', payload: {} },
      { kind: 'report', uniqueKey: 'vanishing-child', payload: { child: true }, dependsOn: [{ index: 0 }] },
    ]);
    assert.equal(kept?.duplicate, false);
    assert.equal(child?.duplicate, false);
    const { rows } = await db.pool.query(
      `SELECT j.status, array_agg(d.parent_id::text) AS parents
         FROM jobvisor.jobs j JOIN jobvisor.job_dependencies d ON d.child_id = j.id
        WHERE j.id = $1 GROUP BY j.status`,
      [child?.id],
    );
    assert.deepEqual(rows, [{ status: 'blocked', parents: [parent?.id] }]);
  });

  it('whose holder this role cannot read is an error naming the key, not a result without an id', async () => {
    const role = await createLoginRole(db, 'jv_rls');
    try {
      await db.pool.query(`GRANT USAGE ON SCHEMA jobvisor TO ${role.name}`);
      await db.pool.query(`GRANT SELECT, INSERT ON jobvisor.jobs TO ${role.name}`);
      await db.pool.query(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA jobvisor TO ${role.name}`);
      await db.pool.query('ALTER TABLE jobvisor.jobs ENABLE ROW LEVEL SECURITY');
      // The role inserts any job but reads none of another owner's.
      await db.pool.query(
        `CREATE POLICY reads ON jobvisor.jobs FOR SELECT TO ${role.name} USING (payload->>'owner' = current_user)`,
      );
      await db.pool.query(`CREATE POLICY writes ON jobvisor.jobs FOR INSERT TO ${role.name} WITH CHECK (true)`);
      await enqueue(db.pool, 'hidden', { owner: 'someone else' }, { uniqueKey: 'secret' });
      await assert.rejects(
        enqueue(role.pool, 'hidden', { owner: role.name }, { uniqueKey: 'secret' }),
        (err: Error) =>
          err instanceof JobvisorError &&
          err.code === 'DUPLICATE_UNREADABLE' &&
          /a hidden job with unique key "secret" exists but could not be read/.test(err.message),
      );
      assert.equal((await jobsWithKey('secret')).length, 1, 'nothing more was written');
    } finally {
      await role.pool.end();
      await db.pool.query('ALTER TABLE jobvisor.jobs DISABLE ROW LEVEL SECURITY');
      await db.pool.query('DROP POLICY IF EXISTS reads ON jobvisor.jobs');
      await db.pool.query('DROP POLICY IF EXISTS writes ON jobvisor.jobs');
      await db.pool.query(`DROP OWNED BY ${role.name}`);
      await role.drop();
    }
  });
});
