/** Durations in config and on the command line: "250ms", "30s", "5m", "3d" (or a number of ms). */
import ms from 'ms';

const MAX_MS = 10 * 365 * 24 * 3600 * 1000;

/**
 * Parses a duration into milliseconds.
 * @throws RangeError naming the value when it is not a duration from 0 to 10 years.
 */
export function parseDuration(value: string | number): number {
  const parsed =
    typeof value === 'number' ? value : /^\s*\d/.test(value) ? ms(value.trim() as ms.StringValue) : Number.NaN;
  if (typeof parsed !== 'number' || !Number.isFinite(parsed) || parsed < 0 || parsed > MAX_MS) {
    throw new RangeError(
      `${JSON.stringify(String(value))} is not a duration (use e.g. "500ms", "30s", "5m", "2h", "3d")`,
    );
  }
  return Math.round(parsed);
}
