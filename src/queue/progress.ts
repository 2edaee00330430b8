/**
 * Progress reports: the last value each running task gave ctx.progress(),
 * written in one statement per batch and fenced like every write after a claim
 * (claim token, owner, running): a run that lost its claim changes nothing.
 * Values are looked up by fence key (two claims of one job are two keys).
 * Throttling (one write per second per job) is the worker thread's; see
 * worker/progress.ts.
 */
import { intArray, planned, run, type Store } from './sql.ts';

const WRITE_PROGRESS = planned(
  'write_progress',
  `
UPDATE jobvisor.jobs AS j
   SET progress = ($3::jsonb[])[array_position($2::bigint[], j.lease_token)]
 WHERE j.id = ANY($1::bigint[]) AND j.status = 'running' AND j.locked_by = $4
   AND j.lease_token = ANY($2::bigint[])
RETURNING j.id`,
);

/**
 * Stores values[i] (JSON text) as the progress of ids[i], claimed with tokens[i].
 * @returns the ids written; the others were fenced off.
 */
export async function writeProgress(
  store: Store,
  owner: string,
  ids: string[],
  tokens: string[],
  values: string[],
): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await run<{ id: string }>(store, WRITE_PROGRESS, [intArray(ids), intArray(tokens), values, owner]);
  return rows.map((r) => r.id);
}
