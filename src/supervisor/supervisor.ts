/**
 * A supervisor: fetchers, dispatcher, completer, heartbeat, reaper, cleanup,
 * scheduler and listener wired together around one owner id.
 *
 * States: created → running (start) → draining (stop) → stopped.
 * stop() follows the shutdown rule: stop claiming; hand back buffered jobs at
 * once; let running jobs finish within `shutdown.grace`; then abort them and
 * hand them back without using an attempt; flush outcomes; release threads and
 * connections. It is idempotent, safe before start(), and resolves when done;
 * during start() it lets the start-up finish first, then drains.
 */
import type pg from 'pg';
import type { Piscina } from 'piscina';
import { createPool } from '../db/pool.ts';
import type { Store } from '../queue/sql.ts';
import { Completer } from './completer.ts';
import { queueOutcomeStore } from './complete/store.ts';
import { ProgressWriter } from './progress_writer.ts';
import { Dispatcher } from './dispatch/dispatcher.ts';
import { piscinaSessions } from './dispatch/session.ts';
import { SupervisorEvents } from './events.ts';
import { safeEmit } from './safe_emit.ts';
import { Listener } from './claim/listener.ts';
import { buildHooks } from './build/build_hooks.ts';
import type { Hooks } from './hooks.ts';
import type { PauseWatch } from './loops/pause_watch.ts';
import { PrimaryWatch } from './loops/primary_watch.ts';
import type { Loop } from './loops/loop.ts';
import type { Presence } from './leases/presence.ts';
import type { TaskCheck } from '../worker/check_task.ts';
import { buildQuietStart, buildTasks } from './build/build_tasks.ts';
import type { OptionsReader } from './build/options_reader.ts';
import type { QuietStart } from './claim/quiet_start.ts';
import type { TaskCatalog } from './build/task_catalog.ts';
import {
  buildFetchers,
  buildHeartbeat,
  buildHeldConnection,
  buildMaintenance,
  buildPauseWatch,
  buildPresence,
  buildThreads,
  dispatcherSettings,
  supervisorId,
} from './build/build.ts';
import { ABORT_GRACE_MS, shutDown, startUp, type Parts } from './lifecycle.ts';
import type { SupervisorOptions } from './supervisor_options.ts';
import { batchCallStarter } from './batch_start.ts';
import type { Fetcher } from './claim/fetcher.ts';
import type { HeldConnection } from '../db/held.ts';

/**
 * One supervisor, the engine under run(): claims the jobs of its queues, runs
 * them on its worker threads, writes their outcomes (fenced by lease), and runs
 * the heartbeat, reaper, cleanup and scheduler. Most apps call run(), which adds
 * the start-up checks, signals and the metrics server; construct this only to
 * wire the parts yourself. `start()` begins claiming; `stop()` drains (stop
 * claiming, let running jobs finish within `shutdown.grace`, hand back the rest),
 * at any time: it is idempotent and safe before or during `start()`.
 *
 * @example
 * ```ts
 * const supervisor = new Supervisor({ settings: loadConfig(), databaseUrl, log: pino() });
 * await supervisor.start(); // …
 * await supervisor.stop();
 * ```
 */
export class Supervisor {
  readonly id: string;
  readonly events = new SupervisorEvents();
  readonly pool: pg.Pool;
  readonly store: Store;
  private readonly threads: Piscina;
  private readonly dispatcher: Dispatcher;
  private readonly completer: Completer;
  private readonly progress: ProgressWriter;
  private readonly fetchers: Map<string, Fetcher>;
  private readonly loops: Loop[];
  private readonly heartbeat: Loop;
  /** The heartbeat's own connection, out of the pool (db/held.ts); none with a pool of fewer than 3. */
  private readonly beatConnection: HeldConnection | undefined;
  private readonly listener: Listener;
  private readonly catalog: TaskCatalog;
  private readonly optionsReader: OptionsReader;
  private readonly presence: Presence;
  private firstBeat: Promise<void> = Promise.resolve();
  private readonly pauseWatch: PauseWatch;
  /** Whether a writable primary is reached; see primary_watch.ts. */
  readonly primary: PrimaryWatch;
  private pollTimer: NodeJS.Timeout | undefined;
  private readonly readAll: QuietStart;
  /** What the parts call to drive each other (hooks.ts); `events` is for observers only. */
  private readonly hooks: Hooks;
  private claimedAt: () => void = () => {};
  private state: 'created' | 'running' | 'draining' | 'stopped' = 'created';
  private stopping: Promise<void> | undefined;
  private starting: Promise<void> | undefined;

