import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, stat, symlink, writeFile, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import thumbnail from '../../src/tasks/thumbnail.ts';
import { taskContext as baseContext, type TaskContextOptions } from '../helpers/task_context.ts';

let dir: string;
let photo: string;
/** A folder outside every configured root. */
let outside: string;

/** The tests' sources and outputs live under `dir`, which is both configured root. */
function taskContext(options: TaskContextOptions = {}) {
  return baseContext({
    ...options,
    config: { ...options.config, thumbnails: { dir, sourceRoots: [dir], ...options.config?.thumbnails } },
  });
}

/** A noisy 640x480 JPEG, so that the encoders have real work and real bytes. */
async function makeImage(file: string, width = 640, height = 480, orientation?: number): Promise<string> {
  let image = sharp({
    create: {
      width,
      height,
      channels: 3,
      background: { r: 40, g: 120, b: 200 },
      noise: { type: 'gaussian', mean: 128, sigma: 40 },
    },
  }).jpeg({ quality: 85 });
  if (orientation !== undefined) image = image.withMetadata({ orientation });
  await image.toFile(file);
  return file;
}

async function expectPermanent(promise: Promise<unknown>, message: RegExp): Promise<void> {
  await assert.rejects(promise, (err: Error & { permanent?: boolean }) => {
    assert.equal(err.permanent, true, `expected a permanent error, got ${err.name}: ${err.message}`);
    assert.match(err.message, message);
    return true;
  });
}

before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'jobvisor-thumbnail-'));
  photo = await makeImage(path.join(dir, 'photo.jpg'));
  outside = await mkdtemp(path.join(tmpdir(), 'jobvisor-thumbnail-outside-'));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

