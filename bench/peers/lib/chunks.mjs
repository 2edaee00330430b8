// Sends a list in chunks of `size` (0 = all at once) with `parallel` chunks in flight.
export async function inChunks(items, size, parallel, send) {
  if (size <= 0 || size >= items.length) return send(items);
  const chunks = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  const lanes = Array.from({ length: Math.max(1, parallel) }, async () => {
    for (let chunk = chunks.shift(); chunk; chunk = chunks.shift()) await send(chunk);
  });
  await Promise.all(lanes);
}

/** How a bulk enqueue was sent, for the config block of the result. */
export const describeChunks = (call, size, parallel) =>
  size > 0 ? `${call} in chunks of ${size}, ${parallel} at a time` : `${call} with all N jobs in one call`;
