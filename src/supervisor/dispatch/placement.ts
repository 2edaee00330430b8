/**
 * Where a run goes: a pure decision over the open sessions.
 *
 * Rules:
 *   - a run of an exclusive task (task option exclusiveThread) only goes to a
 *     session of its queue with nothing running, and while it runs the session
 *     takes no other run: CPU-bound work never shares a thread, whatever queue
 *     it was put in;
 *   - any other run goes to a session of its queue with fewer than
 *     `jobsPerThread` runs and no exclusive run;
 *   - otherwise a new session, while sessions < maxThreads;
 *   - otherwise the run waits. If its queue is short of its share of threads
 *     (it holds none, or two fewer than the queue holding most) and no session
 *     is already ending, the busiest queue gives one session back: that session
 *     takes no more runs and is ended once its last run has settled (ending a
 *     session with runs on it would race their results against its end). Queues sharing
 *     `pool.maxThreads` therefore never starve one another, even when one of
 *     them always has work (a default queue with concurrency 50 beside cpu).
 */

export interface SessionView {
  readonly queue: string;
  readonly running: ReadonlySet<string>;
  readonly exclusive: number;
  readonly ending: boolean;
  readonly yielding: boolean;
}

export type Placement<S> = { type: 'use'; session: S } | { type: 'open' } | { type: 'wait'; yieldFrom: S | null };

export interface PlacementRequest {
  queue: string;
  exclusive: boolean;
  jobsPerThread: number;
  maxThreads: number;
}

export function place<S extends SessionView>(sessions: Iterable<S>, request: PlacementRequest): Placement<S> {
  let count = 0;
  for (const s of sessions) {
    count++;
    if (s.queue !== request.queue || s.ending || s.yielding || s.exclusive > 0) continue;
    if (request.exclusive ? s.running.size === 0 : s.running.size < request.jobsPerThread)
      return { type: 'use', session: s };
  }
  if (count < request.maxThreads) return { type: 'open' };
  return { type: 'wait', yieldFrom: sessionToYield(sessions, request.queue) };
}

/** A session another queue should give back so that `queue` gets a thread, or null. */
export function sessionToYield<S extends SessionView>(sessions: Iterable<S>, queue: string): S | null {
  const held = new Map<string, number>();
  for (const s of sessions) {
    if (s.ending || s.yielding) return null; // a thread is on its way back already
    held.set(s.queue, (held.get(s.queue) ?? 0) + 1);
  }
  const mine = held.get(queue) ?? 0;
  let busiest: string | null = null;
  let most = 0;
  for (const [q, n] of held) {
    if (q !== queue && n > most) {
      busiest = q;
      most = n;
    }
  }
  if (busiest === null || !(mine === 0 || most > mine + 1)) return null;
  let pick: S | null = null;
  for (const s of sessions) {
    if (s.queue === busiest && (pick === null || s.running.size < pick.running.size)) pick = s;
  }
  return pick;
}
