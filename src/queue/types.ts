/** Rows and outcomes that cross between the queue layer and the supervisor. */

/** A job this supervisor has claimed: it owns attempt `attempt` until its lease ends. */
export interface ClaimedJob {
  id: string;
  kind: string;
  queue: string;
  /** The payload as JSON text: parsed in the worker thread, not on the main thread. */
  payload: string;
  attempt: number;
  maxAttempts: number;
  /** When the job became due, in ms since the epoch. */
  runAtMs: number;
}

/** A fence: the owner and the attempt a write is valid for. */
export interface Attempt {
  id: string;
  attempt: number;
}
