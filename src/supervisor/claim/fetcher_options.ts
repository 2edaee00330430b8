/** What a queue's fetcher (fetcher.ts) is given: its queue, limits, claim strategy and the parts it tells. */
import type { QueueSettings } from '../../config/sections.ts';
import type { ClaimedJob } from '../../queue/types.ts';
import type { ClaimStrategy } from './strategy.ts';
import type { SupervisorEvents } from '../events.ts';
import type { Hooks } from '../hooks.ts';

export interface FetcherOptions {
  queue: string;
  settings: QueueSettings;
  /** How this queue claims (claim/plain.ts or claim/limited.ts). */
  strategy: ClaimStrategy;
  leaseMs: number;
  pollIntervalMs: number;
  capacity: () => number;
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
