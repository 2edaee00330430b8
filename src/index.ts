/**
 * jobvisor's public API: everything an app imports, the union of the entry
 * points an app may import instead to load less (src/entry/):
 * `jobvisor/client` (enqueue, the admin API, migrate, errors, types),
 * `jobvisor/worker` (run, defineTask, the task side) and `jobvisor/dashboard`.
 * A new export goes into one of them, and so reaches this root too.
 */
export * from './entry/client.ts';
export * from './entry/worker.ts';
export * from './entry/dashboard.ts';
