/**
 * jobvisor's package root: the application API. Everything `jobvisor/client`
 * exports (enqueue, the admin API, pausing queues, migrate, the errors and the
 * types), and what an app writes its tasks and starts its worker with: `run`
 * (which loads the supervisor when it is called), `defineTask`, the errors a
 * task throws, the task and event types, the built-in tasks and the
 * configuration loader. Importing it loads no worker thread pool (piscina), no
 * metrics (prom-client) and no dashboard (hono):
 * test/packaging/package_entry_points.test.ts measures it from the packed package.
 *
 * `Supervisor` is in `jobvisor/worker` only, `createDashboard` in
 * `jobvisor/dashboard` (the root's is deprecated, see dashboard/lazy.ts).
 */
export * from './entry/client.ts';
export { run } from './run/lazy.ts';
export type { RunOptions, Runner } from './run/run.ts';
export * from './entry/app.ts';
export { createDashboard } from './dashboard/lazy.ts';
export type { DashboardHandler, DashboardOptions } from './dashboard/app.ts';