  constructor(private readonly options: SupervisorOptions) {
    const { settings, log } = options;
    this.id = supervisorId(settings.supervisor.name);
    this.pool =
      options.pool ??
      createPool(options.databaseUrl, { max: settings.database.poolSize, log, applicationName: 'jobvisor' });
    this.store = { db: this.pool, schema: settings.database.schema };
    this.beatConnection = buildHeldConnection(this.pool, settings);
    // Outcomes, progress, presence: through the held connection once the pool's owner ended the pool.
    const writes: Store = { db: this.beatConnection?.untilPoolEnds ?? this.pool, schema: this.store.schema };
    this.threads = buildThreads(settings, this.id, options.databaseUrl, options.taskFiles ?? {});
    this.threads.on('error', (err: unknown) => log.error({ err }, 'worker pool error'));
    this.hooks = buildHooks({
      store: this.store,
      owner: this.id,
      queues: settings.queues,
      events: this.events,
      onCapacity: (queue) => this.fetchers.get(queue)?.onCapacity(),
      wake: (queue) => this.fetchers.get(queue)?.wake(),
      dbFailed: (loop, err) => this.primary.failed(loop, err),
      listenerReadOnly: (error) => this.primary.listenerReadOnly(error),
      writable: () => {
        this.listener.reconnectNow();
        this.wakeAll();
      },
      claimed: () => this.claimedAt(),
    });
    const outcomes = queueOutcomeStore(writes, this.id, settings.jobs.maxSnoozes, settings.cleanup.retention > 0);
    this.completer = new Completer(outcomes, settings, this.events, this.hooks);
    ({ reader: this.optionsReader, catalog: this.catalog } = buildTasks(
      settings,
      options.taskFiles ?? {},
      log,
      (kind) => {
        this.dispatcher.kindKnown(kind);
        safeEmit(this.events, 'task:read', { kind, options: this.catalog.get(kind) ?? null });
      },
    ));
    this.progress = new ProgressWriter(writes, this.id, this.events);
    this.dispatcher = new Dispatcher({
      ...dispatcherSettings(settings, ABORT_GRACE_MS),
      sessions: piscinaSessions(this.threads),
      events: this.events,
      hooks: this.hooks,
      outcomes: this.completer,
      progress: (job, json) => this.progress.report(job, json),
      onCapacity: (queue) => this.fetchers.get(queue)?.onCapacity(),
      traits: (kind) => this.catalog.get(kind),
      startCall: batchCallStarter(this.store, this.id, settings.jobs.lease, this.events, this.hooks),
    });
    ({ quiet: this.readAll, claimed: this.claimedAt } = buildQuietStart(
      this.events,
      this.catalog,
      () => this.dispatcher.size,
    ));
    this.fetchers = buildFetchers({
      store: this.store,
      settings,
      owner: this.id,
      dispatcher: this.dispatcher,
      durableClaims: () => this.primary.durableClaims,
      beforeClaim: () => this.pauseWatch.beforeClaim(),
      ended: (queue) => this.completer.unwritten(queue),
      events: this.events,
      hooks: this.hooks,
    });
    this.presence = buildPresence(writes, settings, this.id, () => this.inFlight(), log, options.cluster);
    this.heartbeat = buildHeartbeat({
      connection: this.beatConnection,
      store: this.store,
      settings,
      owner: this.id,
      beat: () => this.presence.beat(),
      dispatcher: this.dispatcher,
      completer: this.completer,
      fetchers: this.fetchers,
      events: this.events,
      hooks: this.hooks,
    });
    this.loops = buildMaintenance(this.store, settings, this.events, this.hooks);
    this.pauseWatch = buildPauseWatch({
      store: this.store,
      fetchers: this.fetchers,
      dispatcher: this.dispatcher,
      notified: () => this.listener.isListening,
      events: this.events,
      hooks: this.hooks,
    });
    this.listener = new Listener({
      // LISTEN needs a session of its own: never through a pooler in transaction mode.
      url: settings.database.directUrl || options.databaseUrl,
      db: this.pool,
      onNotify: (queue) => this.wake(queue),
      onQueueState: () => void this.pauseWatch.refresh().catch(() => {}),
      events: this.events,
      hooks: this.hooks,
    });
    this.primary = new PrimaryWatch({ db: this.pool, events: this.events, hooks: this.hooks });
  }

