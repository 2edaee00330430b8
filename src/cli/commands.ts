/**
 * Every `jobvisor` command, described once: `--help`, `jobvisor help COMMAND`,
 * the usage summary and the command table of docs/reference/cli.md (npm run docs:reference)
 * are all made from this list. A command's own parser must accept the options
 * named here (test/cli_help.test.ts checks that each answers --help).
 */

export interface OptionSpec {
  /** As typed, with its value: `--queue Q`. */
  flag: string;
  meaning: string;
  /** Shown as "(default: …)". */
  default?: string;
}

export interface CommandSpec {
  /** `jobs list` for a subcommand. */
  name: string;
  /** The arguments after the name. */
  args: string;
  summary: string;
  options: OptionSpec[];
  example: string;
  /** Extra lines after the options. */
  notes?: string[];
}

const json: OptionSpec = { flag: '--json', meaning: 'print JSON instead of a table' };

export const COMMAND_SPECS: CommandSpec[] = [
  {
    name: 'migrate',
    args: '',
    summary: 'apply database migrations (under an advisory lock; safe from several replicas at once)',
    options: [],
    example: 'DATABASE_URL=postgres://… jobvisor migrate',
  },
  {
    name: 'start',
    args: '[--migrate] [--processes N|auto]',
    summary: 'run a supervisor until SIGTERM/SIGINT, which drain it and exit 0 (a second signal forces)',
    options: [
      {
        flag: '--migrate',
        meaning:
          'apply migrations first (always done with the embedded database); otherwise wait, not ready, until migrated',
      },
      {
        flag: '--processes N|auto',
        meaning:
          'cluster.processes: a primary forks N supervisor processes, restarts and recycles them, serves one /metrics',
        default: '1',
      },
    ],
    example: 'JOBVISOR_CONFIG=./jobvisor.json jobvisor start',
    notes: [
      "Config read, later wins: jobvisor's own config/default.json, config/demo.json (in its repository",
      "and image only) and config/$NODE_ENV.json, then the app's file: JOBVISOR_CONFIG, else",
      './jobvisor.config.json, else ./config/jobvisor.json (in the working directory), then the',
      "environment. The app's ./config/default.json is not read (a warning says so). A named file that",
      'is missing, or any file that is invalid, stops start-up (exit 2), as do a missing tasks folder',
      'and a task that cannot be imported (exit 1 when its module throws). One line at start names the',
      'task kinds served: tasks.dir and the built-in tasks of tasks.builtins (none unless listed).',
    ],
  },
  {
    name: 'enqueue',
    args: 'KIND [JSON] [options]',
    summary: 'add one job and print its id (a duplicate --unique-key prints the existing id, exit 0)',
    options: [
      {
        flag: '--queue Q',
        meaning: 'queue name',
        default: "the task's options.queue if the config serves it, else default",
      },
      { flag: '--priority N', meaning: 'lower runs first, -1000000 … 1000000', default: '0' },
      { flag: '--run-at ISO', meaning: 'not before this time' },
      { flag: '--delay D', meaning: 'not before now + D ("10s", "5m" or ms)' },
      {
        flag: '--max-attempts N',
        meaning: 'attempts before the job is dead-lettered',
        default: 'jobs.maxAttempts (8)',
      },
      { flag: '--unique-key K', meaning: 'at most one job per (kind, key) while the row exists' },
      {
        flag: '--concurrency-key K',
        meaning: "the key of the queue's per-key limits (perKeyConcurrency, rateLimit.perKey)",
      },
      { flag: '--depends-on ID,ID', meaning: 'wait (status blocked) until these jobs are done' },
      {
        flag: '--on-parent-failure P',
        meaning: 'when a parent is dead-lettered or cancelled: cancel this job, or run it anyway',
        default: 'cancel',
      },
      { flag: '--json', meaning: 'print { id, duplicate } as JSON' },
    ],
    example: `jobvisor enqueue welcome_email '{"user_id": 1}' --delay 10s`,
  },
  {
    name: 'stats',
    args: '[--all] [--json]',
    summary:
      'job counts by queue, kind and status (done and cancelled: those of the last hour); the oldest pending job’s age; paused queues; the supervisors alive',
    options: [{ flag: '--all', meaning: 'count every done and cancelled row kept (reads the whole table)' }, json],
    example: 'jobvisor stats --json',
  },
  {
    name: 'jobs list',
    args: '[options]',
    summary: 'list jobs, newest first',
    options: [
      { flag: '--status S', meaning: 'pending, running, done, failed, cancelled, blocked or waiting' },
      { flag: '--kind K', meaning: 'only this kind' },
      { flag: '--queue Q', meaning: 'only this queue' },
      { flag: '--limit N', meaning: 'at most N rows, 1 … 10000', default: '50' },
      json,
    ],
    example: 'jobvisor jobs list --status failed --kind thumbnail',
  },
  {
    name: 'jobs show',
    args: 'ID [--json]',
    summary:
      'one job: payload, owner, lease, error history, timeline, and its parents and dependents (workflows) with their statuses',
    options: [json],
    example: 'jobvisor jobs show 42',
  },
  {
    name: 'jobs retry',
    args: 'ID... [--with-dependents] | --failed [--kind K] [--limit N]',
    summary:
      're-queue dead letters and cancelled jobs (attempts back to 0, due now; blocked again if they have parents)',
    options: [
      {
        flag: '--with-dependents',
        meaning: 'also the jobs cancelled because these failed, all the way down (blocked until these are done)',
      },
      { flag: '--failed', meaning: 'every dead letter instead of the ids given, in batches' },
      { flag: '--kind K', meaning: 'with --failed: only this kind' },
      { flag: '--limit N', meaning: 'with --failed: at most N of them, lowest ids first' },
    ],
    example: 'jobvisor jobs retry --failed --kind thumbnail',
  },
  {
    name: 'jobs cancel',
    args: 'ID...',
    summary:
      'cancel pending, blocked, waiting and running jobs (a running job is aborted at its next heartbeat); their dependents are cancelled too',
    options: [],
    example: 'jobvisor jobs cancel 42 43',
  },
  {
    name: 'jobs run-now',
    args: 'ID...',
    summary: 'make pending jobs that are not yet due due now; a waiting job (ctx.waitFor) times out now',
    options: [],
    example: 'jobvisor jobs run-now 42',
  },
  {
    name: 'jobs signal',
    args: 'ID NAME [JSON]',
    summary:
      'send job ID the signal NAME its ctx.waitFor(NAME) waits for, with JSON as its payload; a finished, cancelled or missing job is an error',
    options: [{ flag: '--ignore-finished', meaning: 'a finished, cancelled or missing job is not an error (exit 0)' }],
    example: `jobvisor jobs signal 42 approved '{"by":"ann"}'`,
  },
  {
    name: 'jobs delete',
    args: 'ID... [--force] | --failed [--kind K] [--older-than D]',
    summary: 'delete jobs, or dead letters in batches; a running job is never deleted (cancel it first)',
    options: [
      {
        flag: '--force',
        meaning: 'also parents whose dependents have not finished (their blocked dependents are cancelled)',
      },
      { flag: '--failed', meaning: 'every dead letter instead of the ids given' },
      { flag: '--kind K', meaning: 'with --failed: only this kind' },
      { flag: '--older-than D', meaning: 'with --failed: only those that failed more than D ago ("7d")' },
    ],
    example: 'jobvisor jobs delete --failed --kind thumbnail --older-than 7d',
  },
  {
    name: 'queues list',
    args: '[--json]',
    summary: 'queues with pending, running or blocked jobs, or ever paused: active or paused, and their counts',
    options: [json],
    example: 'jobvisor queues list',
  },
  {
    name: 'queues pause',
    args: 'Q',
    summary:
      'stop every supervisor claiming from queue Q within a second (stored: survives restarts); running jobs finish',
    options: [],
    example: 'jobvisor queues pause mail',
  },
  {
    name: 'queues resume',
    args: 'Q',
    summary: 'let every supervisor claim from queue Q again, at once',
    options: [],
    example: 'jobvisor queues resume mail',
  },
  {
    name: 'bench',
    args: '[options]',
    summary: 'measure throughput and pickup latency against the configured database (see BENCHMARKS.md)',
    options: [
      {
        flag: '--scenario LIST',
        meaning:
          'comma-separated: burst, cold, startup, enqueue, process, processes, pickup, deep, sustained, limits, perkey, fanin, chain, workflows, history, steps, sleepers, signals',
        default: 'burst,cold,startup,pickup',
      },
      { flag: '--burst-jobs LIST', meaning: 'jobs in each one-statement burst', default: '20000,100000' },
      {
        flag: '--configs LIST',
        meaning:
          'configurations of the burst and cold scenarios: concurrency-only, tuned, tuned-keep-none (tuned, done jobs deleted at completion)',
        default: 'concurrency-only,tuned,tuned-keep-none',
      },
      { flag: '--jobs N', meaning: 'jobs per run', default: '20000' },
      { flag: '--concurrency N', meaning: "the bench queue's concurrency", default: '50' },
      { flag: '--threads N', meaning: 'worker threads', default: '1' },
      { flag: '--jobs-per-thread N', meaning: 'jobs sharing a thread', default: 'the concurrency' },
      { flag: '--prefetch N', meaning: 'jobs claimed ahead', default: '2000' },
      { flag: '--processes N', meaning: 'supervisor processes in the processes scenario', default: '3' },
      {
        flag: '--keys N',
        meaning: 'keys the perkey scenario spreads its jobs over, one at a time per key',
        default: '1000',
      },
      { flag: '--runs N', meaning: 'runs per scenario (the median is reported)', default: '3' },
      { flag: '--samples N', meaning: 'pickup samples', default: '200' },
      { flag: '--deep-pending N', meaning: 'pending rows in the deep scenario', default: '1000000' },
      { flag: '--deep-done N', meaning: 'finished rows in the deep scenario', default: '5000000' },
      { flag: '--duration D', meaning: 'length of the sustained scenario', default: '10m' },
      {
        flag: '--retention D',
        meaning: 'in the sustained scenario, delete done rows older than D (cleanup every 10 s)',
        default: 'keep all',
      },
      { flag: '--fanin-parents N', meaning: 'parents of the fan-in job in the fanin scenario', default: '10000' },
      { flag: '--chain-length N', meaning: 'jobs in the chain scenario', default: '1000' },
      { flag: '--workflows N', meaning: 'workflows of 3 → 1 in the workflows scenario', default: '10000' },
      {
        flag: '--history-depths LIST',
        meaning: 'finished rows the history scenario grows its table through, from 0 (k and M allowed)',
        default: '0,5M,10M,20M',
      },
      { flag: '--sleep D', meaning: 'how long each job sleeps in the sleepers scenario', default: '5s' },
      { flag: '--peers LIST', meaning: 'other job systems to run beside: none, all or a list', default: 'none' },
      { flag: '--json', meaning: 'print results as JSON' },
    ],
    example: 'jobvisor bench --scenario burst --burst-jobs 20000 --configs concurrency-only',
  },
  {
    name: 'dashboard',
    args: '[--port N] [--host H]',
    summary:
      'serve the web dashboard (overview, jobs, dead letters, schedules; retry, cancel, run now, delete) until SIGTERM/SIGINT',
    options: [
      {
        flag: '--port N',
        meaning: 'port to listen on (0: a free one)',
        default: 'dashboard.port (9465, env DASHBOARD_PORT)',
      },
      { flag: '--host H', meaning: 'address to bind', default: 'dashboard.host (127.0.0.1)' },
    ],
    example: 'JOBVISOR_DASHBOARD_TOKEN_FILE=/run/secrets/dashboard-token jobvisor dashboard --host 0.0.0.0',
    notes: [
      'Credentials come only from JOBVISOR_DASHBOARD_TOKEN or JOBVISOR_DASHBOARD_TOKEN_FILE (bearer token, or the login form).',
      'A non-loopback --host without a token is refused. dashboard.readOnly answers 403 to every action.',
    ],
  },
  {
    name: 'demo',
    args: '',
    summary: 'the welcome_email practice run (embedded PostgreSQL when no DATABASE_URL)',
    options: [],
    example: 'npm run demo',
  },
];

/** The specs of a command: `jobs` gives all its `jobs …` subcommands (likewise `queues`). */
export function specsFor(name: string): CommandSpec[] {
  return COMMAND_SPECS.filter((c) => c.name === name || c.name.startsWith(`${name} `));
}
