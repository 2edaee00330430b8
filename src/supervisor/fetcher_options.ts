/** What a queue's fetcher (fetcher.ts) is given: its store, queue, limits and the parts it tells. */
import type { QueueSettings } from '../config/sections.ts';
import type { Store } from '../queue/sql.ts';
import type { ClaimedJob } from '../queue/types.ts';
import type { SupervisorEvents } from './events.ts';
import type { Hooks } from './hooks.ts';

export interface FetcherOptions {
  store: Store;
  queue: string;
  settings: QueueSettings;
  owner: string;
  leaseMs: number;
  /** Payloads over this size are not sent by the claim (the dispatcher dead-letters them). */
  maxPayloadBytes: number;
  pollIntervalMs: number;
  capacity: () => number;
  /** Claims commit durably (the primary has synchronous standbys); default false. */
  durableClaims?: () => boolean;
  deliver: (jobs: ClaimedJob[]) => void;
  /** Hands back jobs claimed while the queue was being paused (no attempt used). */
  handBack?: (jobs: ClaimedJob[], reason: string) => void;
  /** Awaited before each claim (the pause state re-read after an outage); a rejection skips the claim. */
  beforeClaim?: () => Promise<void>;
  events: SupervisorEvents;
  /** Told of claims and failed claims (none: a test's fetcher alone). */
  hooks?: Hooks;
  /** The local clock (ms since the epoch; default Date.now). */
  clock?: () => number;
}