  get draining(): boolean {
    return this.state === 'draining' || this.state === 'stopped';
  }

  get listening(): boolean {
    return this.listener.isListening;
  }

  /** Jobs held right now (claimed and not yet recorded); of one queue: claimed and not yet finished. */
  inFlight(queue?: string): number {
    return queue === undefined ? this.dispatcher.size + this.completer.size : this.dispatcher.inFlight(queue);
  }

  threadsBusy(): number {
    return this.dispatcher.threadsBusy();
  }

  threadCount(): number {
    return this.threads.threads.length;
  }

  /**
   * Starts every loop; resolves once listening (or once the first attempt to listen failed). A task's
   * options are read at its kind's first job (task_catalog.ts), every task's at the first quiet moment
   * (quiet_start.ts): heavy task imports neither delay a new pod's first jobs nor compete with its first burst.
   */
  async start(): Promise<void> {
    if (this.state !== 'created') return;
    this.state = 'running';
    this.firstBeat = this.presence.beat();
    await (this.starting = startUp(this.parts()));
    if (this.state !== 'running') return; // stopped meanwhile: drain() stops what startUp() started
    this.pollTimer = setInterval(() => this.wakeAll(), this.options.settings.poll.interval).unref();
    this.readAll.start();
    this.events.emit('supervisor:started', { supervisor: this.id, queues: [...this.fetchers.keys()] });
    this.wakeAll();
  }

  /** Loads a kind's task in the options thread, as its jobs would (the start-up check of run()). */
  checkTask(kind: string): Promise<TaskCheck> {
    return this.optionsReader.check(kind);
  }

  /** Reads these kinds' options now (queue defaults, exclusiveThread) rather than at their first job. */
  async readTasks(kinds: readonly string[]): Promise<void> {
    await Promise.all(kinds.map((kind) => this.catalog.read(kind)));
  }

  /**
   * A notification: claims on the queue it names. An empty payload (a plain
   * `NOTIFY jobvisor_jobs`, or the listener reconnecting) wakes every queue;
   * queues served elsewhere and other supervisors' self-pings are ignored.
   */
  wake(queue: string): void {
    if (queue === '') this.wakeAll();
    else if (this.state === 'running') this.fetchers.get(queue)?.wake();
  }

  /** Claims on every queue now. */
  wakeAll(): void {
    if (this.state !== 'running') return;
    for (const f of this.fetchers.values()) f.wake();
  }

  /** Graceful shutdown; see the file comment. */
  stop(reason = 'stop requested'): Promise<void> {
    return (this.stopping ??= this.drain(reason));
  }

  private async drain(reason: string): Promise<void> {
    const wasRunning = this.state === 'running';
    this.state = 'draining';
    if (wasRunning) this.events.emit('supervisor:draining', { supervisor: this.id, reason });
    await this.starting?.catch(() => {}); // what start-up opens after shutDown() would stay open
    clearInterval(this.pollTimer);
    this.readAll.stop();
    await shutDown(this.parts(), this.options.settings.shutdown.grace, wasRunning ? this.firstBeat : undefined);
    this.state = 'stopped';
    if (wasRunning) this.events.emit('supervisor:stopped', { supervisor: this.id });
  }

  private parts(): Parts {
    return {
      fetchers: this.fetchers,
      listener: this.listener,
      pauseWatch: this.pauseWatch,
      primary: this.primary,
      loops: this.loops,
      dispatcher: this.dispatcher,
      progress: this.progress,
      completer: this.completer,
      heartbeat: this.heartbeat,
      presence: this.presence,
      beatConnection: this.beatConnection,
      threads: this.threads,
      optionsReader: this.optionsReader,
      ownPool: this.options.pool ? undefined : this.pool,
      log: this.options.log,
    };
  }
}
