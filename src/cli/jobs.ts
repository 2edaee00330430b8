/**
 * `jobvisor jobs list [--status S] [--kind K] [--queue Q] [--limit N] [--json]` (S may be `scheduled`: pending, not yet due)
 * `jobvisor jobs retry ID... | --failed [--kind K] [--limit N]` (--failed: in batches of 1,000)
 * `jobvisor jobs cancel ID...`
 * (`jobs show`, `jobs run-now`, `jobs delete` and `jobs signal` have their own files.)
 * retry and cancel exit 1 when some id could not be changed, and say why.
 */
import { InputError } from '../errors.ts';
import {
  cancelJobs,
  JOB_STATUSES,
  listJobs,
  retryFailedInBatches,
  retryDependents,
  retryJobs,
  statusOf,
  timeText,
  type JobStatus,
} from '../queue/admin/index.ts';
import { checkName } from '../names.ts';
import { integer, jobIds, parse, parseFlags } from './args.ts';
import { report, withStore } from './job_store.ts';
import { deleteCommand } from './jobs_delete.ts';
import { runNowCommand } from './jobs_run_now.ts';
import { showCommand } from './jobs_show.ts';
import { signalCommand } from './jobs_signal.ts';
import { table } from './table.ts';

/** The table's statuses, and `scheduled`: pending and not yet due (as the dashboard's filter). */
const STATUSES: readonly string[] = [...JOB_STATUSES, 'scheduled'];

export async function jobsCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'list':
      return list(rest);
    case 'retry':
      return retry(rest);
    case 'cancel':
      return cancel(rest);
    case 'show':
      return showCommand(rest);
    case 'run-now':
      return runNowCommand(rest);
    case 'delete':
      return deleteCommand(rest);
    case 'signal':
      return signalCommand(rest);
    case undefined:
    default:
      throw new InputError(
        `jobs: unknown subcommand ${JSON.stringify(sub ?? '')} (use list, show, retry, cancel, run-now, delete or signal)`,
      );
  }
}

async function list(argv: string[]): Promise<number> {
  const values = parseFlags(
    argv,
    {
      status: { type: 'string' },
      kind: { type: 'string' },
      queue: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
    },
    'jobs list',
  );
  const status = values.status as string | undefined;
  if (status !== undefined && !STATUSES.includes(status))
    throw new InputError(`jobs list: --status must be one of ${STATUSES.join(', ')}, got ${JSON.stringify(status)}`);
  if (values.kind !== undefined) checkName('--kind', values.kind);
  if (values.queue !== undefined) checkName('--queue', values.queue);
  const limit = integer('--limit', values.limit as string | undefined, 1, 10_000) ?? 50;
  const { jobs: rows } = await withStore((store) =>
    listJobs(
      store,
      {
        ...(status === 'scheduled' ? { status: 'pending', due: false } : { status: status as JobStatus | undefined }),
        kind: values.kind as string | undefined,
        queue: values.queue as string | undefined,
      },
      { limit },
    ),
  );
  if (values.json) {
    for (const r of rows) process.stdout.write(`${JSON.stringify(r)}\n`);
    return 0;
  }
  if (rows.length === 0) {
    process.stdout.write('no jobs\n');
    return 0;
  }
  process.stdout.write(
    table(
      ['id', 'queue', 'kind', 'status', 'attempts', 'run_at', 'last_error'],
      rows.map((r) => [
        r.id,
        r.queue,
        r.kind,
        r.status,
        `${r.attempts}/${r.max_attempts}`,
        timeText(r.run_at),
        (r.last_error ?? '').split('\n')[0]?.slice(0, 80) ?? '',
      ]),
    ),
  );
  return 0;
}

async function retry(argv: string[]): Promise<number> {
  const { values, positionals } = parse(
    argv,
    {
      failed: { type: 'boolean' },
      kind: { type: 'string' },
      limit: { type: 'string' },
      'with-dependents': { type: 'boolean' },
    },
    'jobs retry',
  );
  const withDependents = values['with-dependents'] === true;
  if (values.failed) {
    if (positionals.length > 0) throw new InputError('jobs retry: give job ids or --failed, not both');
    if (withDependents) throw new InputError('jobs retry: --with-dependents goes with job ids');
    if (values.kind !== undefined) checkName('--kind', values.kind);
    const limit = integer('--limit', values.limit as string | undefined, 1, Number.MAX_SAFE_INTEGER);
    const count = await withStore((store) =>
      retryFailedInBatches(store, { kind: values.kind as string | undefined, limit }),
    );
    process.stdout.write(`retried ${count} failed job(s)\n`);
    return 0;
  }
  if (values.kind !== undefined) throw new InputError('jobs retry: --kind goes with --failed');
  if (values.limit !== undefined) throw new InputError('jobs retry: --limit goes with --failed');
  const ids = jobIds(positionals);
  return withStore(async (store) => {
    const retried = (await retryJobs(store, { ids })).ids ?? [];
    if (withDependents) {
      const back = await retryDependents(store, retried);
      if (back.length > 0) process.stdout.write(`brought back ${back.length} dependent job(s): ${back.join(' ')}\n`);
    }
    return report('retried', ids, retried, await statusOf(store, ids), 'only failed or cancelled jobs can be retried');
  });
}

async function cancel(argv: string[]): Promise<number> {
  const { positionals } = parse(argv, {}, 'jobs cancel');
  const ids = jobIds(positionals);
  return withStore(async (store) =>
    report(
      'cancelled',
      ids,
      (await cancelJobs(store, { ids })).ids ?? [],
      await statusOf(store, ids),
      'only pending, blocked, waiting or running jobs can be cancelled',
    ),
  );
}
