/**
 * Redaction for display: values under a key named in `dashboard.redact`
 * (compared case-insensitively, at any depth, inside arrays too) become
 * "[redacted]", in the payload, the result and the progress value; and the
 * job's errors never show a value the job holds under such a key (a task's
 * error may quote its input), nor a URL's password. A step's folded result
 * (and a wait's signal payload) is redacted like a payload, and never shows a
 * value the job holds under such a key either. Returns copies; the stored job
 * is untouched.
 */
import type { JobDetail, StepRow } from '../queue/admin/index.ts';
import { REDACTED, redactText, secretValues } from '../secrets.ts';
import { redactFoldedJson } from './redact_folded.ts';

export { REDACTED };

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

/** A listed job's last error, as the list shows it: without what the job holds under a redacted key. */
export function redactLastError<T extends { last_error: string | null; payload: unknown; result: unknown }>(
  job: T,
  keys: readonly string[],
): T {
  if (job.last_error === null) return job;
  const names = new Set(keys.map((k) => k.toLowerCase()));
  const secrets = secretValues([job.payload, job.result], (k) => names.has(k.toLowerCase()));
  return { ...job, last_error: redactText(job.last_error, secrets) };
}

/** The job as its page shows it: payload, result, progress and every error text redacted. */
export function redactJob(job: JobDetail, keys: readonly string[]): JobDetail {
  const names = new Set(keys.map((k) => k.toLowerCase()));
  const isSecret = (k: string) => names.has(k.toLowerCase());
  const secrets = secretValues([job.payload, job.result, job.progress], isSecret);
  const text = <T extends string | null | undefined>(t: T): T =>
    (typeof t === 'string' ? redactText(t, secrets) : t) as T;
  return {
    ...job,
    payload: redactPayload(job.payload, keys),
    result: redactPayload(job.result, keys),
    progress: redactPayload(job.progress, keys),
    last_error: text(job.last_error),
    errors: job.errors.map((e) => ({ ...e, error: text(e.error), stack: text(e.stack) })),
    timeline: job.timeline.map((e) => ({ ...e, error: text(e.error), stack: text(e.stack) })),
  };
}

/**
 * A job's steps as its page shows them: each folded result with the values of
 * redacted keys hidden (redact_folded.ts: the text may be cut), and any value
 * the job's payload, result or progress holds under such a key. `job` is the
 * job as stored, not yet redacted.
 */
export function redactSteps(steps: readonly StepRow[], job: JobDetail, keys: readonly string[]): StepRow[] {
  const names = new Set(keys.map((k) => k.toLowerCase()));
  const secrets = secretValues([job.payload, job.result, job.progress], (k) => names.has(k.toLowerCase()));
  return steps.map((s) =>
    s.result === null ? s : { ...s, result: redactText(redactFoldedJson(s.result, keys), secrets) },
  );
}
