/**
 * `jobvisor/worker`: what the process that runs jobs needs: `run()`, the
 * `Supervisor`, `defineTask`, the errors a task throws, the task and event
 * types, the built-in tasks and the configuration loader. It loads piscina (the
 * threads) and prom-client (the /metrics server); it does not load the
 * dashboard (hono).
 */
export { run } from '../run/run.ts';
export type { RunOptions, Runner } from '../run/run.ts';
export * from './app.ts';
export { Supervisor } from '../supervisor/supervisor.ts';
