/** What a Supervisor (supervisor.ts) is built from. */
import type pg from 'pg';
import type { Settings } from '../config/index.ts';
import type { Logger } from '../log.ts';

/** `new Supervisor(options)`: settings, the database, the logger, and what run() adds. */
export interface SupervisorOptions {
  settings: Settings;
  databaseUrl: string;
  log: Logger;
  /** Connection pool to use (default: one made from databaseUrl and database.poolSize). */
  pool?: pg.Pool;
  /** The app's tasks by kind (absolute paths), looked up before tasks.dir and the built-in tasks. */
  taskFiles?: Record<string, string>;
  /** Under a cluster primary: its id and this process's slot, for the supervisors table. */
  cluster?: { primary: string; slot: number };
}
