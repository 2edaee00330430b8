/**
 * Enqueueing into a database that `jobvisor migrate` has not prepared: a
 * NotMigratedError (code SCHEMA_NOT_MIGRATED) saying what to run, from
 * enqueue, enqueueMany (INSERT and COPY) and `jobvisor enqueue`, instead of
 * pg's `relation "jobvisor.jobs" does not exist`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { NotMigratedError, notMigrated } from '../../src/errors.ts';
import { COPY_THRESHOLD, enqueue, enqueueMany } from '../../src/queue/enqueue.ts';
import { runCli } from '../helpers/cli.ts';
import { createEmptyDatabase, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;

before(async () => {
  db = await createEmptyDatabase();
});

after(() => db.drop());

function saysMigrate(err: unknown): boolean {
  assert.ok(err instanceof NotMigratedError, `a NotMigratedError, got ${String(err)}`);
  assert.equal(err.code, 'SCHEMA_NOT_MIGRATED');
  assert.match(err.message, /run `jobvisor migrate` \(or migrate\(\) from the API\) first/);
  assert.match(err.message, /schema "jobvisor"/);
  assert.equal((err.cause as { code?: string }).code, '42P01', 'the pg error is the cause');
  return true;
}

describe('enqueue before migrate', () => {
  it('enqueue, in a transaction too, says to run jobvisor migrate', async () => {
    await assert.rejects(enqueue(db.pool, 'welcome_email', { user_id: 1 }), saysMigrate);
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await assert.rejects(enqueue(client, 'welcome_email', { user_id: 1 }), saysMigrate);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
  });

  it('enqueueMany, by INSERT and by COPY, says the same', async () => {
    await assert.rejects(enqueueMany(db.pool, [{ kind: 'a', payload: {} }]), saysMigrate);
    const many = Array.from({ length: COPY_THRESHOLD }, () => ({ kind: 'a', payload: {} }));
    await assert.rejects(enqueueMany(db.pool, many), saysMigrate);
  });

  it('jobvisor enqueue prints one line with the hint and exits 1', async () => {
    const r = await runCli(db.url, ['enqueue', 'welcome_email', '{"user_id":1}']);
    assert.equal(r.code, 1, r.stderr);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0] ?? '', /run `jobvisor migrate`.*\(SCHEMA_NOT_MIGRATED\)$/);
    assert.doesNotMatch(r.stderr, /does not exist/);
  });

  it('only errors about jobvisor’s own relations are mapped', () => {
    const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });
    assert.ok(notMigrated(pgError('42P01', 'relation "jobvisor.jobs" does not exist'), 'jobvisor'));
    assert.ok(notMigrated(pgError('42P01', 'relation "ops.jobs" does not exist'), 'ops'));
    assert.ok(notMigrated(pgError('42703', 'column "concurrency_key" of relation "jobs" does not exist'), 'jobvisor'));
    assert.equal(notMigrated(pgError('42P01', 'relation "orders" does not exist'), 'jobvisor'), undefined);
    assert.equal(notMigrated(pgError('42P01', 'relation "ops.jobs" does not exist'), 'jobvisor'), undefined);
    assert.equal(notMigrated(pgError('23505', 'duplicate key'), 'jobvisor'), undefined);
    assert.equal(notMigrated(undefined, 'jobvisor'), undefined);
  });
});
