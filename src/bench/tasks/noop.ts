/** The benchmark's no-op task: measures the queue, not the work. */
export default async function noop(): Promise<void> {}
