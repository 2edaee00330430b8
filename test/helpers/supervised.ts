/**
 * The set-up most integration files share: one cloned database and one
 * in-process supervisor for the whole file, made in before() and stopped and
 * dropped in after(). `prepare` runs on the database before the supervisor
 * starts (tables the fixture tasks write to); `beforeStart` sees the
 * supervisor before it claims (listeners that must miss nothing).
 *
 *   const file = supervisedFile('snooze', { pool: { maxThreads: 1 } });
 *   it('…', async () => { await enqueue(file.db.pool, …); file.supervisor.events.on(…); });
 */
import { after, before } from 'node:test';
import type { Store } from '../../src/queue/sql.ts';
import type { Supervisor } from '../../src/supervisor/supervisor.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { startSupervisor } from './inprocess.ts';

/** The file's database and supervisor: read them inside tests and hooks, once before() has run. */
export interface SupervisedFile {
  readonly db: TestDatabase;
  readonly supervisor: Supervisor;
  /** The database as the queue functions take it (schema jobvisor). */
  readonly store: Store;
}

export function supervisedFile(
  name: string,
  overrides: Record<string, unknown> = {},
  hooks: {
    prepare?: (db: TestDatabase) => Promise<unknown>;
    beforeStart?: (supervisor: Supervisor) => void;
  } = {},
): SupervisedFile {
  let made: { db: TestDatabase; supervisor: Supervisor; store: Store } | undefined;
  const ready = () => {
    if (!made) throw new Error(`${name}: the database and supervisor exist once before() has run`);
    return made;
  };
  before(async () => {
    const db = await createTestDatabase(name);
    await hooks.prepare?.(db);
    const supervisor = startSupervisor(db.url, overrides);
    made = { db, supervisor, store: { db: db.pool, schema: 'jobvisor' } };
    hooks.beforeStart?.(supervisor);
    await supervisor.start();
  });
  after(async () => {
    // A before() that failed half-way leaves what it made: stop and drop that much.
    await made?.supervisor.stop();
    await made?.db.drop();
  });
  return {
    get db() {
      return ready().db;
    },
    get supervisor() {
      return ready().supervisor;
    },
    get store() {
      return ready().store;
    },
  };
}
