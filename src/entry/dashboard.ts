/**
 * `jobvisor/dashboard`: the web dashboard as a fetch handler to mount in an
 * app's own server (Hono). The admin API it is built on is in `jobvisor/client`.
 */
export { createDashboard } from '../dashboard/app.ts';
export type { DashboardHandler, DashboardOptions } from '../dashboard/app.ts';
