/** Rows and outcomes that cross between the queue layer and the supervisor. */

/**
 * A job as `runner.events` listeners see it (supervisor/events.ts): what it
 * is and which attempt, never its claim token or its payload.
 */
export interface JobRef {
  id: string;
  queue: string;
  kind: string;
  attempt: number;
}

/**
 * A job this supervisor has claimed: it owns the run fenced by `token` until its
 * lease ends. The token is unique to this claim (drawn from a sequence), so no
 * other run of the same job, earlier or later, can write with it.
 */
export interface ClaimedJob {
  id: string;
  /** The claim's fence (lease_token, a bigint as text). */
  token: string;
  kind: string;
  queue: string;
  /**
   * The payload as JSON text: parsed in the worker thread, not on the main thread.
   * Null when it is over the claim's size limit (see payloadBytes), or when the
   * claim did not carry it (payloadDeferred).
   */
  payload: string | null;
  /** Size of the payload's JSON text in bytes when it is over the limit (payload null); else null. */
  payloadBytes: number | null;
  /** Set when the payload's stored size alone proved it over the limit: that size, in bytes. */
  payloadStoredBytes: number | null;
  /**
   * The claim did not carry the payload (stored in more than
   * INLINE_PAYLOAD_BYTES, queue/claim.ts): the worker thread that runs the job
   * reads it, fenced by the claim's token (queue/payload_read.ts).
   */
  payloadDeferred?: boolean;
  attempt: number;
  maxAttempts: number;
  /** The job as events show it (refOf, supervisor/events.ts): made once, when first reported. */
  ref?: JobRef;
  /** When the job became due, in ms since the epoch. */
  runAtMs: number;
  /** The job's trace_context as JSON text (W3C traceparent/tracestate), when it has one. */
  traceContext?: string;
  /** The job has durable-step records (jobs.has_steps): a run of it resumes. */
  hasSteps?: boolean;
  /**
   * Those records, read by the supervisor right after the claim
   * (supervisor/claim/claimed_steps.ts) and sent to the run with the job, so
   * that it reads none itself: JSON text (queue/steps.ts recordsOf), the
   * database's clock at the read (ms since the epoch) and the supervisor's
   * performance.now() when the read returned.
   */
  steps?: { text: string; nowMs: number; at: number };
  /**
   * A rate-limited job's start slot, by the local clock (ms since the epoch):
   * its task may start from notBeforeMs and no later than notAfterMs; a run
   * that reaches its task later is handed back and claimed again for a new slot.
   */
  startWindow?: { notBeforeMs: number; notAfterMs: number };
}

/** A fence: the job and the claim token a write is valid for. */
export interface Fence {
  id: string;
  token: string;
}
