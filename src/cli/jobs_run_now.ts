/** `jobvisor jobs run-now ID...`: pending jobs not yet due become due now (exit 1 when some id could not be). */
import { runJobsNow, statusOf } from '../queue/admin/index.ts';
import { jobIds, parse } from './args.ts';
import { report, withStore } from './job_store.ts';

export async function runNowCommand(argv: string[]): Promise<number> {
  const { positionals } = parse(argv, {}, 'jobs run-now');
  const ids = jobIds(positionals);
  return withStore(async (store) => {
    const result = await runJobsNow(store, { ids });
    const changed = result.ids ?? [];
    return report('due now', ids, changed, await statusOf(store, ids), 'only pending or waiting jobs can be run now', {
      pending: 'already due',
    });
  });
}
