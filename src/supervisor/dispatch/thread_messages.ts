/**
 * What the dispatcher does with a session's messages (run_session.ts): a
 * thread that booted starts its runs' timeouts; each result decides its run's
 * outcome (outcome.ts); progress goes to the progress writer; a thread that
 * died fails the runs it held. Results of one batch, and the victims of one
 * death, settle together: capacity is announced once, at their end.
 */
import type { Outcome } from '../complete/outcome.ts';
import { refOf, type SupervisorEvents } from '../events.ts';
import { safeEmit } from '../safe_emit.ts';
import type { ClaimedJob } from '../../queue/types.ts';
import type { Run, RunLedger } from './ledger.ts';
import { deathCause, decideOutcome, type RunResult } from './outcome.ts';
import type { RunSession, SessionHandlers } from './run_session.ts';
import type { SessionSet } from './session_set.ts';

/** The dispatcher's parts the handlers act on. */
export interface MessageParts {
  ledger: RunLedger;
  sessions: SessionSet;
  events: SupervisorEvents;
  /** Where a running job's progress values go (none: dropped). */
  progress?: (job: ClaimedJob, json: string) => void;
  /** Carries out a run's outcome, once. */
  settle(run: Run, outcome: Outcome): void;
  /** Settles that follow belong to one batch: capacity waits for endSettling. */
  beginSettling(): void;
  /** The batch is over: capacity freed by it is announced. */
  endSettling(): void;
  /** Sends buffered runs to threads. */
  pump(): void;
}

/** The handlers of every session the dispatcher opens. */
export function threadMessages(p: MessageParts): SessionHandlers {
  return {
    ready: (session) => threadReady(p, session),
    result: (token, result) => {
      p.beginSettling();
      const run = p.ledger.get(token);
      // Steps are written by the thread itself: reported here, for metrics only.
      if (run && result.durable) safeEmit(p.events, 'job:steps', { job: run.job, report: result.durable });
      if (run?.state === 'running') p.settle(run, decideOutcome(result, run));
    },
    progress: (tokens, values) => {
      const report = p.progress;
      if (!report) return;
      for (let i = 0; i < tokens.length; i++) {
        // A run asked to stop for a lost lease writes nothing; the write is fenced anyway.
        const run = p.ledger.get(tokens[i] as string);
        if (run?.state === 'running' && run.stop !== 'lease-lost') report(run.job, values[i] as string);
      }
    },
    resultsEnd: () => {
      p.endSettling();
      p.pump();
    },
    ended: (session, err) => threadEnded(p, session, err),
  };
}

/** The session's thread has booted: its runs' timeouts count from now. */
function threadReady(p: MessageParts, session: RunSession): void {
  const now = performance.now();
  for (const token of session.running) {
    const run = p.ledger.get(token);
    if (run && run.session === session && !run.stop) {
      run.startedAt = now;
      run.deadline = now + run.timeoutMs;
    }
  }
}

/** The session's thread was given back: the runs it still held fail with its death (or their stop). */
function threadEnded(p: MessageParts, session: RunSession, err: unknown): void {
  p.sessions.delete(session);
  const victims = [...session.running]
    .map((token) => p.ledger.get(token))
    .filter((r): r is Run => r !== undefined && r.session === session);
  if (victims.length > 0) {
    p.beginSettling();
    const killedToStop = session.killedToStop;
    if (!killedToStop) p.events.emit('thread:died', { jobs: victims.map((r) => refOf(r.job)), error: deathCause(err) });
    const now = performance.now();
    for (const run of victims) {
      const result: RunResult = { type: 'thread-died', runMs: now - run.startedAt, cause: err, killedToStop };
      p.settle(run, decideOutcome(result, run));
    }
    p.endSettling();
  }
  p.pump();
}
