/**
 * The job filter as it travels in URLs and forms: the list page's query string
 * and the bulk actions' form fields use the same names, so a shared link, the
 * list and "retry everything matching" all mean the same rows.
 *
 *   status  pending | scheduled | running | done | failed | cancelled | blocked | waiting
 *           (scheduled: pending and not yet due; pending: due or not)
 *   queue   kind    exact names
 *   id      one or more job ids (comma or space separated)
 *   key     unique key (exact)
 *   q       text in the payload as shown (never inside a redacted value)
 *   error   text in the error
 *   errorPrefix  first line of the error (a dead-letter group)
 */
import type { JobFilter } from '../queue/admin/index.ts';

export const FILTER_FIELDS = ['status', 'queue', 'kind', 'id', 'key', 'q', 'error', 'errorPrefix'] as const;
export type FilterField = (typeof FILTER_FIELDS)[number];
export type FilterParams = Partial<Record<FilterField, string>>;

export const STATUSES = [
  'pending',
  'scheduled',
  'running',
  'done',
  'failed',
  'cancelled',
  'blocked',
  'waiting',
] as const;

export class FilterError extends Error {}

/** The non-empty filter fields of a query string or form, trimmed. */
export function readParams(get: (name: string) => string | undefined): FilterParams {
  const out: FilterParams = {};
  for (const f of FILTER_FIELDS) {
    const v = get(f)?.trim();
    if (v) out[f] = v;
  }
  return out;
}

/**
 * The admin API's filter for these parameters. `redact` (dashboard.redact) keeps
 * `q` from matching inside the values the pages show as [redacted].
 * @throws FilterError for an unknown status or a malformed id.
 */
export function toFilter(p: FilterParams, redact: readonly string[] = []): JobFilter {
  const filter: JobFilter = {};
  if (p.status) {
    if (!(STATUSES as readonly string[]).includes(p.status))
      throw new FilterError(`status must be one of ${STATUSES.join(', ')}`);
    if (p.status === 'scheduled') {
      filter.status = 'pending';
      filter.due = false;
    } else filter.status = p.status as Exclude<(typeof STATUSES)[number], 'scheduled'>;
  }
  if (p.queue) filter.queue = p.queue;
  if (p.kind) filter.kind = p.kind;
  if (p.id) {
    const ids = p.id.split(/[\s,]+/).filter(Boolean);
    for (const id of ids)
      if (!/^\d{1,18}$/.test(id) || BigInt(id) <= 0n) throw new FilterError(`job id must be a positive integer`);
    filter.ids = ids.map((id) => BigInt(id).toString());
  }
  if (p.key) filter.uniqueKey = p.key;
  if (p.q) {
    filter.payloadText = p.q;
    if (redact.length > 0) filter.payloadRedact = redact;
  }
  if (p.error) filter.errorText = p.error;
  if (p.errorPrefix) filter.errorPrefix = p.errorPrefix;
  return filter;
}

/**
 * A query string's or form's filter: its fields, and the admin API's filter
 * for them, or why they make none (shown as a 400 page).
 */
export function readFilter(
  get: (name: string) => string | undefined,
  redact: readonly string[] = [],
): { params: FilterParams; filter: JobFilter } | { error: string } {
  const params = readParams(get);
  try {
    return { params, filter: toFilter(params, redact) };
  } catch (err) {
    if (err instanceof FilterError) return { error: err.message };
    throw err;
  }
}

/** The query string of these parameters (without "?"), for links. */
export function toQuery(p: FilterParams, extra: Record<string, string> = {}): string {
  const q = new URLSearchParams();
  for (const f of FILTER_FIELDS) if (p[f]) q.set(f, p[f]);
  for (const [k, v] of Object.entries(extra)) q.set(k, v);
  return q.toString();
}

export function isEmpty(p: FilterParams): boolean {
  return FILTER_FIELDS.every((f) => !p[f]);
}
