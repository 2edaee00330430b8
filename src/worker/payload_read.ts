/**
 * A deferred payload's text, read in the job's own thread before its task
 * starts (the claim did not carry it: queue/claim.ts INLINE_PAYLOAD_BYTES).
 *
 * Reads go through the thread's ctx.db pool, first come first served, at most
 * `reads` at once: pool.dbPoolSize − 1 (at least 1), so the thread's tasks
 * always keep a connection of their own. 50 jobs of 900 KB sent to one thread
 * together, each reading at once, took both connections and left the rest
 * waiting past ctx.db's 10 s connection timeout: a quarter of them failed an
 * attempt. Waiting for its turn takes no connection, and counts within the
 * job's timeout like the task's own queries.
 */
import type pg from 'pg';
import { readClaimedPayload } from '../queue/payload_read.ts';
import { PayloadError, payloadTooLarge } from './payload.ts';

/** The claim was lost before the payload was read: the supervisor writes nothing for such a run. */
export class ClaimLostError extends Error {
  readonly code = 'claim_lost';
  constructor(id: string) {
    super(`job ${id} is no longer held by this run (lease lost, cancelled or re-queued) before its payload was read`);
    this.name = 'ClaimLostError';
  }
}

/** Reads a deferred payload for the run holding `fence`. */
export type PayloadReader = (fence: { id: string; token: string }, signal: AbortSignal) => Promise<string>;

/**
 * A reader for one thread. Each read returns the payload's JSON text or
 * throws: PayloadError (permanent) when it is over `maxPayloadBytes`,
 * ClaimLostError when the claim is gone, the abort reason as soon as `signal`
 * fires (a read under way is then left to finish, its answer dropped).
 */
export function createPayloadReader(options: {
  db: () => pg.Pool;
  schema: string;
  maxPayloadBytes: number;
  reads: number;
}): PayloadReader {
  const gate = new Gate(Math.max(1, options.reads));
  const read = async (fence: { id: string; token: string }, signal: AbortSignal): Promise<string> => {
    signal.throwIfAborted();
    const found = await readClaimedPayload(options.db(), options.schema, fence, options.maxPayloadBytes);
    if (found.type === 'gone') throw new ClaimLostError(fence.id);
    if (found.type === 'oversized')
      throw new PayloadError('payload_too_large', payloadTooLarge(found, options.maxPayloadBytes));
    return found.text;
  };
  return (fence, signal) =>
    untilAborted(
      gate.run(() => read(fence, signal)),
      signal,
    );
}

/** `work`, or the abort reason as soon as `signal` fires. */
async function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
    // Its answer, or its failure, is no longer anyone's.
    work.catch(() => {});
  }
}

/** At most `limit` calls at once; the others wait in order. A finished call hands its place to the next. */
class Gate {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active < this.limit) this.active++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}
