/**
 * Payload redaction for display: values under a key named in `dashboard.redact`
 * (compared case-insensitively, at any depth, inside arrays too) become
 * "[redacted]". Returns a copy; the stored payload is untouched.
 */

export const REDACTED = '[redacted]';

export function redactPayload(value: unknown, keys: readonly string[]): unknown {
  const names = new Set(keys.map((k) => k.toLowerCase()));
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v !== 'object' || v === null) return v;
    const out: Record<string, unknown> = {};
    for (const [k, child] of Object.entries(v)) {
      // defineProperty: a payload key "__proto__" is data, not the copy's prototype.
      const value = names.has(k.toLowerCase()) ? REDACTED : walk(child);
      Object.defineProperty(out, k, { value, enumerable: true, writable: true, configurable: true });
    }
    return out;
  };
  return walk(value);
}
