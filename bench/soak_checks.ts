/**
 * The soak's verdict once the queue has drained (bench/soak.ts): every job
 * done, or dead-lettered after its two attempts when it was meant to fail;
 * every chaos_run ran; every re-run explained by a process a fault hit. The
 * e-mails are checked by the caller, against the users it enqueued.
 */
import type pg from 'pg';

export interface SoakChecks {
  /** Nothing lost, nothing left unrun, no re-run without a faulted process. */
  ok: boolean;
  figures: {
    statuses: Record<string, number>;
    lostOrWrong: number;
    chaosRunNeverRan: number;
    reRuns: number;
    reRunsWithoutAFaultedProcess: number;
    emailsSent: number;
  };
}

/** Reads the soak's tables; `faulted` holds the pids of every process a fault hit. */
export async function checkPromise(db: pg.Pool, faulted: ReadonlySet<number>): Promise<SoakChecks> {
  const statuses = Object.fromEntries(
    (
      await db.query<{ kind: string; status: string; n: number }>(
        'SELECT kind, status, count(*)::int AS n FROM jobvisor.jobs GROUP BY 1, 2',
      )
    ).rows.map((r) => [`${r.kind}:${r.status}`, r.n]),
  );
  const lost = Number(
    (
      await db.query(
        "SELECT count(*) AS n FROM jobvisor.jobs WHERE (kind <> 'chaos_fail' AND status <> 'done') OR (kind = 'chaos_fail' AND (status <> 'failed' OR attempts <> 2))",
      )
    ).rows[0].n,
  );
  const notRun = Number(
    (
      await db.query(
        "SELECT count(*) AS n FROM jobvisor.jobs j WHERE kind = 'chaos_run' AND NOT EXISTS (SELECT 1 FROM chaos_runs r WHERE r.job_id = j.id)",
      )
    ).rows[0].n,
  );
  const reruns = (
    await db.query<{ pids: number[] }>(
      'SELECT array_agg(pid) AS pids FROM chaos_runs GROUP BY job_id HAVING count(*) > 1',
    )
  ).rows;
  const unexplained = reruns.filter((r) => !r.pids.some((p) => faulted.has(p))).length;
  const emails = Number((await db.query('SELECT count(*) AS n FROM public.emails_sent')).rows[0].n);
  return {
    ok: lost === 0 && notRun === 0 && unexplained === 0,
    figures: {
      statuses,
      lostOrWrong: lost,
      chaosRunNeverRan: notRun,
      reRuns: reruns.length,
      reRunsWithoutAFaultedProcess: unexplained,
      emailsSent: emails,
    },
  };
}
