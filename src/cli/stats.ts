/** `jobvisor stats [--all] [--json]`: counts by queue, kind and status; oldest pending age; paused queues; live supervisors. */
import { stats, timeText } from '../queue/admin/index.ts';
import { pausedQueues } from '../queue/pause.ts';
import type { Store } from '../queue/sql.ts';
import { parseFlags } from './args.ts';
import { withContext } from './context.ts';
import { table } from './table.ts';

/** What `jobvisor stats` reads (the bench's history scenario times it too): counts, supervisors, paused queues. */
export async function readStats(store: Store, options: { all?: boolean } = {}) {
  const s = await stats(store, null, options);
  return { ...s, pausedQueues: [...(await pausedQueues(store))].sort() };
}

export async function statsCommand(argv: string[]): Promise<number> {
  const values = parseFlags(argv, { json: { type: 'boolean' }, all: { type: 'boolean' } }, 'stats');
  const s = await withContext({ logTo: 2, logLevel: 'warn' }, (ctx) =>
    readStats({ db: ctx.pool, schema: ctx.settings.database.schema }, { all: values.all === true }),
  );
  const paused = s.pausedQueues;
  if (values.json) {
    process.stdout.write(`${JSON.stringify(s)}\n`);
    return 0;
  }
  if (s.counts.length === 0) process.stdout.write('no jobs\n');
  else
    process.stdout.write(
      table(
        ['queue', 'kind', 'status', 'count'],
        s.counts.map((r) => [r.queue, r.kind, r.status, String(r.count)]),
      ),
    );
  if (s.finishedWithin !== 'all')
    process.stdout.write('done and cancelled: finished in the last hour (--all counts every row kept)\n');
  const oldest = s.oldestPendingSeconds;
  process.stdout.write(`oldest pending (due): ${oldest === null ? 'none' : `${oldest.toFixed(1)} s`}\n`);
  if (paused.length > 0) process.stdout.write(`paused queues: ${paused.join(', ')}\n`);
  if (s.supervisors.length === 0) process.stdout.write('supervisors: none alive\n');
  else
    process.stdout.write(
      `\n${table(
        ['supervisor', 'host', 'pid', 'version', 'queues', 'in flight', 'last heartbeat'],
        s.supervisors.map((v) => [
          v.id,
          v.host,
          String(v.pid),
          v.version,
          Object.entries(v.queues)
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([q, c]) => `${q}:${c}`)
            .join(' '),
          String(v.in_flight),
          timeText(v.heartbeat_at),
        ]),
      )}`,
    );
  return 0;
}
