/**
 * The built-in welcome_email under the runtime role the Kubernetes manifests
 * recommend: DML rights only, no right to create in the schema. Its
 * `CREATE TABLE IF NOT EXISTS emails_sent` failed with "permission denied for
 * schema public" even when the table existed, so every job failed there.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import welcomeEmail from '../../src/tasks/welcome_email.ts';
import type { TaskContext } from '../../src/worker/types.ts';
import { createLoginRole, createTestDatabase, type LoginRole, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;
let dml: LoginRole;

before(async () => {
  db = await createTestDatabase('welcome_email');
  dml = await createLoginRole(db, 'jv_dml');
  // PostgreSQL 15 and later: nobody but the owner may create in schema public.
  await db.pool.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
});

after(async () => {
  await dml?.pool.end();
  await db?.drop();
  await dml?.drop();
});

function ctxOf(jobId: string): TaskContext {
  return {
    job: { id: jobId, kind: 'welcome_email', queue: 'default', attempt: 1, maxAttempts: 8 },
    signal: new AbortController().signal,
    log: pino({ level: 'silent' }),
    db: dml.pool,
  } as unknown as TaskContext;
}

describe('welcome_email with a role that may not create tables', () => {
  it('with no emails_sent table, fails with an error that says what to create, and creates nothing', async () => {
    await assert.rejects(
      welcomeEmail({ user_id: 1 }, ctxOf('1')),
      /public\.emails_sent does not exist and this database role may not create it.*CREATE TABLE IF NOT EXISTS public\.emails_sent/,
    );
    const { rows } = await db.pool.query("SELECT to_regclass('public.emails_sent') AS t");
    assert.equal(rows[0].t, null);
  });

  it('once the table exists (made by the migration role), sends once and then skips', async () => {
    await db.pool.query(
      'CREATE TABLE public.emails_sent (user_id bigint PRIMARY KEY, job_id bigint NOT NULL, sent_at timestamptz NOT NULL DEFAULT now())',
    );
    await db.pool.query(`GRANT SELECT, INSERT ON public.emails_sent TO ${dml.name}`);
    assert.deepEqual(await welcomeEmail({ user_id: 7 }, ctxOf('2')), { sent: true });
    assert.deepEqual(await welcomeEmail({ user_id: 7 }, ctxOf('3')), { sent: false });
    const { rows } = await db.pool.query('SELECT user_id::int, job_id::int FROM public.emails_sent');
    assert.deepEqual(rows, [{ user_id: 7, job_id: 2 }]);
  });
});
