/** Which strategy a queue claims with: limited when any cluster-wide limit is set, plain otherwise. */
import { isLimited, type QueueSettings } from '../../config/sections.ts';
import type { ClaimedJob } from '../../queue/types.ts';
import { DbClock } from './db_clock.ts';
import { LimitedClaim } from './limited.ts';
import { PlainClaim, type ClaimContext } from './plain.ts';
import type { ClaimStrategy } from './strategy.ts';

/**
 * The strategy of a queue with these settings; `clock` is the local clock
 * (default Date.now), `ended` this supervisor's runs of the queue that have
 * ended, outcomes not yet written (the completer's).
 */
export function claimStrategyFor(
  settings: QueueSettings,
  context: ClaimContext,
  options: { clock?: () => number; ended?: () => readonly ClaimedJob[] } = {},
): ClaimStrategy {
  return isLimited(settings)
    ? new LimitedClaim(context, settings, new DbClock(options.clock), options.clock, options.ended)
    : new PlainClaim(context);
}
