/** Which strategy a queue claims with: limited when any cluster-wide limit is set, plain otherwise. */
import { isLimited, type QueueSettings } from '../../config/sections.ts';
import { DbClock } from '../db_clock.ts';
import { LimitedClaim } from './limited.ts';
import { PlainClaim, type ClaimContext } from './plain.ts';
import type { ClaimStrategy } from './strategy.ts';

/** The strategy of a queue with these settings; `clock` is the local clock (default Date.now). */
export function claimStrategyFor(settings: QueueSettings, context: ClaimContext, clock?: () => number): ClaimStrategy {
  return isLimited(settings) ? new LimitedClaim(context, settings, new DbClock(clock), clock) : new PlainClaim(context);
}
