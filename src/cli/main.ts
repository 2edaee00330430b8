/**
 * The `jobvisor` command. Exit status: 0 success, 2 bad usage or bad input
 * (one line naming what is wrong; nothing written), 1 any other failure.
 */
import { ConfigError, InputError, TaskSetupError } from '../errors.ts';
import { VERSION } from '../version.ts';
import { specsFor } from './commands.ts';
import { commandHelp, usage } from './help.ts';

type Command = (argv: string[]) => Promise<number>;

const COMMANDS: Record<string, () => Promise<Command>> = {
  migrate: async () => (await import('./migrate.ts')).migrateCommand,
  start: async () => (await import('./start.ts')).startCommand,
  enqueue: async () => (await import('./enqueue.ts')).enqueueCommand,
  stats: async () => (await import('./stats.ts')).statsCommand,
  jobs: async () => (await import('./jobs.ts')).jobsCommand,
  queues: async () => (await import('./queues.ts')).queuesCommand,
  bench: async () => (await import('./bench.ts')).benchCommand,
  demo: async () => (await import('./demo.ts')).demoCommand,
  dashboard: async () => (await import('./dashboard.ts')).dashboardCommand,
};

/** Every command `main` runs; each must have an entry in COMMAND_SPECS (test/cli_help.test.ts). */
export const COMMAND_NAMES = Object.keys(COMMANDS);

/** The contract is one line per error, whatever text a message quotes. */
function oneLine(message: string): string {
  return message.replace(/\s*[\r\n]+\s*/g, ' ');
}

/** `--help` or `-h` among the arguments (before a `--`). */
function wantsHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/** Prints a command's help: exit 0, or 2 for an unknown command. */
function help(name: string): number {
  const specs = specsFor(name);
  if (specs.length === 0) {
    process.stderr.write(`jobvisor: unknown command ${JSON.stringify(name)} (run jobvisor --help)\n`);
    return 2;
  }
  process.stdout.write(commandHelp(specs));
  return 0;
}

/** Runs one command; returns the exit status (never throws). */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === 'help' && rest.length > 0) return help(rest.join(' '));
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(usage());
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
  if (wantsHelp(rest))
    return help(
      (name === 'jobs' || name === 'queues') && rest[0] && !rest[0].startsWith('-') ? `${name} ${rest[0]}` : name,
    );
  try {
    return await (
      await load()
    )(rest);
  } catch (err) {
    if (err instanceof InputError || err instanceof ConfigError || (err instanceof TaskSetupError && err.badConfig)) {
      process.stderr.write(`jobvisor: ${oneLine(err.message)}\n`);
      return 2;
    }
    const e = err as Error & { code?: string };
    process.stderr.write(`jobvisor: ${oneLine(e.message ?? String(err))}${e.code ? ` (${e.code})` : ''}\n`);
    return 1;
  }
}
