/**
 * An in-process supervisor with real worker threads, for tests that drive it
 * through events. Settings are the defaults plus the test's overrides, with
 * the fixture tasks folder.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, type Settings } from '../../src/config/index.ts';
import { createLogger } from '../../src/log.ts';
import type { Events } from '../../src/supervisor/events.ts';
import { Supervisor } from '../../src/supervisor/supervisor.ts';

export const FIXTURE_TASKS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/tasks');

export function testSettings(overrides: Record<string, unknown> = {}): Settings {
  return loadConfig({
    env: { NODE_ENV: 'test' },
    overrides: {
      tasks: { dir: FIXTURE_TASKS },
      metrics: { port: 0, host: '127.0.0.1' },
      poll: { interval: '500ms' },
      log: { level: process.env.TEST_LOG_LEVEL ?? 'silent' },
      ...overrides,
    },
  });
}

export function startSupervisor(databaseUrl: string, overrides: Record<string, unknown> = {}): Supervisor {
  const settings = testSettings(overrides);
  return new Supervisor({ settings, databaseUrl, log: createLogger({ level: settings.log.level, fd: 2 }) });
}

/** Resolves with the first event `name` whose payload passes `until` (default: any). */
export function nextEvent<K extends keyof Events>(
  supervisor: Supervisor,
  name: K,
  until: (...args: Events[K]) => boolean = () => true,
  timeoutMs = 15_000,
): Promise<Events[K]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      supervisor.events.off(name, listener as never);
      reject(new Error(`no ${String(name)} event within ${timeoutMs} ms`));
    }, timeoutMs);
    const listener = (...args: Events[K]) => {
      if (!until(...args)) return;
      clearTimeout(timer);
      supervisor.events.off(name, listener as never);
      resolve(args);
    };
    supervisor.events.on(name, listener as never);
  });
}

/** Event names whose first argument lists the jobs it is about. */
type JobsEventName = {
  [K in keyof Events]: Events[K] extends [{ jobs: ReadonlyArray<{ id: string }> }, ...unknown[]] ? K : never;
}[keyof Events];

/**
 * Enqueues through `enqueueIt` and resolves with the job's id and the first
 * `name` event naming it. Events are gathered from before the enqueue: the
 * supervisor can claim, run and report the job before the enqueue's own
 * promise settles (on a loaded machine it did), while its id is not known yet.
 */
export async function enqueuedThen<K extends JobsEventName>(
  supervisor: Supervisor,
  name: K,
  enqueueIt: () => Promise<{ id: string }>,
  timeoutMs = 15_000,
): Promise<{ id: string; event: Events[K] }> {
  const seen: Array<Events[K]> = [];
  const gather = (...args: Events[K]) => void seen.push(args);
  supervisor.events.on(name, gather as never);
  try {
    const { id } = await enqueueIt();
    const names = (args: Events[K]) =>
      (args[0] as { jobs: ReadonlyArray<{ id: string }> }).jobs.some((j) => j.id === id);
    // Checked and, when absent, awaited in one turn: no event can come in between.
    const event = seen.find(names) ?? (await nextEvent(supervisor, name, (...args) => names(args), timeoutMs));
    return { id, event };
  } finally {
    supervisor.events.off(name, gather as never);
  }
}
