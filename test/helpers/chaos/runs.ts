/**
 * Executions as the task saw them: the start/end lines failover_run.js
 * appends ("<id> <attempt> <pid> start|end <ms since the epoch>"), read back
 * to count how often, and whether at the same time, each job ran.
 */
import { readFileSync } from 'node:fs';

export interface Run {
  start: number;
  end: number | undefined;
  pid: number;
}

export function runsOf(file: string): Map<string, Run[]> {
  const runs = new Map<string, Run[]>();
  const open = new Map<string, Run>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [id, attempt, pid, what, at] = line.split(' ');
    if (!id || !at) continue;
    const key = `${id}:${attempt}:${pid}`;
    if (what === 'start') {
      const run = { start: Number(at), end: undefined, pid: Number(pid) };
      open.set(key, run);
      runs.set(id, [...(runs.get(id) ?? []), run]);
    } else {
      const run = open.get(key);
      if (run) run.end = Number(at);
    }
  }
  return runs;
}

/** Executions that overlap an earlier one of the same job; a run never ended lasts until `killedAt` (its process died). */
export function overlaps(runs: Map<string, Run[]>, killedPid: number, killedAt: number): number {
  let n = 0;
  for (const list of runs.values()) {
    const sorted = [...list].sort((a, b) => a.start - b.start);
    let lastEnd = -Infinity;
    for (const r of sorted) {
      if (r.start < lastEnd) n++;
      const end = r.end ?? (r.pid === killedPid ? killedAt : Infinity);
      lastEnd = Math.max(lastEnd, end);
    }
  }
  return n;
}
