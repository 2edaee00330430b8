/**
 * The cluster primary: N slots, each holding one supervisor process. It runs
 * no jobs.
 *
 * Invariants:
 *   - every slot has a process or a restart timer, until stop();
 *   - a process that exits has its running jobs handed back at once (by its
 *     supervisor id, fenced by owner and token: queue/hand_back.ts) and its
 *     row in the supervisors table removed;
 *   - an unexpected exit is restarted after restartDelayMs (restart_delay.ts)
 *     and logged in one line; a process the primary asked to drain is not;
 *   - recycling starts the replacement first and drains the old process only
 *     once the replacement claims, so the slot never stops claiming;
 *   - a process silent for `hangLimitMs` (its event loop blocked: hang_watch.ts)
 *     is SIGKILLed, and its exit is handled as a crash's: jobs handed back at
 *     once, a new process in its slot. This holds while stopping too (then
 *     without the restart): a hung process would never finish its drain.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from '../log.ts';
import { createClusterMetrics } from '../metrics/metrics.ts';
import { removeSupervisor } from '../queue/presence.ts';
import { handBackJobsOf } from '../queue/hand_back.ts';
import type { Store } from '../queue/sql.ts';
import { retire } from './aggregate.ts';
import { HangWatch, REPORT_SILENT_MS, TICK_MS } from './hang_watch.ts';
import { CHILD_SLOT_ENV, PRIMARY_ID_ENV, type ChildMessage, type MetricsJson } from './messages.ts';
import { nextStreak, recycleReason, restartDelayMs } from './restart_delay.ts';
import { SupervisorChild, type ChildExit, type ForkOptions } from './supervisor_child.ts';

/** A claim the dead process sent may commit just after its exit: one more sweep this much later. */
const SECOND_SWEEP_MS = 300;
const MB = 1024 * 1024;

export interface PrimaryOptions {
  processes: number;
  maxJobs: number;
  maxRssMb: number;
  store: Store;
  log: Logger;
  fork: ForkOptions;
  /** A child silent this long is hung: killed and replaced (hang_watch.ts `hangLimitMs`). */
  hangLimitMs: number;
}

/** What /healthz says about hung processes: those silent now, and the last one killed. */
export interface HangReport {
  hung: Array<{ child: number; pid: number; silentMs: number; killAtMs: number }>;
  lastKilled?: { child: number; pid: number; silentMs: number; at: string };
}

interface Slot {
  current: SupervisorChild | undefined;
  streak: number;
  restart: NodeJS.Timeout | undefined;
  /** The process being replaced, while its replacement starts. */
  replacing: SupervisorChild | undefined;
  recycleAfter: number;
}

export class ClusterPrimary {
  readonly id = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  readonly metrics = createClusterMetrics();
  private readonly slots: Slot[];
  private readonly children = new Set<SupervisorChild>();
  private retired: MetricsJson = [];
  private stopping = false;
  /** onExit runs of processes that exited, until their hand-back is done. */
  private readonly handling = new Set<Promise<void>>();
  private readonly watch: HangWatch<SupervisorChild>;
  private ticker: NodeJS.Timeout | undefined;
  private lastKilled: HangReport['lastKilled'];

  constructor(private readonly options: PrimaryOptions) {
    this.watch = new HangWatch(options.hangLimitMs, performance.now());
    this.slots = Array.from({ length: options.processes }, () => ({
      current: undefined,
      streak: 0,
      restart: undefined,
      replacing: undefined,
      recycleAfter: 0,
    }));
  }

  get processes(): number {
    return this.options.processes;
  }

  /** Every live process, replacements and processes being drained included. */
  live(): SupervisorChild[] {
    return [...this.children].filter((c) => c.alive);
  }

  /** The process each slot counts on (readiness), live or not. */
  current(): Array<SupervisorChild | undefined> {
    return this.slots.map((s) => s.current);
  }

  /** Counters and histograms of exited processes (aggregate.ts). */
  retiredMetrics(): MetricsJson {
    return this.retired;
  }

  start(): void {
    for (let i = 0; i < this.slots.length; i++) this.spawn(i);
    this.ticker = setInterval(() => {
      for (const { child, silentMs } of this.watch.tick(performance.now())) this.killHung(child, silentMs);
    }, TICK_MS);
    this.ticker.unref();
  }

  /** Processes silent for REPORT_SILENT_MS or more, and the last one killed as hung (for /healthz). */
  hangReport(): HangReport {
    const hung = this.watch.silentAtLeast(REPORT_SILENT_MS).map(({ child, silentMs }) => ({
      child: child.slot,
      pid: child.pid,
      silentMs: Math.round(silentMs),
      killAtMs: this.options.hangLimitMs,
    }));
    return this.lastKilled ? { hung, lastKilled: this.lastKilled } : { hung };
  }

  private spawn(slot: number): SupervisorChild {
    const { fork } = this.options;
    const child = new SupervisorChild(
      slot,
      { ...fork, env: { ...fork.env, [CHILD_SLOT_ENV]: String(slot), [PRIMARY_ID_ENV]: this.id } },
      (c, m) => this.onMessage(c, m),
    );
    this.children.add(child);
    this.metrics.children.set(this.live().length);
    this.options.log.info({ child: slot, childPid: child.pid }, 'supervisor process started');
    const handled: Promise<void> = child.exited
      .then((exit) => this.onExit(child, exit))
      .finally(() => this.handling.delete(handled));
    this.handling.add(handled);
    const s = this.slots[slot] as Slot;
    s.current = child;
    return child;
  }

