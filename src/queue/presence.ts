/**
 * The runtime statements of the `supervisors` table: each live supervisor
 * keeps its own row by heartbeat (`beatSupervisor`), deletes it on clean exit
 * (`removeSupervisor`), and the reaper expires rows that stopped beating
 * (`expireSupervisors`). The operator API reads the table (admin/supervisors.ts).
 *
 * The beat is an upsert, so a row deleted while its supervisor was paused
 * (and expired) comes back at the next beat; started_at is then that beat's
 * time. Readers skip rows past expires_at, whether or not a reaper ran.
 */
import { planned, run, type Now, type Store } from './sql.ts';

/** A queue's settings as a supervisor reports them (supervisors.queue_config). */
export interface QueueConfig {
  concurrency: number;
  jobsPerThread: number;
  prefetch: number;
  /** null: jobs.timeout applies. */
  timeoutMs: number | null;
  globalConcurrency?: number;
  perKeyConcurrency?: number;
  rateLimit?: { count: number; periodMs: number; perKey: boolean };
}

/** A row expires this many leases after its last beat. */
export const SUPERVISOR_EXPIRY_LEASES = 3;

export interface SupervisorInfo {
  id: string;
  host: string;
  pid: number;
  version: string;
  queues: Record<string, number>;
  /** Queue name → its settings as this supervisor loaded them (default: none recorded). */
  queueConfig?: Record<string, QueueConfig>;
  inFlight: number;
  leaseMs: number;
  /** Under a cluster primary: its id and this process's slot (default: none, a supervisor alone). */
  cluster?: { primary: string; slot: number };
}

const BEAT = planned(
  'supervisor_beat',
  `
INSERT INTO jobvisor.supervisors AS s
       (id, host, pid, version, queues, started_at, heartbeat_at, expires_at, in_flight, queue_config,
        cluster_primary, cluster_slot)
VALUES ($1, $2, $3, $4, $5::jsonb, coalesce($8::timestamptz, now()), coalesce($8::timestamptz, now()),
        coalesce($8::timestamptz, now()) + $7::float8 * interval '1 millisecond', $6, $9::jsonb, $10, $11)
ON CONFLICT (id) DO UPDATE
   SET heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at, in_flight = excluded.in_flight,
       queues = excluded.queues, queue_config = excluded.queue_config`,
);

/** Records `info` as alive now: inserts the row, or refreshes its heartbeat and jobs in flight. */
export async function beatSupervisor(store: Store, info: SupervisorInfo, now: Now = null): Promise<void> {
  await run(store, BEAT, [
    info.id,
    info.host,
    info.pid,
    info.version,
    JSON.stringify(info.queues),
    info.inFlight,
    info.leaseMs * SUPERVISOR_EXPIRY_LEASES,
    now,
    JSON.stringify(info.queueConfig ?? {}),
    info.cluster?.primary ?? null,
    info.cluster?.slot ?? null,
  ]);
}

const REMOVE = planned('supervisor_remove', `DELETE FROM jobvisor.supervisors WHERE id = $1`);

/** Deletes this supervisor's row (clean exit). */
export async function removeSupervisor(store: Store, id: string): Promise<void> {
  await run(store, REMOVE, [id]);
}

const EXPIRE = planned(
  'supervisor_expire',
  `DELETE FROM jobvisor.supervisors WHERE expires_at < coalesce($1::timestamptz, now()) RETURNING id`,
);

/** Deletes the rows of supervisors that stopped beating. @returns their ids. */
export async function expireSupervisors(store: Store, now: Now = null): Promise<string[]> {
  return (await run<{ id: string }>(store, EXPIRE, [now])).map((r) => r.id);
}
