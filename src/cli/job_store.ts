/** What the `jobs …` subcommands share: a store for one command, and the per-id report. */
import type { Store } from '../queue/sql.ts';
import { withContext } from './context.ts';

/** Runs `fn` with the configured database, closed afterwards (an unmigrated one: NotMigratedError). */
export function withStore<T>(fn: (store: Store) => Promise<T>): Promise<T> {
  return withContext({ logTo: 2, logLevel: 'warn' }, (ctx) =>
    fn({ db: ctx.pool, schema: ctx.settings.database.schema }),
  );
}

/**
 * Prints the ids changed (`verb: 1 2 3`) and, on stderr, why each other id was
 * not: not found, or its status and the rule. `fine` names statuses that are
 * not a failure (e.g. run-now of a job already due), with what to say.
 * @returns 0 when every id was changed (or fine), else 1.
 */
export function report(
  verb: string,
  asked: string[],
  changed: string[],
  statuses: Map<string, string>,
  rule: string,
  fine: Record<string, string> = {},
): number {
  const done = new Set(changed);
  if (changed.length > 0) process.stdout.write(`${verb}: ${changed.join(' ')}\n`);
  let failures = 0;
  for (const id of asked) {
    if (done.has(id)) continue;
    const status = statuses.get(id);
    const note = status === undefined ? undefined : fine[status];
    if (note !== undefined) {
      process.stdout.write(`job ${id}: ${note}\n`);
      continue;
    }
    failures++;
    process.stderr.write(status === undefined ? `job ${id}: not found\n` : `job ${id}: is ${status}; ${rule}\n`);
  }
  return failures === 0 ? 0 : 1;
}
