/**
 * The supervisor's knowledge of its tasks' options, read one kind at a time.
 *
 * The dispatcher must know whether a kind is exclusive before it places a job
 * of it, and reading options means importing the task's module. Importing every
 * task at start put sharp and the PDF libraries (about 170 ms of main-thread
 * work from dist/, 0.5 s from sources) in front of the first job of any kind.
 * Now the first job of a kind waits only for its own module; the other kinds
 * are read later (readAll), for the queue defaults and warnings they carry.
 * Each kind is read once, and its problems are reported once. The supervisor
 * reads them in a thread of its own (options_reader.ts), never on its main thread.
 */
import {
  discoverTaskOptions,
  readOptionsOf,
  type OptionsRead,
  type ResolvedTaskOptions,
} from '../../worker/task_options.ts';
import type { TaskPlaces } from '../../worker/loader.ts';

/** Reads one kind's options; the default imports its module in this thread. */
export type ReadOptions = (kind: string) => Promise<OptionsRead>;

export class TaskCatalog {
  /** Options by kind; null when the kind declares none (or cannot be read). */
  private readonly known = new Map<string, ResolvedTaskOptions | null>();
  private readonly reading = new Map<string, Promise<ResolvedTaskOptions | null>>();

  constructor(
    private readonly dirs: TaskPlaces,
    private readonly onProblem: (message: string) => void,
    /** Called each time a kind becomes known. */
    private readonly onKnown: (kind: string, options: ResolvedTaskOptions | null) => void,
    private readonly readOptions: ReadOptions = (kind) => readOptionsOf(dirs, kind),
  ) {}

  /** The kind's options, null when it declares none; undefined while unknown (reading starts now). */
  get(kind: string): ResolvedTaskOptions | null | undefined {
    if (this.known.has(kind)) return this.known.get(kind);
    void this.read(kind);
    return undefined;
  }

  /** Reads the kind once; later calls share the first read. */
  read(kind: string): Promise<ResolvedTaskOptions | null> {
    let pending = this.reading.get(kind);
    if (!pending) {
      pending = this.readOptions(kind).then(({ options, problems }) => {
        for (const problem of problems) this.onProblem(problem);
        this.known.set(kind, options);
        this.onKnown(kind, options);
        return options;
      });
      this.reading.set(kind, pending);
    }
    return pending;
  }

  /** Reads every kind in the folders (earlier folders win, as in the loader). */
  readAll(): Promise<Map<string, ResolvedTaskOptions>> {
    return discoverTaskOptions(this.dirs, this.onProblem, (kind) => this.read(kind));
  }
}
