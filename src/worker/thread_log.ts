/**
 * The logger of a task thread: the supervisor's name, level and redaction, each
 * line tagged with its trace, written through a stream that never waits for a
 * stalled stdout (log_stream.ts).
 */
import pino from 'pino';
import { LOG_BUFFER_BYTES, LOG_REDACTION, redactChildren } from '../log.ts';
import { createLogStream } from '../log_stream.ts';
import type { WorkerSetup } from './protocol.ts';
import { traceLogFields } from './tracing.ts';

export function threadLogger(setup: WorkerSetup): pino.Logger {
  return redactChildren(
    pino(
      {
        name: 'jobvisor',
        level: setup.logLevel,
        base: { supervisor: setup.supervisor },
        ...LOG_REDACTION,
        mixin: traceLogFields,
      },
      // Never wait for a stalled stdout: a task's log line must not hold its thread (log_stream.ts).
      createLogStream({ fd: 1, maxBytes: LOG_BUFFER_BYTES / 4 }),
    ),
  );
}
