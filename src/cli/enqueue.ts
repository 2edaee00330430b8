/**
 * `jobvisor enqueue KIND [JSON] [--queue Q] [--priority N] [--run-at ISO | --delay 10s]
 *                   [--max-attempts N] [--unique-key K] [--concurrency-key K]
 *                   [--depends-on ID,ID [--on-parent-failure cancel|run]] [--json]`
 * Prints the new job's id. A duplicate unique key is reported as skipped (exit 0).
 * Without --queue the job goes to the task's `options.queue` (see task_options.ts):
 * the command reads the task module (in tasks.dir, else the built-ins) to learn it,
 * as the library's enqueue() never does.
 * Every argument is checked before connecting: bad input writes nothing.
 */
import { InputError, messageOf } from '../errors.ts';
import { loadConfig, type Settings } from '../config/index.ts';
import { enqueue, validateJob, type DynamicKind, type EnqueueOptions } from '../queue/enqueue.ts';
import { taskSources } from '../supervisor/build/task_sources.ts';
import { findTaskFile } from '../worker/loader.ts';
import { readTaskOptions } from '../worker/task_options.ts';
import { integer, parse } from './args.ts';
import { openContext } from './context.ts';

export async function enqueueCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(
    argv,
    {
      queue: { type: 'string' },
      priority: { type: 'string' },
      'run-at': { type: 'string' },
      delay: { type: 'string' },
      'max-attempts': { type: 'string' },
      'unique-key': { type: 'string' },
      'concurrency-key': { type: 'string' },
      'depends-on': { type: 'string' },
      'on-parent-failure': { type: 'string' },
      json: { type: 'boolean' },
    },
    'enqueue',
  );
  const [kind, json, ...extra] = positionals;
  if (!kind) throw new InputError('enqueue: missing KIND (usage: jobvisor enqueue KIND [JSON] [options])');
  if (extra.length > 0)
    throw new InputError(
      `enqueue: unexpected argument ${JSON.stringify(extra[0])} (quote the JSON payload as one argument)`,
    );
  let payload: unknown = {};
  if (json !== undefined) {
    try {
      payload = JSON.parse(json);
    } catch (err) {
      throw new InputError(`enqueue: payload is not valid JSON: ${messageOf(err)}`);
    }
  }
  const options: EnqueueOptions = {
    queue: values.queue as string | undefined,
    priority: integer('--priority', values.priority as string | undefined, -1_000_000, 1_000_000),
    runAt: values['run-at'] as string | undefined,
    delay: values.delay as string | undefined,
    maxAttempts: integer('--max-attempts', values['max-attempts'] as string | undefined, 1, 1000),
    uniqueKey: values['unique-key'] as string | undefined,
    concurrencyKey: values['concurrency-key'] as string | undefined,
    ...dependencies(values['depends-on'] as string | undefined, values['on-parent-failure'] as string | undefined),
  };
  if (options.runAt !== undefined && options.delay !== undefined)
    throw new InputError('enqueue: give --run-at or --delay, not both');
  if (
    typeof options.runAt === 'string' &&
    !/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(options.runAt)
  ) {
    throw new InputError(
      `enqueue: --run-at ${JSON.stringify(options.runAt)} is not an ISO 8601 date-time (e.g. 2026-12-01T09:00:00Z)`,
    );
  }
  // The whole job is validated here, before any connection is opened.
  const settings = loadConfig();
  if (options.queue === undefined) options.queue = await taskQueue(kind, settings);
  validateJob(kind, payload, { ...options, maxPayloadBytes: settings.jobs.maxPayloadBytes });
  const ctx = await openContext({ logTo: 2, logLevel: 'warn', settings, oneShot: true });
  try {
    // A kind from the command line is a DynamicKind: checked at run time only.
    const result = await enqueue(ctx.pool, kind as DynamicKind, payload, {
      ...options,
      maxAttempts: options.maxAttempts ?? ctx.settings.jobs.maxAttempts,
      schema: ctx.settings.database.schema,
      maxPayloadBytes: ctx.settings.jobs.maxPayloadBytes,
    });
    warnUnknownKind(kind, ctx.settings);
    if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else {
      process.stdout.write(`${result.id}\n`);
      if (result.duplicate)
        process.stderr.write(
          `skipped: a ${kind} job with unique key ${JSON.stringify(options.uniqueKey)} already exists (id ${result.id})\n`,
        );
    }
    return 0;
  } finally {
    await ctx.close();
  }
}

/**
 * A kind that neither tasks.dir nor the built-in tasks enabled have: allowed
 * (during a rolling deploy the task may come after its first jobs, and a
 * supervisor started with run() may map it), but often a typo, so said on stderr.
 */
function warnUnknownKind(kind: string, settings: Settings): void {
  const sources = taskSources(settings, {});
  if (findTaskFile(sources, kind) !== undefined) return;
  const where = [...sources.dirs, ...(settings.tasks.builtins.length ? ['tasks.builtins'] : [])];
  process.stderr.write(
    `warning: no task for kind "${kind}" in ${where.join(', ') || 'tasks.dir (unset)'}: enqueued anyway (a supervisor with that task will run it)\n`,
  );
}

/**
 * The queue named by the task's `options.queue`, if the configured supervisors
 * serve it (a job in a queue nobody serves would wait forever); else undefined.
 */
async function taskQueue(kind: string, settings: Settings): Promise<string | undefined> {
  const options = await readTaskOptions(taskSources(settings, {}), kind, (problem) =>
    process.stderr.write(`warning: ${problem}\n`),
  );
  if (options?.queue === undefined || settings.queues[options.queue]) return options?.queue;
  process.stderr.write(
    `warning: task ${kind} asks for queue "${options.queue}", which config queues does not list; using "default"\n`,
  );
  return undefined;
}

/** `--depends-on 1,2,3` and `--on-parent-failure`; the ids themselves are checked by validateJob. */
function dependencies(list: string | undefined, onFailure: string | undefined): Partial<EnqueueOptions> {
  if (list === undefined) {
    if (onFailure !== undefined) throw new InputError('enqueue: --on-parent-failure goes with --depends-on');
    return {};
  }
  const ids = list.split(',').map((id) => id.trim());
  if (ids.some((id) => id === '')) throw new InputError('enqueue: --depends-on takes job ids separated by commas');
  return { dependsOn: ids, onParentFailure: onFailure as EnqueueOptions['onParentFailure'] };
}