  private onMessage(child: SupervisorChild, m: ChildMessage): void {
    // Messages still queued from a process already killed do not bring it back under watch.
    if (child.alive && child.killedHung === undefined) this.watch.heard(child);
    if (m.jobvisor === 'stats') this.maybeRecycle(child);
  }

  private killHung(child: SupervisorChild, silentMs: number): void {
    this.watch.forget(child);
    if (!child.alive) return;
    child.killedHung = Math.round(silentMs);
    this.lastKilled = { child: child.slot, pid: child.pid, silentMs: child.killedHung, at: new Date().toISOString() };
    this.metrics.hung.labels(String(child.slot)).inc();
    this.options.log.error(
      {
        child: child.slot,
        childPid: child.pid,
        supervisor: child.supervisorId,
        silentMs: child.killedHung,
        limitMs: this.options.hangLimitMs,
      },
      'supervisor process hung (its event loop does not answer): killing it',
    );
    child.signal('SIGKILL');
  }

  private async onExit(child: SupervisorChild, exit: ChildExit): Promise<void> {
    this.watch.forget(child);
    this.children.delete(child);
    this.metrics.children.set(this.live().length);
    const slot = this.slots[child.slot] as Slot;
    const expected = child.drainAsked || this.stopping;
    const handedBack = await this.handBack(child, exit);
    this.retired = await retire(this.retired, child.lastMetrics).catch(() => this.retired);
    const fields = {
      child: child.slot,
      childPid: child.pid,
      supervisor: child.supervisorId,
      ...exit,
      handedBack,
      ...(child.killedHung === undefined ? {} : { hungMs: child.killedHung }),
    };
    if (slot.current !== child) {
      if (slot.replacing === child) slot.replacing = undefined;
      this.options.log.info(fields, 'supervisor process exited');
      return;
    }
    if (slot.replacing) {
      // The replacement died before it claimed: the old process keeps the slot.
      slot.current = slot.replacing;
      slot.replacing = undefined;
      slot.streak = nextStreak(slot.streak, 0);
      slot.recycleAfter = performance.now() + restartDelayMs(slot.streak);
      this.options.log.warn(
        fields,
        'replacement supervisor process exited before it claimed: the old one keeps its slot',
      );
      return;
    }
    if (expected || this.stopping) {
      this.options.log.info(fields, 'supervisor process exited');
      return;
    }
    slot.current = undefined;
    slot.streak = nextStreak(slot.streak, performance.now() - child.startedAt);
    const delayMs = restartDelayMs(slot.streak);
    this.metrics.restarts.labels(String(child.slot)).inc();
    this.options.log.warn(
      { ...fields, crashes: slot.streak, restartInMs: delayMs },
      child.killedHung === undefined
        ? 'supervisor process exited unexpectedly: its jobs handed back, restarting it'
        : 'hung supervisor process killed: its jobs handed back, restarting it',
    );
    slot.restart = setTimeout(() => {
      slot.restart = undefined;
      if (!this.stopping) this.spawn(child.slot);
    }, delayMs);
  }

  private async handBack(child: SupervisorChild, exit: ChildExit): Promise<number> {
    const id = child.supervisorId;
    if (!id) return 0;
    const how = exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
    const reason = `supervisor ${id} exited (${how}) while running it: handed back by the cluster primary`;
    const sweep = async () => {
      try {
        return (await handBackJobsOf(this.options.store, id, reason)).length;
      } catch (err) {
        this.options.log.warn(
          { err, supervisor: id },
          'could not hand back the jobs of an exited supervisor: their leases will',
        );
        return 0;
      }
    };
    const n = await sweep();
    // A crashed process left its row in the supervisors table: it is gone now, not in 3 leases.
    await removeSupervisor(this.options.store, id).catch(() => {});
    setTimeout(
      () =>
        void sweep().then((late) => {
          if (late > 0)
            this.options.log.info(
              { supervisor: id, handedBack: late },
              'late claims of an exited supervisor handed back',
            );
          this.metrics.handedBack.inc(late);
        }),
      SECOND_SWEEP_MS,
    ).unref();
    this.metrics.handedBack.inc(n);
    return n;
  }

  private maybeRecycle(child: SupervisorChild): void {
    const slot = this.slots[child.slot] as Slot;
    if (this.stopping || slot.current !== child || slot.replacing || !child.ready) return;
    if (performance.now() < slot.recycleAfter) return;
    const reason = recycleReason(child, this.options);
    if (!reason) return;
    this.metrics.recycles.labels(String(child.slot), reason).inc();
    this.options.log.info(
      { child: child.slot, childPid: child.pid, jobs: child.jobs, rssMb: Math.round(child.rssBytes / MB), reason },
      'recycling a supervisor process: its replacement starts before it drains',
    );
    slot.replacing = child;
    const next = this.spawn(child.slot);
    void next.whenReady().then((ready) => {
      if (!ready || slot.replacing !== child) return;
      slot.replacing = undefined;
      child.drain();
    });
  }

  /** Stops restarting and asks every process to drain; resolves when all have exited. Idempotent. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const s of this.slots) clearTimeout(s.restart);
    for (const c of this.live()) c.drain();
    while (this.handling.size > 0) await Promise.all([...this.handling]);
    clearInterval(this.ticker);
  }

  /** Sends `signal` to every live process (a second SIGTERM forces their drain; SIGKILL ends them). */
  signalAll(signal: NodeJS.Signals): void {
    for (const c of this.live()) c.signal(signal);
  }
}
