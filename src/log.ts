/**
 * The one pino factory. JSON lines on stdout; pretty when stdout is a terminal
 * and pino-pretty is installed. Connection strings and passwords are redacted
 * by path, and `safeUrl` strips credentials from any URL a message needs.
 */
import { createRequire } from 'node:module';
import pino, { type Logger } from 'pino';

export type { Logger };

/** Log fields never written, on the main thread and in worker threads (task logs) alike. */
export const REDACT = [
  'password',
  '*.password',
  'databaseUrl',
  '*.databaseUrl',
  'connectionString',
  '*.connectionString',
  'url',
  '*.url',
  'database.url',
  '*.database.url',
  'env.DATABASE_URL',
  '*.env.DATABASE_URL',
];

/** pino's `redact` option for every logger of jobvisor. */
export const REDACT_OPTIONS = { paths: REDACT, censor: '[redacted]' };

export function createLogger(options: { level?: string; name?: string; pretty?: boolean; fd?: 1 | 2 } = {}): Logger {
  const fd = options.fd ?? 1;
  const stream = fd === 1 ? process.stdout : process.stderr;
  const pretty = options.pretty ?? (stream.isTTY === true && hasPinoPretty());
  return pino(
    {
      name: options.name ?? 'jobvisor',
      level: options.level ?? 'info',
      redact: REDACT_OPTIONS,
      serializers: { err: serializeError },
      ...(pretty
        ? {
            transport: {
              target: 'pino-pretty',
              options: { destination: fd, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' },
            },
          }
        : {}),
    },
    pretty ? undefined : pino.destination({ dest: fd, sync: true }),
  );
}

/**
 * pino's error serializer without `client`: pg-pool attaches the whole pg Client
 * (kilobytes of type parsers and connection parameters) to every error of an
 * idle connection, which turned each such line into ~9 KB.
 */
export function serializeError(err: Error): Record<string, unknown> {
  const out = pino.stdSerializers.err(err) as unknown as Record<string, unknown>;
  if (out && typeof out === 'object') delete out.client;
  return out;
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
