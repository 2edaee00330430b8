/** Small statistics for benchmark results. */
export function median(values: number[]): number {
  return quantile(values, 0.5);
}

export function quantile(values: number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return (sorted[lo] as number) + ((sorted[hi] as number) - (sorted[lo] as number)) * (pos - lo);
}

/** (max − min) / median, as a fraction. */
export function spread(values: number[]): number {
  if (values.length < 2) return 0;
  return (Math.max(...values) - Math.min(...values)) / median(values);
}
