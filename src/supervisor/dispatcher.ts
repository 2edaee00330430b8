/**
 * The dispatcher moved to ./dispatch/. This re-export keeps the completer's
 * import of the outcome sink working; import from ./dispatch/ in new code.
 */
export type { Failure, OutcomeSink } from './dispatch/sink.ts';
export { Dispatcher } from './dispatch/dispatcher.ts';
