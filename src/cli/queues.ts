/**
 * `jobvisor queues list [--json]`, `jobvisor queues pause Q`, `jobvisor queues resume Q`.
 * Pause and resume are stored in the database: they survive restarts, every
 * supervisor obeys them within a second, and running jobs finish.
 */
import { InputError } from '../errors.ts';
import { listQueues, pauseQueue, resumeQueue } from '../queue/pause.ts';
import type { QueueApiOptions } from '../queue/pause.ts';
import type { Db } from '../db/pool.ts';
import { checkQueue } from '../names.ts';
import { parse, parseFlags } from './args.ts';
import { withContext } from './context.ts';
import { table } from './table.ts';

export async function queuesCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'list':
      return list(rest);
    case 'pause':
    case 'resume':
      return setPaused(sub, rest);
    case undefined:
    default:
      throw new InputError(`queues: unknown subcommand ${JSON.stringify(sub ?? '')} (use list, pause or resume)`);
  }
}

function withDb<T>(fn: (db: Db, options: QueueApiOptions) => Promise<T>): Promise<T> {
  return withContext({ logTo: 2, logLevel: 'warn' }, (ctx) => fn(ctx.pool, { schema: ctx.settings.database.schema }));
}

async function list(argv: string[]): Promise<number> {
  const values = parseFlags(argv, { json: { type: 'boolean' } }, 'queues list');
  const queues = await withDb(listQueues);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(queues)}\n`);
    return 0;
  }
  if (queues.length === 0) process.stdout.write('no queues\n');
  else
    process.stdout.write(
      table(
        ['queue', 'state', 'pending', 'running', 'blocked'],
        queues.map((q) => [
          q.queue,
          q.paused ? 'paused' : 'active',
          String(q.pending),
          String(q.running),
          String(q.blocked),
        ]),
      ),
    );
  return 0;
}

async function setPaused(sub: 'pause' | 'resume', argv: string[]): Promise<number> {
  const { positionals } = parse(argv, {}, `queues ${sub}`);
  const [queue, ...extra] = positionals;
  if (!queue) throw new InputError(`queues ${sub}: missing the queue name (usage: jobvisor queues ${sub} Q)`);
  if (extra.length > 0) throw new InputError(`queues ${sub}: unexpected argument ${JSON.stringify(extra[0])}`);
  checkQueue('queue', queue);
  await withDb((db, options) => (sub === 'pause' ? pauseQueue : resumeQueue)(db, queue, options));
  process.stdout.write(`${sub === 'pause' ? 'paused' : 'resumed'} ${queue}\n`);
  return 0;
}
