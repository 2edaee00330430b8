/**
 * How many pages a statement read, as auto_explain reports it on a connection
 * of its own: for tests that a read stays small however large the table.
 */
import assert from 'node:assert/strict';
import pg from 'pg';
import type { Store } from '../../src/queue/sql.ts';

/**
 * What `measure` read: the shared pages (hit or read) of the top plan node of
 * the first statement whose plan matches `statement` (default: any). `warm`
 * runs first on the same connection (loading and planning what it needs),
 * unmeasured.
 */
export async function pagesRead<T>(
  url: string,
  warm: (s: Store) => Promise<unknown>,
  measure: (s: Store) => Promise<T>,
  statement = /./,
) {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const plans: string[] = [];
  pool.on('connect', (client) => client.on('notice', (n) => plans.push(n.message ?? '')));
  try {
    for (const setting of [
      `LOAD 'auto_explain'`,
      'SET auto_explain.log_min_duration = 0',
      'SET auto_explain.log_analyze = on',
      'SET auto_explain.log_buffers = on',
      'SET auto_explain.log_level = notice',
    ])
      await pool.query(setting);
    const s = { db: pool, schema: 'jobvisor' };
    await warm(s);
    plans.length = 0;
    const value = await measure(s);
    const plan = plans.find((p) => statement.test(p) && /Buffers: shared/.test(p)) ?? plans.join('\n');
    const top = /Buffers: shared hit=(\d+)(?: read=(\d+))?/.exec(plan);
    assert.ok(top, plan);
    return { value, pages: Number(top[1]) + Number(top[2] ?? 0), plan };
  } finally {
    await pool.end();
  }
}
