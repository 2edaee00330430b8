/**
 * Built-in task `thumbnail`: resize one source image to several widths.
 *
 * Payload: `{ "source": "<image path>", "widths": [320, 160], "outDir": "<folder>" }`.
 * Writes `<outDir>/<source name without extension>-<width>.<ext>` for each width,
 * aspect ratio kept, in the format of config `thumbnails.format` (WebP by default);
 * `outDir` defaults to config `thumbnails.dir`.
 *
 * Confined (support/confine.ts): `source` must lie inside one of config
 * `thumbnails.sourceRoots` (a relative source is taken from the first) and
 * `outDir` inside `thumbnails.dir` (a relative outDir is taken from it), also
 * once symbolic links are resolved; anything else is a `PermanentError`. Errors
 * show paths relative to those settings, never the server's absolute paths. A width larger than the source keeps
 * the source's size: thumbnails are never enlarged. Sources from several folders
 * that share a file name need an `outDir` each.
 *
 * Idempotent: every file is written under a temporary name and renamed, so a repeat
 * run of the same job rewrites the same files and a reader never sees half a file.
 * A bad payload, a missing source or one that cannot be decoded throws
 * `PermanentError` (dead letter at once); failures writing the output are ordinary
 * errors and are retried.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { OutputInfo } from 'sharp';
import { PermanentError } from '../worker/errors.ts';
import type { TaskContext, TaskOptions } from '../worker/types.ts';
import { writeFileAtomic } from './support/atomic_write.ts';
import { confine, confineReal, confinedMkdir, realRoot, scrubPaths, shown, type Root } from './support/confine.ts';
import { optionalPackage } from './support/optional_package.ts';
import { messageOf } from '../errors.ts';

/** CPU-bound: each job keeps a core busy, so it never shares a thread; `cpu` when enqueued without a queue. */
export const options: TaskOptions = { exclusiveThread: true, queue: 'cpu' };

// sharp is an optional peer dependency, imported by the first thumbnail job of a thread.
const loadSharp = optionalPackage('sharp', 'thumbnail', async () => {
  const { default: sharp } = await import('sharp');
  // One busy pool thread should cost about one core, so that `pool.maxThreads` is what
  // bounds CPU use. libvips would otherwise split each image across several threads of
  // its own (its default is one per core), and N pool threads would then run N × cores
  // threads that fight each other and the supervisor's main thread for the same cores.
  // Both settings are process-wide in libvips, so every worker thread sets the same.
  sharp.concurrency(1);
  // The operation cache keeps decoded images and open files for reuse; thumbnail jobs
  // rarely touch the same file twice, and that native memory is invisible to the
  // thread's V8 `resourceLimits`, so it is turned off.
  sharp.cache(false);
  return sharp;
});

export const MAX_WIDTHS = 32;
export const MAX_WIDTH = 10_000;

export const FORMATS = ['jpeg', 'png', 'webp', 'avif'] as const;
export type ThumbnailFormat = (typeof FORMATS)[number];
const EXTENSIONS: Record<ThumbnailFormat, string> = { jpeg: 'jpg', png: 'png', webp: 'webp', avif: 'avif' };

export interface ThumbnailPayload {
  /** Path of the source image (JPEG, PNG, WebP, AVIF, GIF, TIFF, SVG). */
  source: string;
  /** Target widths in pixels: 1 to 32 positive integers, each at most 10,000. */
  widths: number[];
  /** Folder for the thumbnails; config `thumbnails.dir` when absent. */
  outDir?: string;
}

export interface ThumbnailResult {
  files: { width: number; path: string; outputWidth: number; outputHeight: number }[];
}

/** Checks the payload's shape (duplicate widths are kept once); throws `PermanentError` naming the first bad field. */
export function parseThumbnailPayload(payload: unknown): ThumbnailPayload {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw new PermanentError('thumbnail payload must be an object like {"source": "...", "widths": [320]}');
  }
  const { source, widths, outDir } = payload as Record<string, unknown>;
  if (typeof source !== 'string' || source.trim() === '') {
    throw new PermanentError('thumbnail payload.source must be a non-empty path to an image file');
  }
  if (!Array.isArray(widths) || widths.length === 0 || widths.length > MAX_WIDTHS) {
    throw new PermanentError(`thumbnail payload.widths must be an array of 1 to ${MAX_WIDTHS} widths`);
  }
  widths.forEach((width, i) => {
    if (typeof width !== 'number' || !Number.isInteger(width) || width < 1 || width > MAX_WIDTH) {
      throw new PermanentError(
        `thumbnail payload.widths[${i}] must be an integer from 1 to ${MAX_WIDTH}, got ${JSON.stringify(width)}`,
      );
    }
  });
  if (outDir !== undefined && (typeof outDir !== 'string' || outDir.trim() === '')) {
    throw new PermanentError('thumbnail payload.outDir must be a non-empty folder path when present');
  }
  return { source, widths: [...new Set(widths as number[])], ...(outDir === undefined ? {} : { outDir }) };
}

