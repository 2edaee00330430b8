/**
 * The thread that reads task options for the supervisor (supervisor/options_reader.ts).
 *
 * Reading a task's options means importing its module, and a module's top level
 * runs synchronously: sharp and the PDF libraries take 100–170 ms from dist/
 * (half a second from sources). Done here, that time blocks this thread instead
 * of the supervisor's main thread, which renews leases and answers probes.
 *
 * Messages: { id, kind } in; { id, options, problems } out, one per request.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { readOptionsOf, type OptionsRead } from './task_options.ts';

export interface OptionsRequest {
  id: number;
  kind: string;
}

export interface OptionsAnswer extends OptionsRead {
  id: number;
}

const port = parentPort;
const { dirs } = workerData as { dirs: string[] };

port?.on('message', (request: OptionsRequest) => {
  void readOptionsOf(dirs, request.kind).then((read) =>
    port.postMessage({ id: request.id, ...read } satisfies OptionsAnswer),
  );
});
