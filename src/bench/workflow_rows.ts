/**
 * The rows of the workflow scenarios (fanin, chain, workflows; see
 * workflows.ts), run like the others: a fresh database per run, variants
 * round-robin.
 */
import type { BenchDatabase } from './database.ts';
import type { QueueShape } from './harness.ts';
import { makeRow, type RoundRobin, type Row } from './report.ts';
import { chain, fanIn, smallWorkflows } from './workflows.ts';

export interface WorkflowBench {
  runs: number;
  shape: QueueShape;
  faninParents: number;
  chainLength: number;
  workflows: number;
  fresh<T>(label: string, fn: (db: BenchDatabase) => Promise<T>): Promise<T>;
  roundRobin: RoundRobin;
  emit(row: Row): void;
}

export async function runWorkflowScenario(scenario: 'fanin' | 'chain' | 'workflows', b: WorkflowBench): Promise<void> {
  if (scenario === 'fanin') {
    const wal: number[] = [];
    const blocks: number[] = [];
    const unblock: number[] = [];
    for (let r = 0; r < b.runs; r++) {
      const x = await b.fresh('fanin', (db) => fanIn(db, b.faninParents, b.shape));
      unblock.push(x.unblockMs);
      wal.push(x.walBytesPerJob);
      blocks.push(x.blocksPerJob);
    }
    const extra = { parents: b.faninParents, shape: b.shape };
    b.emit(makeRow(`fanin ${b.faninParents} → 1: last parent done → fan-in start`, 'jobvisor', 'ms', unblock, extra));
    b.emit(makeRow(`fanin ${b.faninParents} → 1: WAL per job`, 'jobvisor', 'bytes', wal, extra));
    b.emit(makeRow(`fanin ${b.faninParents} → 1: blocks touched per job`, 'jobvisor', 'blocks', blocks, extra));
  } else if (scenario === 'chain') {
    const p50: number[] = [];
    const p95: number[] = [];
    for (let r = 0; r < b.runs; r++) {
      const x = await b.fresh('chain', (db) => chain(db, b.chainLength, b.shape));
      p50.push(x.p50Ms);
      p95.push(x.p95Ms);
    }
    const extra = { length: b.chainLength, shape: b.shape };
    b.emit(makeRow(`chain ${b.chainLength}: link p50 (parent done → child start)`, 'jobvisor', 'ms', p50, extra));
    b.emit(makeRow(`chain ${b.chainLength}: link p95 (parent done → child start)`, 'jobvisor', 'ms', p95, extra));
  } else {
    const processes = 2;
    const jobs = b.workflows * 4;
    await b.roundRobin(`workflows ${b.workflows} × (3 → 1) x${processes}`, 'jobs/s', [
      {
        system: 'jobvisor dependsOn',
        measure: () =>
          b.fresh('workflows', (db) => smallWorkflows(db, b.workflows, { plain: false, processes, shape: b.shape })),
        extra: { jobs, processes, shape: b.shape },
      },
      {
        system: `jobvisor ${jobs} without dependencies`,
        measure: () =>
          b.fresh('plain', (db) => smallWorkflows(db, b.workflows, { plain: true, processes, shape: b.shape })),
        extra: { jobs, processes, shape: b.shape },
      },
    ]);
  }
}
