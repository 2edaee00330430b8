/**
 * Batch runs gathering for their call, one gathering per queue, kind and batch
 * key value (batch_key.ts).
 *
 * A gathering is due when it holds its size (the task's `batch.maxSize`,
 * capped by what the queue can run at once: batchSize()), when its oldest
 * run has waited `batch.maxWait` since it joined (at its claim, or when its
 * kind's options became known), or at once when it holds a rate-limited run
 * (paced()). One timer per gathering, set for its oldest
 * run, asks the dispatcher to pump then; a timer that fires early finds the
 * gathering not yet due and is set again.
 *
 * The runs stay buffered in the ledger (they hold their queue's places) and
 * leave it as every run does (dropped, handed back, superseded): a gathering
 * keeps such a run until due() prunes it. take() hands the oldest runs to a
 * call; the rest keep gathering, timed from the oldest of them.
 */
import type { QueueSettings } from '../../config/index.ts';
import type { ResolvedBatch } from '../../worker/batch_options.ts';
import { batchKeyOf } from './batch_key.ts';
import type { Run } from './ledger.ts';

export interface Gathering {
  /** Its name among its queue's gatherings: kind and key value. */
  readonly id: string;
  readonly queue: string;
  readonly kind: string;
  /** The batch key's value (JSON text); undefined: no key. */
  readonly key: string | undefined;
  readonly batch: ResolvedBatch;
  /** The most one call takes. */
  readonly size: number;
  /** In the order they joined. */
  runs: Run[];
  /** When each run joined (performance.now()), aligned with runs. */
  joined: number[];
  timer?: NodeJS.Timeout;
}

/**
 * The most jobs one call of a batch task takes in `queue`: its maxSize,
 * capped by the queue's `concurrency` (a call holds one place per job and
 * all of them run at once) and by its `globalConcurrency` (all of them start
 * at once across the cluster).
 */
export function batchSize(batch: ResolvedBatch, queue: QueueSettings): number {
  return Math.max(1, Math.min(batch.maxSize, queue.concurrency, queue.globalConcurrency ?? Infinity));
}

/**
 * Whether `g` holds a rate-limited run: such a run reaches its gathering just
 * before its start window opens, and the window is a few ms wide (at most
 * 21 ms at 1 s: queue/rate_slots.ts, startWindow), so its gathering is due at
 * once, not after maxWait: a call takes the jobs whose slots came together. (Waiting maxWait made every such job
 * miss its slot: handed back, claimed again, missed again, never run.)
 */
function paced(g: Gathering): boolean {
  return g.runs.some((r) => r.job.startWindow !== undefined);
}

export class BatchGather {
  private readonly byQueue = new Map<string, Map<string, Gathering>>();
  private readonly gathered = new WeakSet<Run>();

  constructor(
    private readonly o: {
      queues: Record<string, QueueSettings>;
      /** The run is still held and buffered (not dropped, handed back or started). */
      alive: (run: Run) => boolean;
      /** A gathering's wait is over: pump. */
      wake: () => void;
      now?: () => number;
    },
  ) {}

  /** Adds a buffered run of a batch task to its gathering (once; later calls do nothing). */
  add(run: Run): void {
    const batch = run.batch;
    const settings = this.o.queues[run.job.queue];
    if (!batch || !settings || this.gathered.has(run)) return;
    this.gathered.add(run);
    const key = batch.key === undefined ? undefined : batchKeyOf(run.job.payload, batch.key);
    // A payload the claim did not carry (over 2 KiB) has no key known here: such a job
    // has a call of its own rather than share one with another key's jobs.
    const alone = batch.key !== undefined && run.job.payloadDeferred === true;
    const id = alone
      ? `${run.job.kind}\u0001${run.job.token}`
      : key === undefined
        ? run.job.kind
        : `${run.job.kind}\u0000${key}`;
    let queue = this.byQueue.get(run.job.queue);
    if (!queue) this.byQueue.set(run.job.queue, (queue = new Map<string, Gathering>()));
    let g = queue.get(id);
    if (!g) {
      g = {
        id,
        queue: run.job.queue,
        kind: run.job.kind,
        key,
        batch,
        size: alone ? 1 : batchSize(batch, settings),
        runs: [],
        joined: [],
      };
      queue.set(id, g);
    }
    g.runs.push(run);
    g.joined.push(this.now());
    if (g.runs.length === 1) this.arm(g);
  }

  /** Whether any run of `queue` is gathering. */
  has(queue: string): boolean {
    return (this.byQueue.get(queue)?.size ?? 0) > 0;
  }

  /**
   * The queue's gatherings that are due (full, or waited long enough; every
   * one when `all`), oldest first, without runs that have left meanwhile.
   */
  due(queue: string, all = false): Gathering[] {
    const gatherings = this.byQueue.get(queue);
    if (!gatherings) return [];
    const now = this.now();
    const due: Gathering[] = [];
    for (const [id, g] of gatherings) {
      this.prune(g);
      if (g.runs.length === 0) {
        this.drop(gatherings, id, g);
        continue;
      }
      if (all || g.runs.length >= g.size || now >= (g.joined[0] as number) + g.batch.maxWaitMs || paced(g)) due.push(g);
      else if (!g.timer) this.arm(g);
    }
    return due.sort((a, b) => (a.joined[0] as number) - (b.joined[0] as number));
  }

  /** Takes these runs (the first ones of `g`) out of it, for a call; the rest wait on, timed from the oldest. */
  take(g: Gathering, runs: readonly Run[]): void {
    const taking = new Set(runs);
    const keep: number[] = [];
    g.runs.forEach((r, i) => {
      if (taking.has(r)) this.gathered.delete(r);
      else keep.push(i);
    });
    g.joined = keep.map((i) => g.joined[i] as number);
    g.runs = keep.map((i) => g.runs[i] as Run);
    clearTimeout(g.timer);
    g.timer = undefined;
    const gatherings = this.byQueue.get(g.queue);
    if (g.runs.length === 0 && gatherings) this.drop(gatherings, g.id, g);
    else this.arm(g);
  }

  /** When the oldest run of `g` joined. */
  since(g: Gathering): number {
    return g.joined[0] ?? this.now();
  }

  /** Clears every timer (the dispatcher is closing). */
  close(): void {
    for (const gatherings of this.byQueue.values()) for (const g of gatherings.values()) clearTimeout(g.timer);
    this.byQueue.clear();
  }

  private prune(g: Gathering): void {
    if (g.runs.every(this.o.alive)) return;
    const keep: number[] = [];
    g.runs.forEach((r, i) => {
      if (this.o.alive(r)) keep.push(i);
      else this.gathered.delete(r);
    });
    g.joined = keep.map((i) => g.joined[i] as number);
    g.runs = keep.map((i) => g.runs[i] as Run);
  }

  private arm(g: Gathering): void {
    clearTimeout(g.timer);
    const at = (g.joined[0] as number) + g.batch.maxWaitMs;
    g.timer = setTimeout(
      () => {
        g.timer = undefined;
        this.o.wake();
      },
      Math.max(0, Math.ceil(at - this.now())),
    );
    g.timer.unref();
  }

  private drop(gatherings: Map<string, Gathering>, id: string, g: Gathering): void {
    clearTimeout(g.timer);
    g.timer = undefined;
    gatherings.delete(id);
    if (gatherings.size === 0) this.byQueue.delete(g.queue);
  }

  private now(): number {
    return this.o.now ? this.o.now() : performance.now();
  }
}
