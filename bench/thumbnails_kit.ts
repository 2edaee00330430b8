/**
 * The parts of bench/thumbnails.ts that are not about jobvisor: its argument
 * check, the source photo it resizes, how a run is timed (its seconds and this
 * thread's event-loop delay meanwhile) and the machine it ran on.
 */
import { availableParallelism, cpus, totalmem } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import sharp from 'sharp';

/** `text` as an integer of at least `min`; otherwise says what --name takes and exits 2. */
export function positive(name: string, text: string, min = 1): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) {
    process.stderr.write(
      `--${name} must be ${min === 1 ? 'positive integers' : `integers from ${min}`}, got ${JSON.stringify(text)}\n`,
    );
    process.exit(2);
  }
  return n;
}

/** A photo-like JPEG of `width` x `height`: soft shapes on a gradient, with grain. */
export async function makeSource(width: number, height: number, file: string): Promise<void> {
  const shapes = Array.from(
    { length: 40 },
    (_, i) =>
      `<circle cx="${(i * 397) % width}" cy="${(i * 211) % height}" r="${60 + ((i * 37) % 220)}" fill="hsl(${(i * 47) % 360},70%,55%)" fill-opacity="0.6"/>`,
  ).join('');
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#1d3557"/><stop offset="1" stop-color="#f1faee"/></linearGradient></defs><rect width="100%" height="100%" fill="url(#g)"/>${shapes}</svg>`;
  const grain = await sharp({
    create: { width, height, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 12 } },
  })
    .png()
    .toBuffer();
  await sharp(Buffer.from(svg))
    .blur(1.5)
    .composite([{ input: grain, blend: 'soft-light' }])
    .jpeg({ quality: 88 })
    .toFile(file);
}

export interface Delay {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** Runs `fn` while recording this thread's event-loop delay. */
export async function withDelay<T>(fn: () => Promise<T>): Promise<{ result: T; delay: Delay }> {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  try {
    const result = await fn();
    return { result, delay: { p50Ms: h.percentile(50) / 1e6, p99Ms: h.percentile(99) / 1e6, maxMs: h.max / 1e6 } };
  } finally {
    h.disable();
  }
}

export type Run = { seconds: number; delay: Delay };

/** Keeps the faster of two runs. */
export function faster(a: Run | undefined, b: Run): Run {
  return a && a.seconds <= b.seconds ? a : b;
}

export function machine(): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  return `${availableParallelism()} cores (${cpu}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, sharp ${sharp.versions.sharp} / libvips ${sharp.versions.vips}`;
}
