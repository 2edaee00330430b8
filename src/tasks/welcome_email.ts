/**
 * welcome_email: the idempotency recipe. The "send" (here a log line; in real
 * life an e-mail API call) and the record that it happened commit together:
 * `INSERT … ON CONFLICT DO NOTHING` into emails_sent decides, inside one
 * transaction, whether this attempt is the one that sends. A retry after a
 * crash, or a second delivery of the same job, finds the row and skips.
 *
 * With a real e-mail API the send cannot roll back; then send with the
 * provider's idempotency key (e.g. `welcome-<user_id>`) so a resend after a
 * crash between "sent" and "committed" is deduplicated by the provider.
 *
 * `WELCOME_EMAIL_FAILURE_RATE` (0..1, default 0) makes attempts fail at random
 * before sending, for the demo's retry practice; `WELCOME_EMAIL_SEND_MS` adds a
 * simulated provider latency inside the transaction (crash tests).
 */
import { setTimeout } from 'node:timers/promises';
import { withClient } from '../db/borrow.ts';
import type { TaskContext } from '../worker/types.ts';
import { PermanentError } from '../worker/errors.ts';

const FAILURE_RATE = Number(process.env.WELCOME_EMAIL_FAILURE_RATE ?? 0);
/** Simulated latency of the mail provider, in ms (default 0). */
const SEND_MS = Number(process.env.WELCOME_EMAIL_SEND_MS ?? 0);
let tableReady: Promise<void> | undefined;

const CREATE_TABLE =
  'CREATE TABLE IF NOT EXISTS public.emails_sent (user_id bigint PRIMARY KEY, job_id bigint NOT NULL, sent_at timestamptz NOT NULL DEFAULT now())';

/**
 * Creates emails_sent once per thread if it is missing; replicas racing to
 * create it is fine. It looks first: `CREATE TABLE IF NOT EXISTS` needs the
 * right to create in the schema even when the table exists, and the runtime
 * role the Kubernetes manifests recommend has DML rights only.
 */
function ensureTable(ctx: TaskContext): Promise<void> {
  tableReady ??= (async () => {
    const { rows } = await ctx.db.query<{ present: boolean }>(
      "SELECT to_regclass('public.emails_sent') IS NOT NULL AS present",
    );
    if (rows[0]?.present) return;
    await ctx.db.query(CREATE_TABLE).catch((err: { code?: string }) => {
      if (err.code === '42P07' || err.code === '23505') return;
      if (err.code === '42501')
        throw new Error(
          `public.emails_sent does not exist and this database role may not create it; create it once with a role that may: ${CREATE_TABLE}`,
        );
      throw err;
    });
  })().catch((err: unknown) => {
    tableReady = undefined;
    throw err;
  });
  return tableReady;
}

export default async function welcomeEmail(
  payload: { user_id?: unknown },
  ctx: TaskContext,
): Promise<{ sent: boolean }> {
  const userId = payload?.user_id;
  if (!Number.isSafeInteger(userId) || (userId as number) <= 0)
    throw new PermanentError(`payload.user_id must be a positive integer, got ${JSON.stringify(userId)}`);
  if (Math.random() < FAILURE_RATE) throw new Error('mail server unavailable (simulated failure)');
  await ensureTable(ctx);
  return withClient(ctx.db, async (client) => {
    try {
      await client.query('BEGIN');
      const inserted = await client.query(
        'INSERT INTO public.emails_sent (user_id, job_id) VALUES ($1, $2) ON CONFLICT (user_id) DO NOTHING',
        [userId, ctx.job.id],
      );
      if (inserted.rowCount === 0) {
        await client.query('ROLLBACK');
        ctx.log.info({ userId }, 'welcome email already sent, skipping');
        return { sent: false };
      }
      if (SEND_MS > 0) await setTimeout(SEND_MS, undefined, { signal: ctx.signal });
      ctx.log.info({ userId }, 'welcome email sent');
      await client.query('COMMIT');
      return { sent: true };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    }
  });
}
