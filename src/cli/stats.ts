/** `jobvisor stats [--json]`: counts by queue, kind and status; oldest pending age. */
import { pausedQueues } from '../queue/pause.ts';
import { countAllJobs } from '../queue/stats.ts';
import { parse } from './args.ts';
import { openContext } from './context.ts';
import { table } from './table.ts';

export async function statsCommand(argv: string[]): Promise<number> {
  const { values } = parse(argv, { json: { type: 'boolean' } }, 'stats');
  const ctx = await openContext({ logTo: 2, logLevel: 'warn' });
  try {
    const store = { db: ctx.pool, schema: ctx.settings.database.schema };
    const rows = await countAllJobs(store);
    const paused = [...(await pausedQueues(store))].sort();
    const oldest = rows.reduce<number | null>(
      (max, r) => (r.oldest_due_s === null ? max : Math.max(max ?? 0, r.oldest_due_s)),
      null,
    );
    if (values.json) {
      process.stdout.write(
        `${JSON.stringify({ counts: rows.map(({ queue, kind, status, count }) => ({ queue, kind, status, count })), oldestPendingSeconds: oldest, pausedQueues: paused })}\n`,
      );
      return 0;
    }
    if (rows.length === 0) process.stdout.write('no jobs\n');
    else
      process.stdout.write(
        table(
          ['queue', 'kind', 'status', 'count'],
          rows.map((r) => [r.queue, r.kind, r.status, String(r.count)]),
        ),
      );
    process.stdout.write(`oldest pending (due): ${oldest === null ? 'none' : `${oldest.toFixed(1)} s`}\n`);
    if (paused.length > 0) process.stdout.write(`paused queues: ${paused.join(', ')}\n`);
    return 0;
  } finally {
    await ctx.close();
  }
}
