/**
 * A pool ended by its owner while jobvisor still uses it: an app that gave
 * run() its own pg.Pool and ends it first (a shutdown hook in the wrong order,
 * a pool shared with another module that ends it). From `pool.end()` on,
 * pg-pool refuses every new connection; its end() resolves only when every
 * client lent out has come back, the heartbeat's held one included.
 *
 * pg-pool says nothing when end() is called, only `pool.ending`: the watch
 * reads it every `everyMs` (a property read; nothing reaches the database).
 */
import type pg from 'pg';

/** How often a watch reads `pool.ending`. */
export const POOL_WATCH_MS = 100;

/** The error pg-pool gives every use of a pool after end() was called. */
export function isPoolEnded(err: unknown): boolean {
  const message = (err as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' && /Cannot use a pool after calling end on the pool/.test(message);
}

/**
 * Calls `onEnded` once, when `pool.end()` has been called.
 * @returns a function that stops the watch (idempotent).
 */
export function watchPoolEnd(pool: pg.Pool, onEnded: () => void, everyMs = POOL_WATCH_MS): () => void {
  const timer = setInterval(() => {
    if (!pool.ending) return;
    clearInterval(timer);
    onEnded();
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
