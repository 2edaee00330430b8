/**
 * The dispatcher's decisions without threads or a database (River's runOnce
 * style): fake sessions stand where worker threads would be and a fake sink
 * where the completer would be. Each test hands jobs in, plays what a thread
 * would answer (a result, a crash), and asserts what was sent to threads and
 * which outcome reached the sink, through its one report path. The real
 * threads: supervisor, chaos_threads, shutdown, flow_pause and the others.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { loadConfig } from '../../src/config/index.ts';
import type { ClaimedJob } from '../../src/queue/types.ts';
import type { OutcomeSink, Recorded } from '../../src/supervisor/complete/outcome.ts';
import { Dispatcher } from '../../src/supervisor/dispatch/dispatcher.ts';
import type { RunResult, StopReason } from '../../src/supervisor/dispatch/outcome.ts';
import type { RunSession, SessionHandlers, SessionSource } from '../../src/supervisor/dispatch/run_session.ts';
import { SupervisorEvents } from '../../src/supervisor/events.ts';

/** A session that records what it is sent and answers only when the test says so. */
class FakeSession implements RunSession {
  ready = false;
  yielding = false;
  ending = false;
  readonly running = new Set<string>();
  exclusive = 0;
  killedToStop: string | null = null;
  readonly done: Promise<void>;
  /** Jobs that reached the thread (flushed), in order. */
  readonly received: ClaimedJob[] = [];
  readonly aborts: Array<{ token: string; reason: StopReason }> = [];
  private outbox: ClaimedJob[] = [];
  private settle!: () => void;

  constructor(
    readonly queue: string,
    private readonly handlers: SessionHandlers,
  ) {
    this.done = new Promise((resolve) => (this.settle = resolve));
  }

  send(job: ClaimedJob, exclusive: boolean): void {
    this.running.add(job.token);
    if (exclusive) this.exclusive++;
    this.outbox.push(job);
  }
  flush(): ClaimedJob[] {
    const jobs = this.outbox;
    this.outbox = [];
    this.received.push(...jobs);
    return jobs;
  }
  remove(token: string, exclusive: boolean): void {
    if (this.running.delete(token) && exclusive) this.exclusive--;
  }
  abort(token: string, reason: StopReason): void {
    this.aborts.push({ token, reason });
  }
  end(): void {
    this.ending = true;
  }
  terminate(jobId: string): void {
    this.killedToStop ??= jobId;
    this.die(new Error('terminated'));
  }

  /** The thread answers one result batch. */
  answer(...results: Array<[ClaimedJob, RunResult]>): void {
    for (const [j, r] of results) this.handlers.result(j.token, r);
    this.handlers.resultsEnd();
  }
  /** The thread dies under its runs. */
  die(err: unknown): void {
    this.handlers.ended(this, err);
    this.settle();
  }
}

function harness(queue: { concurrency?: number; jobsPerThread?: number } = {}, maxPayloadBytes = 1024) {
  const settings = loadConfig({
    env: {},
    standardLayers: false,
    overrides: { queues: { default: { concurrency: 2, jobsPerThread: 2, prefetch: 0, ...queue } } },
  });
  const sessions: FakeSession[] = [];
  const source: SessionSource = {
    open: (q, handlers) => {
      const s = new FakeSession(q, handlers);
      sessions.push(s);
      return s;
    },
    threads: () => sessions.length,
    queued: () => 0,
  };
  const recorded: Array<{ id: string; outcome: Recorded }> = [];
  const sink: OutcomeSink = { record: (j, outcome) => recorded.push({ id: j.id, outcome }) };
  const events = new SupervisorEvents();
  const lost: string[] = [];
  events.on('lease:lost', (b) => lost.push(...b.jobs.map((j) => j.id)));
  const freed: string[] = [];
  const dispatcher = new Dispatcher({
    sessions: source,
    queues: settings.queues,
    maxThreads: 2,
    timeoutMs: 60_000,
    abortGraceMs: 60_000,
    maxPayloadBytes,
    events,
    outcomes: sink,
    onCapacity: (q) => freed.push(q),
    traits: () => null,
    sweepMs: 60_000,
  });
  return { dispatcher, sessions, recorded, lost, freed, events };
}

function job(id: number, attempt = 1, maxAttempts = 3, payload: string | null = '{}'): ClaimedJob {
  return {
    id: String(id),
    token: `t${id}`,
    kind: 'k',
    queue: 'default',
    payload,
    payloadBytes: payload === null ? 2000 : null,
    payloadStoredBytes: null,
    attempt,
    maxAttempts,
    runAtMs: 0,
  };
}

const success: RunResult = { type: 'success', runMs: 7 };
const taskError: RunResult = {
  type: 'task-error',
  runMs: 9,
  error: { name: 'TypeError', message: 'boom', permanent: false, retryInMs: null },
};

let harnesses: Array<ReturnType<typeof harness>> = [];
function make(...args: Parameters<typeof harness>) {
  const h = harness(...args);
  harnesses.push(h);
  return h;
}

// These tests must not reach PostgreSQL: a connection attempt fails the test that made it.
const connect = Object.getOwnPropertyDescriptor(pg.Client.prototype, 'connect') as PropertyDescriptor;
before(() => {
  Object.defineProperty(pg.Client.prototype, 'connect', {
    ...connect,
    value: () => {
      throw new Error('a dispatcher unit test opened a PostgreSQL connection');
    },
  });
});
after(async () => {
  Object.defineProperty(pg.Client.prototype, 'connect', connect);
  for (const h of harnesses) {
    h.dispatcher.drainBuffers();
    for (const s of h.sessions) s.die(null);
    await h.dispatcher.close();
  }
  harnesses = [];
});

