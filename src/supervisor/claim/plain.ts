/**
 * A queue without cluster-wide limits claims with one statement
 * (queue/claim.ts): whatever is due, up to the places asked for. It is never
 * held back, so a short claim means nothing more is due.
 */
import { claimJobs, nextDueIn } from '../../queue/claim.ts';
import type { Store } from '../../queue/sql.ts';
import { readClaimedSteps } from './claimed_steps.ts';
import type { ClaimResult, ClaimStrategy } from './strategy.ts';

export interface ClaimContext {
  store: Store;
  queue: string;
  owner: string;
  leaseMs: number;
  /** Payloads over this size are not sent by the claim (the dispatcher dead-letters them). */
  maxPayloadBytes: number;
  /** Claims commit durably (the primary has synchronous standbys). */
  durable: () => boolean;
}

export class PlainClaim implements ClaimStrategy {
  readonly splitsPlacesFirst = true;

  constructor(private readonly context: ClaimContext) {}

  async claim(limit: number): Promise<ClaimResult> {
    const c = this.context;
    const jobs = await claimJobs(c.store, {
      owner: c.owner,
      queue: c.queue,
      limit,
      leaseMs: c.leaseMs,
      maxPayloadBytes: c.maxPayloadBytes,
      durable: c.durable(),
    });
    await readClaimedSteps(c.store, jobs);
    return { jobs, retryInMs: null };
  }

  nextDueIn(): Promise<number | null> {
    return nextDueIn(this.context.store, this.context.queue);
  }
}
