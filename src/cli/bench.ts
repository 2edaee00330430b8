/**
 * `jobvisor bench`: see BENCHMARKS.md. The history scenario times the
 * operator's reads (the dashboard's Overview, `jobvisor stats`), which the
 * bench may not import (scripts/eslint-layers.js): they are handed in here.
 */
export async function benchCommand(argv: string[]): Promise<number> {
  const [{ runBench }, { overview, throughput }, { readStats }] = await Promise.all([
    import('../bench/run.ts'),
    import('../queue/admin/index.ts'),
    import('./stats.ts'),
  ]);
  return runBench(argv, {
    overview: (store) => overview(store),
    throughput: (store, range) => throughput(store, range),
    stats: readStats,
  });
}
