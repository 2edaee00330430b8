/**
 * Start-up work that can wait for a quiet moment.
 *
 * Reading every task's options imports each task module: sharp and the PDF
 * libraries cost 0.4–0.9 s of CPU in the options thread. A pod started into a
 * backlog paid for that in the middle of its first burst: on 2 cores, a
 * 100,000-job burst that began 1 s after start ran at 37,400–39,800 jobs/s
 * with the read at 2 s and 41,100–42,200 with it deferred (four interleaved
 * pairs). Nothing waits for that read: a job's own task is read when its
 * first job arrives (task_catalog.ts).
 *
 * So the work runs `afterMs` after start if the supervisor is not busy then;
 * otherwise at the first check, every `checkMs`, that finds it not busy; and
 * at the latest `latestMs` after start, however busy it stays. It runs once,
 * and never after stop(). "Busy" is the caller's: the supervisor counts jobs
 * held and claims made within the last check (between two claims of a burst
 * it may briefly hold nothing).
 */
export interface QuietStartOptions {
  afterMs: number;
  checkMs: number;
  latestMs: number;
  busy(): boolean;
  /** `afterMs` has passed and the supervisor is busy: the work waits. */
  deferred(): void;
  run(): void;
}

export class QuietStart {
  private timer: NodeJS.Timeout | undefined;
  private over = false;
  private startedAt = 0;

  constructor(private readonly options: QuietStartOptions) {}

  start(): void {
    this.startedAt = performance.now();
    this.arm(this.options.afterMs, true);
  }

  stop(): void {
    this.over = true;
    clearTimeout(this.timer);
  }

  private arm(ms: number, first: boolean): void {
    this.timer = setTimeout(() => this.check(first), ms);
    this.timer.unref();
  }

  private check(first: boolean): void {
    if (this.over) return;
    const elapsed = performance.now() - this.startedAt;
    if (elapsed < this.options.latestMs && this.options.busy()) {
      if (first) this.options.deferred();
      this.arm(Math.min(this.options.checkMs, this.options.latestMs - elapsed), false);
      return;
    }
    this.stop();
    this.options.run();
  }
}
