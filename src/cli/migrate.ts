/** `jobvisor migrate`: applies pending migrations under an advisory lock. */
import { migrate } from '../db/migrate.ts';
import { parse } from './args.ts';
import { openContext } from './context.ts';

export async function migrateCommand(argv: string[]): Promise<number> {
  parse(argv, {}, 'migrate');
  const ctx = await openContext({ logTo: 2 });
  try {
    const applied = await migrate(ctx.pool, { schema: ctx.settings.database.schema, log: ctx.log });
    process.stdout.write(
      applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}\n` : 'schema is up to date\n',
    );
    return 0;
  } finally {
    await ctx.close();
  }
}
