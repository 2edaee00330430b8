/**
 * `jobvisor jobs signal ID NAME [JSON] [--ignore-finished]`: sends job ID the
 * signal NAME its ctx.waitFor(NAME) waits for, with JSON as its payload (none
 * when left out), through signal() (queue/signal.ts). Prints what became of
 * it (woke, kept, duplicate, late, ignored). A finished, cancelled or missing
 * job is an error (exit 1) unless --ignore-finished; bad JSON sends nothing.
 */
import { InputError, messageOf } from '../errors.ts';
import { signal } from '../queue/signal.ts';
import { jobIds, parse } from './args.ts';
import { withStore } from './job_store.ts';

export async function signalCommand(argv: string[]): Promise<number> {
  const { positionals, values } = parse(argv, { 'ignore-finished': { type: 'boolean' } }, 'jobs signal');
  const [idText, name, json, ...extra] = positionals;
  if (idText === undefined || name === undefined)
    throw new InputError('jobs signal: give a job id and a signal name: jobvisor jobs signal ID NAME [JSON]');
  if (extra.length > 0)
    throw new InputError(`jobs signal: unexpected argument ${JSON.stringify(extra[0])} (quote the JSON payload)`);
  const [id] = jobIds([idText]);
  let payload: unknown;
  if (json !== undefined) {
    try {
      payload = JSON.parse(json);
    } catch (err) {
      throw new InputError(`jobs signal: the payload is not JSON: ${messageOf(err)}`);
    }
  }
  return withStore(async (store) => {
    const outcome = await signal(store.db, id as string, name, payload, {
      schema: store.schema,
      ignoreFinished: values['ignore-finished'] === true,
    });
    process.stdout.write(`job ${id}: signal "${name}" ${OUTCOME_TEXT[outcome]}\n`);
    return 0;
  });
}

const OUTCOME_TEXT = {
  woke: 'sent; the job was waiting for it and runs now',
  kept: 'sent; kept until the job waits for it',
  duplicate: 'ignored: a signal of that name was sent to the job before (the first one stands)',
  late: "ignored: the job's wait for it has already timed out",
  ignored: 'ignored: the job is finished, cancelled or missing',
} as const;
