/**
 * The one pino factory. JSON lines on stdout; pretty when stdout is a terminal
 * and pino-pretty is installed. What a line holds under a secret's name is
 * redacted at any depth, and URLs lose their passwords (secrets.ts, which
 * says which names and why); `safeUrl` gives host and database alone.
 *
 * Lines go through a bounded buffer that never waits for the reader
 * (log_stream.ts): a stalled stdout costs log lines, counted
 * (`droppedLogLines`, the metric jobvisor_log_lines_dropped_total) and said
 * in one line once output moves again, never the event loop and so never a
 * lease. What is held is written at exit, for at most EXIT_FLUSH_MS.
 */
import { createRequire } from 'node:module';
import pino, { type Logger } from 'pino';
import { createLogStream, type LogStream } from './log_stream.ts';
import { redactSecrets } from './secrets.ts';

export type { Logger };

/**
 * pino's options that keep secrets out of every logger of jobvisor, on the
 * main thread and in worker threads (a task's ctx.log) alike: the logged
 * object, a child's bindings and a serialized `err` go through redactSecrets.
 * pino's own `redact` takes paths, and its wildcards reach one level: a
 * `password` two levels down, or any `token`, was printed.
 */
export const LOG_REDACTION = {
  formatters: {
    log: redactLogged,
    bindings: (obj: Record<string, unknown>) => redactSecrets(obj) as Record<string, unknown>,
  },
  serializers: { err: serializeError },
};

/** A logged object, redacted; its `err` is left to serializeError, which needs the Error itself. */
function redactLogged(obj: Record<string, unknown>): Record<string, unknown> {
  if (!(obj.err instanceof Error)) return redactSecrets(obj) as Record<string, unknown>;
  const { err, ...rest } = obj;
  return { ...(redactSecrets(rest) as Record<string, unknown>), err };
}

/**
 * `logger` whose children, and theirs, bind only redacted values: pino formats
 * a child's bindings with none of its root's formatters, so
 * `ctx.log.child({ token })` would print the token. Returns `logger`.
 */
export function redactChildren(logger: Logger): Logger {
  const proto = Object.getPrototypeOf(logger) as Pick<Logger, 'child'>;
  logger.child = function (this: Logger, bindings: Record<string, unknown>, options?: unknown) {
    return proto.child.call(this, redactSecrets(bindings) as Record<string, unknown>, options as never);
  } as Logger['child'];
  return logger;
}

/** Bytes of log lines held while the reader does not take them; lines beyond are dropped. */
export const LOG_BUFFER_BYTES = 1024 * 1024;
/** Longest wait at exit for a reader to take what is held. */
export const EXIT_FLUSH_MS = 1000;

const streams = new Set<LogStream>();

/** Log lines dropped so far in this process because the reader did not take them. */
export function droppedLogLines(): number {
  let n = 0;
  for (const s of streams) n += s.dropped;
  return n;
}

/** Writes every held log line, waiting at most `timeoutMs` in all. Synchronous: for exit paths. */
export function flushLogsSync(timeoutMs = EXIT_FLUSH_MS): void {
  const deadline = Date.now() + timeoutMs;
  for (const s of streams) s.flushSync(Math.max(0, deadline - Date.now()));
}

let exitHook = false;

function destination(fd: 1 | 2, log: () => Logger): LogStream {
  const stream = createLogStream({
    fd,
    maxBytes: LOG_BUFFER_BYTES,
    onResume: (dropped) =>
      log().warn({ dropped, droppedTotal: droppedLogLines() }, 'log output was stalled: lines dropped'),
  });
  streams.add(stream);
  if (!exitHook) {
    exitHook = true;
    // process.exit() and the end of the event loop; a hard exit calls flushLogsSync itself.
    process.on('exit', () => flushLogsSync());
  }
  return stream;
}

export function createLogger(options: { level?: string; name?: string; pretty?: boolean; fd?: 1 | 2 } = {}): Logger {
  const fd = options.fd ?? 1;
  const stream = fd === 1 ? process.stdout : process.stderr;
  const pretty = options.pretty ?? (stream.isTTY === true && hasPinoPretty());
  const logger: Logger = redactChildren(
    pino(
      {
        name: options.name ?? 'jobvisor',
        level: options.level ?? 'info',
        ...LOG_REDACTION,
        ...(pretty
          ? {
              transport: {
                target: 'pino-pretty',
                options: { destination: fd, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' },
              },
            }
          : {}),
      },
      pretty ? undefined : destination(fd, () => logger),
    ),
  );
  return logger;
}

/**
 * pino's error serializer without `client`: pg-pool attaches the whole pg Client
 * (kilobytes of type parsers and connection parameters) to every error of an
 * idle connection, which turned each such line into ~9 KB. Secrets redacted
 * as in any logged object (an error's own fields, a URL in its message).
 */
export function serializeError(err: Error): Record<string, unknown> {
  const out = pino.stdSerializers.err(err) as unknown as Record<string, unknown>;
  if (out && typeof out === 'object') delete out.client;
  return redactSecrets(out) as Record<string, unknown>;
}

function hasPinoPretty(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}

/** host:port/database of a connection string, without user or password. */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}${u.port ? `:${u.port}` : ''}${u.pathname}`;
  } catch {
    return '[unparsable url]';
  }
}