describe('thumbnail', () => {
  test('writes one WebP per width, aspect ratio kept, named after the source and width', async () => {
    const outDir = path.join(dir, 'out-webp');
    const result = await thumbnail({ source: photo, widths: [320, 160], outDir }, taskContext());
    assert.deepEqual((await readdir(outDir)).sort(), ['photo-160.webp', 'photo-320.webp']);
    const big = await sharp(path.join(outDir, 'photo-320.webp')).metadata();
    assert.deepEqual([big.format, big.width, big.height], ['webp', 320, 240]);
    const small = await sharp(path.join(outDir, 'photo-160.webp')).metadata();
    assert.deepEqual([small.format, small.width, small.height], ['webp', 160, 120]);
    assert.deepEqual(
      result.files.map((f) => [f.width, f.outputWidth, f.outputHeight]),
      [
        [320, 320, 240],
        [160, 160, 120],
      ],
    );
  });

  test('defaults outDir to config thumbnails.dir and takes the format from config', async () => {
    for (const [format, ext] of [
      ['jpeg', 'jpg'],
      ['png', 'png'],
      ['avif', 'avif'],
    ] as const) {
      const configured = path.join(dir, `configured-${format}`);
      await thumbnail(
        { source: photo, widths: [100] },
        taskContext({ config: { thumbnails: { dir: configured, format } } }),
      );
      const meta = await sharp(path.join(configured, `photo-100.${ext}`)).metadata();
      assert.equal(meta.format, format === 'avif' ? 'heif' : format);
      assert.deepEqual([meta.width, meta.height], [100, 75]);
    }
  });

  test('never enlarges: a width above the source keeps the source size', async () => {
    const outDir = path.join(dir, 'out-large');
    await thumbnail({ source: photo, widths: [2000] }, taskContext({ config: { thumbnails: { dir: outDir } } }));
    const meta = await sharp(path.join(outDir, 'photo-2000.webp')).metadata();
    assert.deepEqual([meta.width, meta.height], [640, 480]);
  });

  test('applies EXIF orientation before resizing', async () => {
    const rotated = await makeImage(path.join(dir, 'portrait.jpg'), 640, 480, 6);
    const outDir = path.join(dir, 'out-rotated');
    await thumbnail({ source: rotated, widths: [120] }, taskContext({ config: { thumbnails: { dir: outDir } } }));
    const meta = await sharp(path.join(outDir, 'portrait-120.webp')).metadata();
    assert.deepEqual([meta.width, meta.height], [120, 160]);
  });

  test('a repeat run rewrites the same files atomically and leaves no temporary file', async () => {
    const outDir = path.join(dir, 'out-repeat');
    const payload = { source: photo, widths: [200, 100], outDir };
    await thumbnail(payload, taskContext());
    const firstRun = await stat(path.join(outDir, 'photo-200.webp'));
    const bytes = await readFile(path.join(outDir, 'photo-200.webp'));
    await thumbnail(payload, taskContext({ job: { attempt: 2 } }));
    const secondRun = await stat(path.join(outDir, 'photo-200.webp'));
    assert.deepEqual((await readdir(outDir)).sort(), ['photo-100.webp', 'photo-200.webp']);
    assert.notEqual(secondRun.ino, firstRun.ino, 'the file is replaced by a rename, not rewritten in place');
    assert.deepEqual(await readFile(path.join(outDir, 'photo-200.webp')), bytes, 'same input, same bytes');
  });

  test('a missing source is a permanent error naming the file', async () => {
    const missing = path.join(dir, 'nope.jpg');
    await expectPermanent(
      thumbnail({ source: missing, widths: [100], outDir: path.join(dir, 'x') }, taskContext()),
      /not found: .*nope\.jpg/,
    );
    await expectPermanent(
      thumbnail({ source: dir, widths: [100], outDir: path.join(dir, 'x') }, taskContext()),
      /not a file/,
    );
  });

  test('a corrupt or truncated source is a permanent error and writes nothing', async () => {
    const garbage = path.join(dir, 'garbage.jpg');
    await writeFile(garbage, Buffer.from('this is not an image, only some text pretending to be one'));
    const outDir = path.join(dir, 'out-corrupt');
    await expectPermanent(
      thumbnail({ source: garbage, widths: [100], outDir }, taskContext()),
      /cannot be decoded.*garbage\.jpg/,
    );

    const whole = await readFile(photo);
    const truncated = path.join(dir, 'truncated.jpg');
    await writeFile(truncated, whole.subarray(0, Math.floor(whole.length / 2)));
    await expectPermanent(
      thumbnail({ source: truncated, widths: [100], outDir }, taskContext()),
      /cannot be decoded.*truncated\.jpg/,
    );
    assert.deepEqual(await readdir(outDir), []);
  });

  test('a bad payload is a permanent error naming the field', async () => {
    const ctx = taskContext({ config: { thumbnails: { dir: path.join(dir, 'never') } } });
    const cases: [unknown, RegExp][] = [
      [null, /payload must be an object/],
      [[photo], /payload must be an object/],
      [{ widths: [100] }, /payload\.source/],
      [{ source: '', widths: [100] }, /payload\.source/],
      [{ source: photo }, /payload\.widths must be an array/],
      [{ source: photo, widths: [] }, /payload\.widths must be an array of 1 to 32/],
      [
        { source: photo, widths: Array.from({ length: 33 }, (_, i) => i + 1) },
        /payload\.widths must be an array of 1 to 32/,
      ],
      [{ source: photo, widths: [100, 0] }, /payload\.widths\[1\] must be an integer from 1 to 10000, got 0/],
      [{ source: photo, widths: [-5] }, /payload\.widths\[0\]/],
      [{ source: photo, widths: [12.5] }, /payload\.widths\[0\].*12\.5/],
      [{ source: photo, widths: ['320'] }, /payload\.widths\[0\].*"320"/],
      [{ source: photo, widths: [10_001] }, /payload\.widths\[0\].*10001/],
      [{ source: photo, widths: [100], outDir: 7 }, /payload\.outDir/],
    ];
    for (const [payload, message] of cases) await expectPermanent(thumbnail(payload, ctx), message);
    await assert.rejects(stat(path.join(dir, 'never')), { code: 'ENOENT' });
  });

  test('stops between widths when the signal fires', async () => {
    const outDir = path.join(dir, 'out-abort');
    const controller = new AbortController();
    const ctx = taskContext({
      signal: controller.signal,
      onLog: (line) => {
        if (line.msg === 'thumbnail written') controller.abort(new Error('job timed out'));
      },
    });
    await assert.rejects(thumbnail({ source: photo, widths: [300, 200, 100], outDir }, ctx), /job timed out/);
    assert.deepEqual(await readdir(outDir), ['photo-300.webp']);

    const aborted = AbortSignal.abort(new Error('shutting down'));
    await assert.rejects(
      thumbnail(
        { source: photo, widths: [50], outDir: path.join(dir, 'out-aborted') },
        taskContext({ signal: aborted }),
      ),
      /shutting down/,
    );
  });

  test('refuses a source outside thumbnails.sourceRoots, as written or through a link, without naming server paths', async () => {
    const secret = await makeImage(path.join(outside, 'secret.jpg'), 64, 48);
    await symlink(secret, path.join(dir, 'link-out.jpg'));
    await mkdir(path.join(dir, 'sub'), { recursive: true });
    for (const [source, message] of [
      [secret, /^thumbnail payload\.source …\/secret\.jpg is outside thumbnails\.sourceRoots\[0\]$/],
      ['../secret.jpg', /is outside thumbnails\.sourceRoots\[0\]/],
      [path.join(dir, 'sub', '..', '..', path.basename(outside), 'secret.jpg'), /is outside/],
      [
        path.join(dir, 'link-out.jpg'),
        /^thumbnail payload\.source <thumbnails\.sourceRoots\[0\]>\/link-out\.jpg leads outside/,
      ],
    ] as const) {
      await assert.rejects(
        thumbnail({ source, widths: [10] }, taskContext()),
        (err: Error & { permanent?: boolean }) => {
          assert.equal(err.permanent, true);
          assert.match(err.message, message);
          assert.ok(!err.message.includes(dir) && !err.message.includes(outside), err.message);
          return true;
        },
      );
    }
    assert.deepEqual(await readdir(outside), ['secret.jpg'], 'nothing written next to it');
  });

  test('a relative source is taken from the first root; any source root may hold it', async () => {
    const other = await mkdtemp(path.join(tmpdir(), 'jobvisor-thumbnail-root2-'));
    try {
      const second = await makeImage(path.join(other, 'second.jpg'), 64, 48);
      const ctx = taskContext({ config: { thumbnails: { sourceRoots: [dir, other] } } });
      await thumbnail({ source: 'photo.jpg', widths: [20], outDir: 'rel' }, ctx);
      await thumbnail({ source: second, widths: [20], outDir: 'rel' }, ctx);
      assert.deepEqual((await readdir(path.join(dir, 'rel'))).sort(), ['photo-20.webp', 'second-20.webp']);
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });

  test('refuses an outDir outside thumbnails.dir, as written or through a link, and creates nothing there', async () => {
    await symlink(outside, path.join(dir, 'out-link'));
    for (const [outDir, message] of [
      [path.join(outside, 'thumbs'), /^thumbnail payload\.outDir …\/thumbs is outside thumbnails\.dir$/],
      ['../escape', /is outside thumbnails\.dir/],
      [path.join(dir, 'out-link', 'thumbs'), /^thumbnail payload\.outDir <thumbnails\.dir>\/out-link leads outside/],
    ] as const) {
      await assert.rejects(
        thumbnail({ source: photo, widths: [10], outDir }, taskContext()),
        (err: Error & { permanent?: boolean }) => {
          assert.equal(err.permanent, true);
          assert.match(err.message, message);
          assert.ok(!err.message.includes(dir) && !err.message.includes(outside), err.message);
          return true;
        },
      );
    }
    assert.deepEqual((await readdir(outside)).sort(), ['secret.jpg'], 'no folder or file made outside');
  });

  test('errors name paths relative to their setting, never absolute server paths', async () => {
    await assert.rejects(
      thumbnail({ source: path.join(dir, 'gone.jpg'), widths: [10] }, taskContext()),
      (err: Error) => {
        assert.equal(err.message, 'thumbnail source not found: <thumbnails.sourceRoots[0]>/gone.jpg');
        return true;
      },
    );
    const garbage = path.join(dir, 'garbage2.jpg');
    await writeFile(garbage, 'not an image');
    await assert.rejects(thumbnail({ source: garbage, widths: [10] }, taskContext()), (err: Error) => {
      assert.match(
        err.message,
        /^thumbnail source cannot be decoded as an image: <thumbnails\.sourceRoots\[0\]>\/garbage2\.jpg/,
      );
      assert.ok(!err.message.includes(dir), err.message);
      return true;
    });
  });

  test('with no source roots configured, every source is refused', async () => {
    await expectPermanent(
      thumbnail({ source: photo, widths: [10] }, taskContext({ config: { thumbnails: { sourceRoots: [] } } })),
      /payload\.source cannot be used: no folder is configured/,
    );
  });
});
