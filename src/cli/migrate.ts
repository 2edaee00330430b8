/**
 * `jobvisor migrate`: applies pending migrations under an advisory lock.
 * SIGTERM/SIGINT cancel the statement in progress (freeing its place in the
 * lock queue at once), roll back, and exit 1.
 */
import { migrate } from '../db/migrate.ts';
import { parseFlags } from './args.ts';
import { openContext } from './context.ts';

export async function migrateCommand(argv: string[]): Promise<number> {
  parseFlags(argv, {}, 'migrate');
  const ctx = await openContext({ logTo: 2 });
  const abort = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    ctx.log.warn({ signal }, 'migrate: stopping, cancelling the statement in progress');
    abort.abort();
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  try {
    const applied = await migrate(ctx.directPool(), {
      schema: ctx.settings.database.schema,
      log: ctx.log,
      signal: abort.signal,
    });
    process.stdout.write(
      applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}\n` : 'schema is up to date\n',
    );
    return 0;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await ctx.close();
  }
}
