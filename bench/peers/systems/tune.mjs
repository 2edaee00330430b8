// Applies --tune overrides to a system's tunable defaults. Only known keys are
// accepted, so a typo stops the run instead of silently measuring the default.
import { UsageError } from '../lib/args.mjs';

export function applyTune(system, defaults, tune) {
  const out = { ...defaults };
  for (const [key, value] of Object.entries(tune)) {
    if (!(key in defaults)) {
      throw new UsageError(
        `--tune key "${key}" is not tunable for ${system} (known: ${Object.keys(defaults).join(', ')})`,
      );
    }
    if (typeof value !== typeof defaults[key]) {
      throw new UsageError(`--tune key "${key}" must be a ${typeof defaults[key]}`);
    }
    out[key] = value;
  }
  return out;
}
