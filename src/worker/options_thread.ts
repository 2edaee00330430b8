/**
 * The thread that reads task options for the supervisor (supervisor/build/options_reader.ts).
 *
 * Reading a task's options means importing its module, and a module's top level
 * runs synchronously: sharp and the PDF libraries take 100–170 ms from dist/
 * (half a second from sources). Done here, that time blocks this thread instead
 * of the supervisor's main thread, which renews leases and answers probes.
 *
 * Messages: { id, kind } in; { id, options, problems } out, one per request.
 * { id, kind, check: true } in (the start-up check, check_task.ts); { id, check } out.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { checkTask, type TaskCheck } from './check_task.ts';
import type { TaskSources } from './loader.ts';
import { readOptionsOf, type OptionsRead } from './task_options.ts';

export interface OptionsRequest {
  id: number;
  kind: string;
  check?: true;
}

export type OptionsAnswer = (OptionsRead & { id: number; check?: undefined }) | { id: number; check: TaskCheck };

const port = parentPort;
const { sources } = workerData as { sources: TaskSources };

port?.on('message', (request: OptionsRequest) => {
  if (request.check) {
    void checkTask(sources, request.kind).then((check) =>
      port.postMessage({ id: request.id, check } satisfies OptionsAnswer),
    );
    return;
  }
  void readOptionsOf(sources, request.kind).then((read) =>
    port.postMessage({ id: request.id, ...read } satisfies OptionsAnswer),
  );
});
