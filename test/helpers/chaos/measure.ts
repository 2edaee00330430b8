/**
 * Measuring chaos scenarios: waits with deadlines (never blind sleeps), small
 * statistics, and a record of each scenario's measured result.
 *
 * `report(scenario, result)` prints one `chaos-result` line on stderr and, when
 * JOBVISOR_CHAOS_RESULTS names a file, appends the result to it as a JSON line
 * (RELIABILITY.md is written from those lines).
 */
import { appendFileSync } from 'node:fs';
import type pg from 'pg';

export function report(scenario: string, result: Record<string, unknown>): void {
  const line = JSON.stringify({ scenario, at: new Date().toISOString(), ...result });
  process.stderr.write(`chaos-result ${line}\n`);
  const file = process.env.JOBVISOR_CHAOS_RESULTS;
  if (file) appendFileSync(file, `${line}\n`);
}

import { until } from '../poll.ts';

export { clockPasses, until } from '../poll.ts';

export function summary(values: number[]): { n: number; p50: number; p95: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return { n: sorted.length, p50: at(0.5), p95: at(0.95), max: sorted[sorted.length - 1] ?? Number.NaN };
}

/**
 * Inserts one job by plain SQL, waits until it is done, and returns its pickup
 * in ms (created → started, both on the database's clock). With LISTEN working
 * this is milliseconds even when the poll interval is 30 s.
 * `read` polls through another pool than the insert (default: the same).
 */
export async function pickupMs(
  db: pg.Pool,
  options: { kind?: string; payload?: unknown; read?: pg.Pool; timeoutMs?: number } = {},
): Promise<number> {
  const read = options.read ?? db;
  const { rows } = await db.query<{ id: string }>(
    'INSERT INTO jobvisor.jobs (kind, payload) VALUES ($1, $2) RETURNING id',
    [options.kind ?? 'chaos_noop', options.payload ?? {}],
  );
  const row = await until(
    'probe job done',
    async () =>
      (
        await read.query<{ status: string; ms: string }>(
          'SELECT status, extract(epoch FROM started_at - created_at) * 1000 AS ms FROM jobvisor.jobs WHERE id = $1',
          [rows[0]?.id],
        )
      ).rows[0],
    (r) => r?.status === 'done',
    options.timeoutMs ?? 40_000,
    20,
  );
  return Math.round(Number(row?.ms));
}

export async function count(pool: pg.Pool, sql: string, values: unknown[] = []): Promise<number> {
  return Number((await pool.query(sql, values)).rows[0].n);
}

/** Counts of the given jobs by status. */
export async function statusCounts(
  pool: pg.Pool,
  where = 'true',
  values: unknown[] = [],
): Promise<Record<string, number>> {
  const rows = (
    await pool.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM jobvisor.jobs WHERE ${where} GROUP BY 1`,
      values,
    )
  ).rows;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** A seeded PRNG (mulberry32), so a failing random case can be replayed with its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** GET a supervisor's HTTP endpoint: status and body (status 0 when nothing answers). */
export async function httpGet(port: number, path: string, timeoutMs = 3000): Promise<{ status: number; body: string }> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(timeoutMs) });
    return { status: res.status, body: await res.text() };
  } catch {
    return { status: 0, body: '' };
  }
}
