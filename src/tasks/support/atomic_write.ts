/**
 * Write a whole file so that readers see either the old content or the new, never
 * a part: write a temporary file in the same folder (same file system, so the
 * rename is atomic), flush it to disk, then rename it over the target.
 *
 * Tasks run at least once, so a repeat run of the same job simply replaces the
 * same files. A thread killed mid-write (timeout, out of memory) can leave a
 * `.<name>.<random>.tmp` file behind; it never takes the target's name.
 */
import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import path from 'node:path';

/** Writes `data` to `file` atomically. The folder must exist. Throws the fs error on failure. */
export async function writeFileAtomic(file: string, data: Uint8Array | string): Promise<void> {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'wx');
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}
