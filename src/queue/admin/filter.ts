/**
 * A JobFilter as SQL: one WHERE clause with fixed parameters $1–$9, shared by
 * every statement that selects jobs by filter (lists, counts, bulk actions),
 * so the CLI and the dashboard cannot drift apart.
 *
 * Values are always parameters, never text in the statement. An absent field
 * is a NULL parameter; statements using this clause are sent unnamed
 * (`planned`), so each is planned with its actual values and `$n IS NULL OR …`
 * folds away: the plan sees only the conditions that were given, and a status
 * filter can use its partial index.
 *
 * With `payloadRedact`, the payload text is searched as the dashboard shows it
 * (migrations/013_redacted_payload.sql), so a search never matches inside a
 * redacted value. The plain `payload::text ILIKE` stays in front: the
 * projection is built only for rows whose payload matches at all, so a rare
 * search costs what it did, and a common one at most the list's limit or the
 * count's cap of projections.
 */
import { InputError } from '../../errors.ts';
import { JOB_STATUSES, type JobFilter, type JobStatus } from './types.ts';

/** Length of the first error line that names a dead-letter group. */
export const ERROR_PREFIX_CHARS = 200;

/** The first line of last_error, as dead-letter groups and `errorPrefix` compare it. */
export const ERROR_PREFIX_SQL = `left(split_part(coalesce(last_error, ''), E'\\n', 1), ${ERROR_PREFIX_CHARS})`;

export const FILTER_WHERE = `
      ($1::bigint[] IS NULL OR id = ANY($1::bigint[]))
  AND ($2::text[] IS NULL OR status = ANY($2::text[]))
  AND ($3::text IS NULL OR queue = $3)
  AND ($4::text IS NULL OR kind = $4)
  AND ($5::text IS NULL OR unique_key = $5)
  AND ($6::text IS NULL OR (payload::text ILIKE $6
       AND ($10::text[] IS NULL OR jobvisor.redacted_payload(payload, $10::text[])::text ILIKE $6)))
  AND ($7::text IS NULL OR last_error ILIKE $7)
  AND ($8::float8 IS NULL OR coalesce(finished_at, created_at) < now() - $8::float8 * interval '1 millisecond')
  AND ($9::text IS NULL OR ${ERROR_PREFIX_SQL} = $9)
  AND ($11::bool IS NULL OR (status = 'pending' AND (run_at <= now()) = $11::bool))`;

/** Number of parameters FILTER_WHERE uses; a statement's own start at $12. */
export const FILTER_PARAMS = 11;

/**
 * The parameters of FILTER_WHERE for `filter`. `statuses`, when given, limits
 * the statuses further (an action's eligible statuses): an empty intersection
 * matches nothing.
 * @throws InputError for an id that is not a positive integer or an unknown status.
 */
export function filterParams(filter: JobFilter, statuses?: readonly JobStatus[]): unknown[] {
  if (filter.status !== undefined && !JOB_STATUSES.includes(filter.status))
    throw new InputError(`status must be one of ${JOB_STATUSES.join(', ')}, got ${JSON.stringify(filter.status)}`);
  if (filter.olderThan !== undefined && !(Number.isFinite(filter.olderThan) && filter.olderThan >= 0))
    throw new InputError(`olderThan must be a number of milliseconds >= 0, got ${String(filter.olderThan)}`);
  let allowed: string[] | null = filter.status === undefined ? null : [filter.status];
  if (statuses) allowed = allowed === null ? [...statuses] : allowed.filter((s) => statuses.includes(s as JobStatus));
  return [
    filter.ids === undefined ? null : checkIds(filter.ids),
    allowed,
    filter.queue ?? null,
    filter.kind ?? null,
    filter.uniqueKey ?? null,
    filter.payloadText === undefined || filter.payloadText === '' ? null : containsPattern(filter.payloadText),
    filter.errorText === undefined || filter.errorText === '' ? null : containsPattern(filter.errorText),
    filter.olderThan ?? null,
    filter.errorPrefix ?? null,
    filter.payloadRedact === undefined || filter.payloadRedact.length === 0
      ? null
      : filter.payloadRedact.map((k) => k.toLowerCase()),
    filter.due ?? null,
  ];
}

/** An ILIKE pattern matching `text` anywhere, with `%`, `_` and `\` in it taken literally. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, '\\$&')}%`;
}

/** Job ids as canonical digit strings. @throws InputError for anything but a positive bigint. */
export function checkIds(ids: readonly string[]): string[] {
  return ids.map((v) => {
    const s = String(v).trim();
    if (!/^\d{1,19}$/.test(s) || BigInt(s) <= 0n || BigInt(s) > 9223372036854775807n)
      throw new InputError(`job id must be a positive integer, got ${JSON.stringify(v)}`);
    return BigInt(s).toString();
  });
}

/** A keyset cursor (an id) or null. @throws InputError when it is not an id. */
export function cursorParam(after: string | null | undefined): string | null {
  if (after === undefined || after === null || after === '') return null;
  return checkIds([after])[0] as string;
}
