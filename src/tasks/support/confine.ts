/**
 * Paths from a payload, confined to configured folders ("roots").
 *
 * Anyone who can insert a job chooses its payload, so a task that takes paths
 * must not read or write wherever a payload points. A path is accepted only
 * when it lies inside a root both as written (no `..` escape) and once
 * symbolic links are resolved. Errors name paths relative to their root, with
 * the root's setting name as a label, so that server paths stay out of
 * `last_error`.
 */
import { mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { PermanentError } from '../../worker/errors.ts';

export interface Root {
  /** The setting that names it, shown instead of its absolute path: `thumbnails.dir`. */
  label: string;
  dir: string;
}

/** True when `child` is `parent` or lies below it (both absolute, normalised). */
export function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** `label/relative` for a path inside a root, else its base name only. */
export function shown(file: string, roots: readonly Root[]): string {
  for (const root of roots) {
    const dir = path.resolve(root.dir);
    if (isInside(file, dir)) return path.join(`<${root.label}>`, path.relative(dir, file));
  }
  return `…/${path.basename(file)}`;
}

/** `text` with every root's absolute path (as configured and as resolved) replaced by its label. */
export function scrubPaths(text: string, roots: readonly Root[], resolved: readonly Root[] = []): string {
  const pairs = [...roots, ...resolved]
    .map((r) => ({ dir: path.resolve(r.dir), label: `<${r.label}>` }))
    .filter((p) => p.dir !== path.parse(p.dir).root)
    .sort((a, b) => b.dir.length - a.dir.length);
  let out = text;
  for (const p of pairs) out = out.split(p.dir).join(p.label);
  return out;
}

/** A root's real path (symbolic links resolved); the resolved path as written when it does not exist. */
export async function realRoot(root: Root): Promise<Root> {
  const dir = path.resolve(root.dir);
  try {
    return { label: root.label, dir: await realpath(dir) };
  } catch {
    return { label: root.label, dir };
  }
}

/**
 * The absolute path of `file` (relative paths are taken from the first root),
 * if it lies inside one of `roots` as written. @throws PermanentError otherwise.
 */
export function confine(file: string, roots: readonly Root[], what: string): string {
  const first = roots[0];
  if (!first) throw new PermanentError(`${what} cannot be used: no folder is configured for it`);
  const abs = path.resolve(path.resolve(first.dir), file);
  if (!roots.some((r) => isInside(abs, path.resolve(r.dir))))
    throw new PermanentError(`${what} ${shown(abs, roots)} is outside ${roots.map((r) => r.label).join(', ')}`);
  return abs;
}

/** @throws PermanentError when `file` (which exists) leaves every root once symbolic links are resolved. */
export async function confineReal(file: string, roots: readonly Root[], what: string): Promise<void> {
  const real = await realpath(file);
  const reals = await Promise.all(roots.map(realRoot));
  if (!reals.some((r) => isInside(real, r.dir)))
    throw new PermanentError(`${what} ${shown(file, roots)} leads outside ${roots.map((r) => r.label).join(', ')}`);
}

/**
 * Creates `dir` (confined to `root` as written) after checking that its deepest
 * existing ancestor is inside the root once links are resolved, and checks the
 * result again: no folder is made through a link that leads out.
 */
export async function confinedMkdir(dir: string, root: Root, what: string): Promise<void> {
  // The root is configured, not chosen by a payload: it may be made as it is.
  await mkdir(path.resolve(root.dir), { recursive: true });
  let existing = dir;
  while (!(await exists(existing)) && path.dirname(existing) !== existing) existing = path.dirname(existing);
  await confineReal(existing, [root], what);
  await mkdir(dir, { recursive: true });
  await confineReal(dir, [root], what);
}

async function exists(file: string): Promise<boolean> {
  try {
    await realpath(file);
    return true;
  } catch {
    return false;
  }
}
