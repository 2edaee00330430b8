/** A bounded wait, for shutdown paths where something away must not hold the exit. */

/**
 * Waits for `promise`, but no longer than `ms` (undefined: as long as it takes).
 * `unref`: the timer keeps no process alive (a wait at exit).
 * @returns true when `promise` fulfilled in time, false when the time ran out first
 * @throws what `promise` rejects with, when it rejects in time
 */
export async function within(
  promise: Promise<unknown>,
  ms: number | undefined,
  options: { unref?: boolean } = {},
): Promise<boolean> {
  if (ms === undefined) {
    await promise;
    return true;
  }
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    if (options.unref === true) timer.unref();
  });
  try {
    return await Promise.race([promise.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
