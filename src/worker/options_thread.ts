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
import { readTaskOptions, type ResolvedTaskOptions } from './task_options.ts';

export interface OptionsRequest {
  id: number;
  kind: string;
}

export interface OptionsAnswer {
  id: number;
  options: ResolvedTaskOptions | null;
  problems: string[];
}

const port = parentPort;
const { dirs } = workerData as { dirs: string[] };

port?.on('message', (request: OptionsRequest) => {
  const problems: string[] = [];
  const answer = (options: ResolvedTaskOptions | null) =>
    port.postMessage({ id: request.id, options, problems } satisfies OptionsAnswer);
  // readTaskOptions reports what it cannot read through `problems` and resolves undefined.
  readTaskOptions(dirs, request.kind, (problem) => problems.push(problem)).then(
    (options) => answer(options ?? null),
    (err: unknown) => {
      problems.push(`task ${request.kind}: ${String(err)}; its options are ignored`);
      answer(null);
    },
  );
});