function thumbnailFormat(format: string): ThumbnailFormat {
  if ((FORMATS as readonly string[]).includes(format)) return format as ThumbnailFormat;
  // A configuration mistake, not the job's: fixing the config and retrying helps.
  throw new Error(`config thumbnails.format must be one of ${FORMATS.join(', ')}, got ${JSON.stringify(format)}`);
}

/** Throws `PermanentError` when the source is missing or not a regular file; `name` is what errors show. */
async function checkSource(source: string, name: string): Promise<void> {
  let info;
  try {
    info = await stat(source);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new PermanentError(`thumbnail source not found: ${name}`, { cause: err });
    }
    throw err;
  }
  if (!info.isFile()) throw new PermanentError(`thumbnail source is not a file: ${name}`);
}

export default async function thumbnail(payload: unknown, ctx: TaskContext): Promise<ThumbnailResult> {
  const { dir, sourceRoots = [] } = ctx.config.thumbnails;
  const outRoot: Root = { label: 'thumbnails.dir', dir };
  const inRoots: Root[] = sourceRoots.map((d, i) => ({ label: `thumbnails.sourceRoots[${i}]`, dir: d }));
  try {
    return await run(payload, ctx, outRoot, inRoots);
  } catch (err) {
    // Server paths out of last_error: each root's absolute path becomes its setting's name.
    const all = [outRoot, ...inRoots];
    const resolved = await Promise.all(all.map(realRoot));
    if (!(err instanceof Error)) throw err;
    const message = scrubPaths(err.message, all, resolved);
    if (message === err.message) throw err;
    const permanent = (err as { permanent?: unknown }).permanent === true;
    throw Object.assign(new Error(message, { cause: err }), { name: err.name, permanent });
  }
}

async function run(payload: unknown, ctx: TaskContext, outRoot: Root, inRoots: Root[]): Promise<ThumbnailResult> {
  const parsed = parseThumbnailPayload(payload);
  const sharp = await loadSharp();
  const format = thumbnailFormat(ctx.config.thumbnails.format);
  const source = confine(parsed.source, inRoots, 'thumbnail payload.source');
  const outDir = confine(parsed.outDir ?? '.', [outRoot], 'thumbnail payload.outDir');
  const name = shown(source, inRoots);
  await checkSource(source, name);
  await confineReal(source, inRoots, 'thumbnail payload.source');
  await confinedMkdir(outDir, outRoot, 'thumbnail payload.outDir');
  const { widths } = parsed;
  const stem = path.basename(source, path.extname(source));

  const files: ThumbnailResult['files'] = [];
  for (const width of widths) {
    ctx.signal.throwIfAborted();
    let image: { data: Buffer; info: OutputInfo };
    try {
      // Everything up to the encoded bytes happens in memory, so an error here is
      // about the source (corrupt, truncated, not an image, too many pixels).
      // failOn 'warning' (sharp's default, stated on purpose): a truncated file
      // fails instead of yielding a thumbnail with a grey band.
      image = await sharp(source, { failOn: 'warning' })
        .autoOrient()
        .resize({ width, withoutEnlargement: true })
        .toFormat(format)
        .toBuffer({ resolveWithObject: true });
    } catch (err) {
      throw new PermanentError(`thumbnail source cannot be decoded as an image: ${name}: ${messageOf(err)}`, {
        cause: err,
      });
    }
    const file = path.join(outDir, `${stem}-${width}.${EXTENSIONS[format]}`);
    await writeFileAtomic(file, image.data);
    files.push({ width, path: file, outputWidth: image.info.width, outputHeight: image.info.height });
    ctx.log.debug({ file, width: image.info.width, height: image.info.height }, 'thumbnail written');
  }
  return { files };
}