describe('the dispatcher, with fake sessions and sink', () => {
  it('sends jobs to one session and reports a success as done, freeing capacity once per batch', () => {
    const { dispatcher, sessions, recorded, freed } = make();
    const [a, b] = [job(1), job(2)];
    dispatcher.add([a, b]);
    assert.equal(sessions.length, 1, 'two jobs share a thread (jobsPerThread 2)');
    assert.deepEqual(
      sessions[0]?.received.map((j) => j.id),
      ['1', '2'],
    );
    assert.equal(dispatcher.capacity('default'), 0);
    sessions[0]?.answer([a, success], [b, { type: 'success', runMs: 8, result: '"r"' }]);
    assert.deepEqual(recorded, [
      { id: '1', outcome: { type: 'done', runMs: 7 } },
      { id: '2', outcome: { type: 'done', runMs: 8, report: { result: '"r"', progress: undefined } } },
    ]);
    assert.deepEqual(freed, ['default']);
    assert.equal(dispatcher.size, 0);
  });

  it('decides retry or dead letter by the attempt', () => {
    const { dispatcher, sessions, recorded } = make();
    const [early, last] = [job(1, 1, 3), job(2, 3, 3)];
    dispatcher.add([early, last]);
    sessions[0]?.answer([early, taskError], [last, taskError]);
    assert.deepEqual(
      recorded.map((r) => [r.id, r.outcome.type]),
      [
        ['1', 'retry'],
        ['2', 'dead'],
      ],
    );
    const first = recorded[0]?.outcome;
    assert.ok(first?.type === 'retry', `expected type retry, got ${first?.type}`);
    assert.equal(first.failure.error, 'TypeError: boom');
  });

  it('sends an oversized payload through the report path as a dead letter, never to a thread', () => {
    const { dispatcher, sessions, recorded } = make();
    dispatcher.add([job(1, 1, 3, null), job(2)]);
    assert.deepEqual(
      sessions.flatMap((s) => s.received.map((j) => j.id)),
      ['2'],
    );
    const [oversized] = recorded;
    assert.equal(oversized?.id, '1');
    assert.ok(oversized.outcome.type === 'dead', `expected type dead, got ${oversized.outcome?.type}`);
    assert.equal(oversized.outcome.failure.permanent, true);
    assert.match(
      oversized.outcome.failure.error,
      /^PayloadTooLarge: the payload is 2000 bytes of JSON, over jobs\.maxPayloadBytes \(1024\)/,
    );
  });

  it('hands back jobs a fetcher will not deliver through the same path, holding nothing', () => {
    const { dispatcher, sessions, recorded } = make();
    dispatcher.handBack([job(1), job(2)], 'queue paused');
    assert.equal(sessions.length, 0);
    assert.equal(dispatcher.size, 0);
    assert.deepEqual(recorded, [
      { id: '1', outcome: { type: 'release', reason: 'queue paused' } },
      { id: '2', outcome: { type: 'release', reason: 'queue paused' } },
    ]);
  });

  it('releases the buffered jobs of a paused queue; the running one goes on', () => {
    const { dispatcher, sessions, recorded } = make({ concurrency: 1 });
    const [a, b] = [job(1), job(2)];
    dispatcher.add([a, b]);
    dispatcher.releaseBuffered('default');
    assert.deepEqual(recorded, [{ id: '2', outcome: { type: 'release', reason: 'queue paused' } }]);
    sessions[0]?.answer([a, success]);
    assert.deepEqual(
      recorded.map((r) => r.outcome.type),
      ['release', 'done'],
    );
  });

  it('stops a run whose lease was lost, records nothing for it, and reports lease:lost', () => {
    const { dispatcher, sessions, recorded, lost } = make();
    const a = job(1);
    dispatcher.add([a]);
    dispatcher.leaseLost([a.token]);
    assert.deepEqual(sessions[0]?.aborts, [{ token: 't1', reason: 'lease-lost' }]);
    sessions[0]?.answer([a, success]);
    assert.deepEqual(recorded, []);
    assert.deepEqual(lost, ['1']);
  });

  it('records a thread death as a failure of every run on it, once each', () => {
    const { dispatcher, sessions, recorded, events } = make();
    const died: string[] = [];
    events.on('thread:died', (e) => died.push(e.error));
    const [a, b] = [job(1), job(2)];
    dispatcher.add([a, b]);
    sessions[0]?.die(new Error('kaput'));
    // A result arriving after the death changes nothing: each run's outcome is decided once.
    sessions[0]?.answer([a, success]);
    assert.deepEqual(
      recorded.map((r) => [r.id, r.outcome.type]),
      [
        ['1', 'retry'],
        ['2', 'retry'],
      ],
    );
    const first = recorded[0]?.outcome;
    assert.ok(first?.type === 'retry', `expected type retry, got ${first?.type}`);
    assert.match(first.failure.error, /^WorkerCrashed: .*kaput/);
    assert.deepEqual(died, ['kaput']);
  });

  it('at shutdown hands back what has not started and releases aborted runs', () => {
    const { dispatcher, sessions, recorded } = make({ concurrency: 1 });
    const [a, b] = [job(1), job(2)];
    dispatcher.add([a, b]);
    dispatcher.drainBuffers();
    dispatcher.abortAll();
    assert.deepEqual(sessions[0]?.aborts, [{ token: 't1', reason: 'shutdown' }]);
    sessions[0]?.answer([a, taskError]);
    assert.deepEqual(recorded, [
      { id: '2', outcome: { type: 'release', reason: 'shutdown before start' } },
      { id: '1', outcome: { type: 'release', reason: 'aborted by shutdown' } },
    ]);
  });
});
