/**
 * The `jobvisor` command. Exit status: 0 success, 2 bad usage or bad input
 * (one line naming what is wrong; nothing written), 1 any other failure.
 */
import { ConfigError, InputError } from '../errors.ts';
import { VERSION } from '../version.ts';

const USAGE = `usage: jobvisor <command> [options]

  migrate                     apply database migrations
  start [--migrate]           run a supervisor (SIGTERM/SIGINT drain it and exit 0)
  enqueue KIND [JSON] [--queue Q] [--priority N] [--run-at ISO | --delay 10s]
                 [--max-attempts N] [--unique-key K] [--json]
  stats [--json]              counts by queue, kind and status; oldest pending age
  jobs list [--status S] [--kind K] [--queue Q] [--limit N] [--json]
  jobs retry ID... | --failed [--kind K]
  jobs cancel ID...
  bench [--jobs N] [--concurrency N] [--json] [...]
  demo                        the welcome_email practice run

configuration: config/default.json, config/$NODE_ENV.json, $JOBVISOR_CONFIG, environment
`;

type Command = (argv: string[]) => Promise<number>;

const COMMANDS: Record<string, () => Promise<Command>> = {
  migrate: async () => (await import('./migrate.ts')).migrateCommand,
  start: async () => (await import('./start.ts')).startCommand,
  enqueue: async () => (await import('./enqueue.ts')).enqueueCommand,
  stats: async () => (await import('./stats.ts')).statsCommand,
  jobs: async () => (await import('./jobs.ts')).jobsCommand,
  bench: async () => (await import('./bench.ts')).benchCommand,
  demo: async () => (await import('./demo.ts')).demoCommand,
};

/** The contract is one line per error, whatever text a message quotes. */
function oneLine(message: string): string {
  return message.replace(/\s*[\r\n]+\s*/g, ' ');
}

/** Runs one command; returns the exit status (never throws). */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(USAGE);
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-v') {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const load = COMMANDS[name];
  if (!load) {
    process.stderr.write(`jobvisor: unknown command ${JSON.stringify(name)} (run jobvisor --help)\n`);
    return 2;
  }
  try {
    return await (
      await load()
    )(rest);
  } catch (err) {
    if (err instanceof InputError || err instanceof ConfigError) {
      process.stderr.write(`jobvisor: ${oneLine(err.message)}\n`);
      return 2;
    }
    const e = err as Error & { code?: string };
    process.stderr.write(`jobvisor: ${oneLine(e.message ?? String(err))}${e.code ? ` (${e.code})` : ''}\n`);
    return 1;
  }
}
