/**
 * The start-up check of one task: is its module there, and does it import
 * with a default export function? Run in the options thread, which loads
 * modules the way worker threads do (same loader, same TypeScript handling),
 * so a module that passes here loads for its jobs too. Never rejects.
 */
import { loadTask, TaskLoadError, type TaskLoadReason, type TaskPlaces } from './loader.ts';
import { messageOf } from '../errors.ts';

export type TaskCheck = { ok: true } | { ok: false; reason: TaskLoadReason; message: string };

export async function checkTask(places: TaskPlaces, kind: string): Promise<TaskCheck> {
  try {
    await loadTask(places, kind);
    return { ok: true };
  } catch (err) {
    const reason = err instanceof TaskLoadError ? err.reason : 'import-failed';
    return { ok: false, reason, message: messageOf(err) };
  }
}
