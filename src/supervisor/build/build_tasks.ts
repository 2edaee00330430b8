/**
 * The supervisor's view of its tasks, built: the options thread that reads a
 * task's options (options_reader.ts), the catalog that keeps them by kind
 * (task_catalog.ts), and the quiet-start read of every task (quiet_start.ts).
 */
import type { Settings } from '../../config/index.ts';
import type { Logger } from '../../log.ts';
import type { ResolvedTaskOptions } from '../../worker/task_options.ts';
import { batchSize } from '../dispatch/batch_gather.ts';
import type { SupervisorEvents } from '../events.ts';
import { OptionsReader } from './options_reader.ts';
import { QuietStart } from '../claim/quiet_start.ts';
import { TaskCatalog } from './task_catalog.ts';
import { taskSources } from './task_sources.ts';

/**
 * Every task's options are read this long after start if the supervisor is
 * not busy then (no job held, no claim within READ_ALL_TASKS_CHECK_MS), else
 * at the first quiet check, and at the latest READ_ALL_TASKS_LATEST_MS after
 * start (quiet_start.ts). A kind's first job never waits for this: it reads
 * its own.
 */
const READ_ALL_TASKS_AFTER_MS = 2000;
const READ_ALL_TASKS_CHECK_MS = 500;
const READ_ALL_TASKS_LATEST_MS = 30_000;

/** The options reader and the catalog; `known(kind)` once a kind's options are read. */
export function buildTasks(
  settings: Settings,
  taskFiles: Record<string, string>,
  log: Logger,
  known: (kind: string) => void,
): { reader: OptionsReader; catalog: TaskCatalog } {
  const taskDirs = taskSources(settings, taskFiles);
  const reader = new OptionsReader(taskDirs);
  // Booting beside the rest of start-up (the database, the listener, the probes),
  // the options thread is ready when the first job's kind is read.
  reader.warm();
  const catalog = new TaskCatalog(
    taskDirs,
    (problem) => log.warn(problem),
    (kind, options) => {
      useTaskQueue(settings, log, kind, options?.queue);
      warnBatchCap(settings, log, kind, options);
      known(kind);
    },
    (kind) => reader.read(kind),
  );
  return { reader, catalog };
}

/** A task's `options.queue` (read by `jobvisor enqueue`) that this supervisor does not serve. */
function useTaskQueue(settings: Settings, log: Logger, kind: string, queue: string | undefined): void {
  if (queue === undefined) return;
  if (!settings.queues[queue])
    log.warn(
      `task ${kind} asks for queue "${queue}", which this supervisor does not serve (config queues); its jobs enqueued without a queue go to "default"`,
    );
}

/**
 * A batch task whose maxSize its queue cannot hold: its calls are capped at
 * what the queue runs at once (batch_gather.ts batchSize), said once, in one
 * line naming the limit and the key to change.
 */
function warnBatchCap(settings: Settings, log: Logger, kind: string, options: ResolvedTaskOptions | null): void {
  const batch = options?.batch;
  const name = options?.queue ?? 'default';
  const queue = settings.queues[name];
  if (!batch || !queue) return;
  const cap = batchSize(batch, queue);
  if (cap >= batch.maxSize) return;
  const key =
    queue.globalConcurrency !== undefined && queue.globalConcurrency < queue.concurrency
      ? `queues.${name}.globalConcurrency (${queue.globalConcurrency})`
      : `queues.${name}.concurrency (${queue.concurrency})`;
  log.warn(
    `task ${kind} declares batch.maxSize ${batch.maxSize}, but queue "${name}" runs at most ${cap} of its jobs at once (${key}): its calls take at most ${cap} jobs; raise ${key.split(' ')[0]} to ${batch.maxSize}`,
  );
}

/**
 * The read of every task's options at the first quiet moment after start;
 * `held()`: jobs held now. `claimed()` is the `claimed` hook: a claim was made now.
 */
export function buildQuietStart(
  events: SupervisorEvents,
  catalog: TaskCatalog,
  held: () => number,
): { quiet: QuietStart; claimed: () => void } {
  let lastClaimAt = -Infinity;
  const quiet = new QuietStart({
    afterMs: READ_ALL_TASKS_AFTER_MS,
    checkMs: READ_ALL_TASKS_CHECK_MS,
    latestMs: READ_ALL_TASKS_LATEST_MS,
    busy: () => held() > 0 || performance.now() - lastClaimAt < READ_ALL_TASKS_CHECK_MS,
    deferred: () => events.emit('tasks:deferred', { held: held() }),
    run: () => void catalog.readAll(),
  });
  return { quiet, claimed: () => (lastClaimAt = performance.now()) };
}
