/** `jobvisor bench`: see bench/README.md. */
export async function benchCommand(argv: string[]): Promise<number> {
  const { runBench } = await import('../bench/run.ts');
  return runBench(argv);
}
