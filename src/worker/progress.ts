/**
 * Throttling ctx.progress() in the thread: at most one value per job per
 * second leaves for the supervisor, which writes each one it gets (fenced).
 *
 * Per job: the first value leaves at once; later ones within the second wait
 * on one timer, and only the newest is sent when it fires (latest wins). When
 * the job ends, take() hands back its last value, sent or not: a successful
 * run stores it with its `done` write, so the final value is always the one
 * kept, even if an earlier progress write arrives after the completion (that
 * write is fenced off, the job being no longer running). On failure or snooze
 * the final value is not written again: at most the last second of progress is
 * lost, by choice (those writes stay unchanged and cheap).
 *
 * A job that never calls ctx.progress() costs nothing here: no entry is made.
 */
export const PROGRESS_INTERVAL_MS = 1000;

interface JobProgress {
  lastSentAt: number;
  last: string;
  unsent: boolean;
  timer?: NodeJS.Timeout;
}

export class ProgressThrottle {
  private readonly jobs = new Map<string, JobProgress>();

  constructor(private readonly send: (token: string, json: string) => void) {}

  /** Reports `json` for the run `token`: sent now, or when its second is up. */
  report(token: string, json: string): void {
    const now = performance.now();
    const p = this.jobs.get(token);
    if (!p) {
      this.jobs.set(token, { lastSentAt: now, last: json, unsent: false });
      this.send(token, json);
      return;
    }
    p.last = json;
    if (p.timer) {
      p.unsent = true;
      return;
    }
    if (now - p.lastSentAt >= PROGRESS_INTERVAL_MS) {
      p.lastSentAt = now;
      p.unsent = false;
      this.send(token, json);
      return;
    }
    p.unsent = true;
    p.timer = setTimeout(() => this.due(token, p), p.lastSentAt + PROGRESS_INTERVAL_MS - now);
  }

  /** The run has ended: its last value, if it reported any; nothing more is sent for it. */
  take(token: string): string | undefined {
    const p = this.jobs.get(token);
    if (!p) return undefined;
    clearTimeout(p.timer);
    this.jobs.delete(token);
    return p.last;
  }

  private due(token: string, p: JobProgress): void {
    p.timer = undefined;
    if (this.jobs.get(token) !== p || !p.unsent) return;
    p.lastSentAt = performance.now();
    p.unsent = false;
    this.send(token, p.last);
  }
}
