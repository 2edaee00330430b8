/**
 * The one way tests wait for a condition: poll, with a deadline, never a blind
 * sleep. On timeout the error names what was awaited and the last value read.
 */

/** Polls `read` every `everyMs` until `check` passes; throws with the last value after `timeoutMs`. */
export async function until<T>(
  what: string,
  read: () => T | Promise<T>,
  check: (value: T) => boolean,
  timeoutMs = 15_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!check(value)) {
    if (Date.now() > deadline)
      throw new Error(`${what}: not reached within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, everyMs));
    value = await read();
  }
  return value;
}

/** `until` for a probe that answers undefined (or throws) while the condition does not hold yet. */
export async function untilDefined<T>(
  what: string,
  timeoutMs: number,
  probe: () => T | undefined | Promise<T | undefined>,
): Promise<T> {
  const value = await until(
    what,
    async () => {
      try {
        return await probe();
      } catch {
        return undefined;
      }
    },
    (v) => v !== undefined,
    timeoutMs,
  );
  return value as T;
}

/**
 * Waits until `ms` have passed on the clock, checking every `everyMs`: pacing
 * (a producer's next batch) or letting checks that must not fire run a few times.
 */
export async function clockPasses(what: string, ms: number, everyMs: number): Promise<void> {
  const at = performance.now() + ms;
  await until(
    what,
    () => performance.now(),
    (t) => t >= at,
    ms + 1_000,
    everyMs,
  );
}
