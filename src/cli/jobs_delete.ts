/**
 * `jobvisor jobs delete ID... [--force] | --failed [--kind K] [--older-than 7d]`
 *
 * Deletes the jobs named, or dead letters (of a kind, finished longer ago than
 * a duration), in batches of 1,000. A running job is never deleted: its
 * supervisor still owns it; cancel it first. A workflow parent whose
 * dependents have not finished is kept unless --force (its blocked dependents
 * are then cancelled). Asks nothing; prints counts.
 */
import { parseDuration } from '../duration.ts';
import { InputError, messageOf } from '../errors.ts';
import { deleteJobs, statusOf, type JobFilter } from '../queue/admin/index.ts';
import { checkName } from '../names.ts';
import { jobIds, parse } from './args.ts';
import { report, withStore } from './job_store.ts';

export async function deleteCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(
    argv,
    {
      failed: { type: 'boolean' },
      kind: { type: 'string' },
      'older-than': { type: 'string' },
      force: { type: 'boolean' },
    },
    'jobs delete',
  );
  const kind = values.kind as string | undefined;
  const olderThan = values['older-than'] as string | undefined;
  const force = values.force === true;
  if (values.failed) {
    if (positionals.length > 0) throw new InputError('jobs delete: give job ids or --failed, not both');
    const filter: JobFilter = { status: 'failed' };
    if (kind !== undefined) {
      checkName('--kind', kind);
      filter.kind = kind;
    }
    if (olderThan !== undefined) filter.olderThan = duration(olderThan);
    const { changed } = await withStore((store) => deleteJobs(store, { filter }, { force }));
    process.stdout.write(`deleted ${changed} failed job(s)\n`);
    return 0;
  }
  if (kind !== undefined) throw new InputError('jobs delete: --kind goes with --failed');
  if (olderThan !== undefined) throw new InputError('jobs delete: --older-than goes with --failed');
  const ids = jobIds(positionals);
  return withStore(async (store) => {
    const result = await deleteJobs(store, { ids }, { force });
    return report(
      'deleted',
      ids,
      result.ids ?? [],
      await statusOf(store, ids),
      'a running job is never deleted (cancel it first), nor a parent whose dependents have not finished (--force)',
    );
  });
}

function duration(value: string): number {
  try {
    return parseDuration(value);
  } catch (err) {
    throw new InputError(`jobs delete: --older-than ${messageOf(err)}`);
  }
}
