/**
 * The PL/pgSQL functions that lock or read jobs keep the settings their
 * migrations give them: `enable_seqscan = off` (a generic plan made while the
 * tables were tiny must not stay a sequential scan once they have grown:
 * test/plans/plans.test.ts shows it on park_waits), and VOLATILE where a
 * function must see rows committed while its caller waited for a lock. A
 * later CREATE OR REPLACE sets every property anew and so drops them
 * silently (028 did, to has_live_dependents, until 030).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;

before(async () => {
  db = await createTestDatabase('function_settings');
});

after(async () => {
  await db.drop();
});

describe('function settings', () => {
  it('every function that reads jobs or the step tables runs with enable_seqscan off; the re-checks are volatile', async () => {
    const { rows } = await db.pool.query<{ name: string; volatile: string; config: string[] | null }>(
      `SELECT p.proname AS name, p.provolatile AS volatile, p.proconfig AS config
         FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace
        WHERE n.nspname = 'jobvisor' AND p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'plpgsql')
          AND p.prorettype <> 'trigger'::regtype
          AND p.prosrc ~ 'jobvisor\\.(jobs|job_steps|job_signals)\\M'
        ORDER BY 1`,
    );
    const names = rows.map((r) => r.name);
    for (const wanted of ['due_job_ids', 'has_live_dependents', 'park_waits', 'settle_parents', 'signal'])
      assert.ok(names.includes(wanted), `${wanted} is checked (found ${names.join(', ')})`);
    const without = rows.filter((r) => !(r.config ?? []).includes('enable_seqscan=off')).map((r) => r.name);
    assert.deepEqual(without, [], 'functions that may keep a sequential scan of a grown table');
    const live = rows.find((r) => r.name === 'has_live_dependents');
    assert.equal(live?.volatile, 'v', 'has_live_dependents sees an edge committed while `jobs delete` waited');
  });
});
