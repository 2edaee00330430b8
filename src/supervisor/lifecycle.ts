/**
 * The order a supervisor starts its parts in, and stops them in.
 *
 * Start: presence, then which server is the primary and which queues are
 * paused (before anything can claim), the heartbeat's own connection (taken
 * while slots are free), the heartbeat and maintenance loops, the listener.
 *
 * Stop (the shutdown rule, DESIGN rule 4): nothing claims any more
 * (fetchers, listener, watches, maintenance loops); runs drain within the
 * grace (drain_runs.ts); progress and outcomes are flushed while the heartbeat
 * still renews their leases; then presence goes, and threads and connections
 * are released. Each step waits for the one
 * before, so no outcome is written after its lease stopped being renewed.
 */
import type pg from 'pg';
import type { Piscina } from 'piscina';
import type { HeldConnection } from '../db/held.ts';
import type { Logger } from '../log.ts';
import { within } from '../within.ts';
import type { Completer } from './completer.ts';
import type { Dispatcher } from './dispatch/dispatcher.ts';
import { drainRuns } from './leases/drain_runs.ts';
import { threadsLoaded } from './threads.ts';
import type { Fetcher } from './claim/fetcher.ts';
import type { Listener } from './claim/listener.ts';
import type { Loop } from './loops/loop.ts';
import type { OptionsReader } from './build/options_reader.ts';
import type { PauseWatch } from './loops/pause_watch.ts';
import type { Presence } from './leases/presence.ts';
import type { PrimaryWatch } from './loops/primary_watch.ts';
import type { ProgressWriter } from './progress_writer.ts';

/** How long aborted runs get to settle after the grace. */
export const ABORT_GRACE_MS = 1000;
const FLUSH_DEADLINE_MS = 5000;
const PRESENCE_REMOVE_MS = 2000;
/** How long the end waits for threads still loading their module (threads.ts says why). */
const THREAD_LOAD_WAIT_MS = 5000;

/** A supervisor's parts, as startUp and shutDown see them. */
export interface Parts {
  fetchers: Map<string, Fetcher>;
  listener: Listener;
  pauseWatch: PauseWatch;
  primary: PrimaryWatch;
  loops: Loop[];
  dispatcher: Dispatcher;
  progress: ProgressWriter;
  completer: Completer;
  heartbeat: Loop;
  presence: Presence;
  beatConnection: HeldConnection | undefined;
  threads: Piscina;
  optionsReader: OptionsReader;
  /** Ended only when the supervisor made it. */
  ownPool: pg.Pool | undefined;
  log: Logger;
}

/**
 * Starts every part in the order of the file comment (the presence's first
 * beat is the caller's); resolves once listening, or once the first attempt
 * to listen failed.
 */
export async function startUp(p: Parts): Promise<void> {
  // Which server is the primary, and whether claims must commit durably, before the first claim.
  await p.primary.start();
  // Paused queues are known before anything can wake a fetcher (the listener does at once).
  await p.pauseWatch.refresh().catch((err: unknown) => {
    p.log.warn({ err }, 'could not read which queues are paused; retrying every second');
  });
  p.pauseWatch.start();
  // Taken while connection slots are free: leases are renewed even when none is left later.
  await p.beatConnection?.take();
  p.heartbeat.start();
  for (const loop of p.loops) loop.start();
  await p.listener.start();
}

/**
 * Stops every part in the order of the file comment; resolves when all are
 * stopped. `firstBeat`: the presence's first write if the supervisor ran (its
 * row is then removed), else undefined.
 */
export async function shutDown(p: Parts, graceMs: number, firstBeat: Promise<void> | undefined): Promise<void> {
  await Promise.all([
    ...[...p.fetchers.values()].map((f) => f.stop()),
    p.listener.stop(),
    p.pauseWatch.stop(),
    p.primary.stop(),
    ...p.loops.map((l) => l.stop()),
  ]);
  await drainRuns(p.dispatcher, graceMs, ABORT_GRACE_MS);
  await p.progress.stop();
  await p.completer.flush(Date.now() + FLUSH_DEADLINE_MS);
  await p.heartbeat.stop();
  // Bounded (a database that is away must not hold the exit); before the held connection goes.
  if (firstBeat)
    await within(
      firstBeat.then(() => p.presence.remove()),
      PRESENCE_REMOVE_MS,
    );
  p.beatConnection?.close();
  await p.dispatcher.close();
  await threadsLoaded(p.threads, THREAD_LOAD_WAIT_MS);
  await p.threads.close({ force: true }).catch(() => {});
  await p.optionsReader.close();
  await p.ownPool?.end().catch(() => {});
}
