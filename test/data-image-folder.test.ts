// ImageFolder: class folders and file order as torchvision's, clear errors for a missing
// or empty folder, lossless formats decoded to the exact source pixels, JPEGs decoded to
// the same pixels as PIL (torchvision's loader), and a bad file raising or skipped.
// (Unusual and broken files in depth: data-images.test.ts.)
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, mock, test } from 'node:test';
import sharp from 'sharp';
import { DataError, DataLoader, decodeImage, ImageFolder, Rng } from '../src/data/index.ts';
import { PIL_JPEGS } from './fixtures/data/pil-jpegs.ts';
import { encodePng } from './fixtures/data/png.ts';

const root = mkdtempSync(join(tmpdir(), 'tsddp-imagefolder-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** A 4x3 RGB pattern, different for each seed. */
const pixels = (seed: number) => Uint8Array.from({ length: 4 * 3 * 3 }, (_, k) => (seed * 31 + k * 7) % 256);
mkdirSync(join(root, 'dog', 'nested'), { recursive: true });
mkdirSync(join(root, 'cat'), { recursive: true });
writeFileSync(join(root, 'dog', 'b.png'), encodePng(3, 4, pixels(1)));
writeFileSync(join(root, 'dog', 'nested', 'a.PNG'), encodePng(3, 4, pixels(2)));
writeFileSync(join(root, 'dog', 'notes.txt'), 'not an image');
writeFileSync(join(root, 'cat', 'x.png'), encodePng(3, 4, pixels(3)));
// A PNG named .jpg must still decode (the content decides, as with PIL), a corrupt one must not.
writeFileSync(join(root, 'cat', 'y.jpg'), encodePng(3, 4, pixels(4)));
writeFileSync(join(root, 'cat', 'z.jpg'), Buffer.from('definitely not a jpeg'));
const raw = { raw: { width: 3, height: 4, channels: 3 as const } };
writeFileSync(
  join(root, 'dog', 'w.webp'),
  await sharp(Buffer.from(pixels(5)), raw)
    .webp({ lossless: true })
    .toBuffer(),
);
writeFileSync(join(root, 'dog', 'p.bmp'), Buffer.from('BM not really'));

/** An image's bytes as a plain array, for deepEqual. */
const bytes = (img: { data: unknown }): number[] => Array.from(img.data as Uint8Array);

const ctx = { rng: new Rng(0), workerId: 0, numWorkers: 0, epoch: 0 };

test('classes are sorted folder names; files are sorted, recursive, filtered by extension', () => {
  const ds = new ImageFolder({ root });
  assert.deepEqual(ds.classes, ['cat', 'dog']);
  assert.deepEqual(ds.classToIdx, { cat: 0, dog: 1 });
  assert.deepEqual(
    ds.samples.map(([p, l]) => [p.slice(root.length + 1), l]),
    [
      ['cat/x.png', 0],
      ['cat/y.jpg', 0],
      ['cat/z.jpg', 0],
      ['dog/b.png', 1],
      ['dog/nested/a.PNG', 1],
      ['dog/p.bmp', 1],
      ['dog/w.webp', 1],
    ],
  );
  assert.equal(ds.length, 7);
  const pngOnly = new ImageFolder({ root, extensions: ['.png'] });
  assert.deepEqual(
    pngOnly.samples.map(([p]) => p.slice(root.length + 1)),
    ['cat/x.png', 'dog/b.png', 'dog/nested/a.PNG'],
  );
  assert.throws(() => new ImageFolder({ root: join(root, 'missing') }), /missing is not a folder/);
  assert.throws(
    () => new ImageFolder({ root: join(root, 'dog', 'nested') }),
    /couldn't find any class folder/,
  );
  assert.throws(() => new ImageFolder({ root, extensions: ['.gif'] }), /found no valid file in/);
});

test('a class folder without images is an error unless allowEmpty (torchvision allow_empty)', () => {
  const r = mkdtempSync(join(tmpdir(), 'tsddp-imagefolder-empty-'));
  try {
    mkdirSync(join(r, 'ant'));
    mkdirSync(join(r, 'bee'));
    mkdirSync(join(r, 'cow'));
    writeFileSync(join(r, 'ant', 'x.png'), encodePng(3, 4, pixels(1)));
    writeFileSync(join(r, 'bee', 'readme.txt'), 'no images here');
    writeFileSync(join(r, 'cow', 'y.png'), encodePng(3, 4, pixels(2)));
    assert.throws(
      () => new ImageFolder({ root: r }),
      (e: unknown) =>
        e instanceof DataError &&
        e.path === join(r, 'bee') &&
        /found no valid file for the classes bee in .*allowEmpty: true/.test(e.message),
    );
    // Kept, the empty class keeps its index, so labels match the folder names' order.
    const ds = new ImageFolder({ root: r, allowEmpty: true });
    assert.deepEqual(ds.classes, ['ant', 'bee', 'cow']);
    assert.deepEqual(
      ds.samples.map(([p, l]) => [p.slice(r.length + 1), l]),
      [
        ['ant/x.png', 0],
        ['cow/y.png', 2],
      ],
    );
  } finally {
    rmSync(r, { recursive: true, force: true });
  }
});

test('lossless images decode to their exact pixels as uint8 [H, W, 3]', async () => {
  const ds = new ImageFolder({ root });
  const cases: [number, number, string][] = [
    [0, 3, 'cat/x.png'],
    [1, 4, 'cat/y.jpg (a PNG)'],
    [3, 1, 'dog/b.png'],
    [4, 2, 'dog/nested/a.PNG'],
    [6, 5, 'dog/w.webp'],
  ];
  for (const [i, seed, what] of cases) {
    const x = await ds.get(i);
    assert.ok(x.image.data instanceof Uint8Array, what);
    assert.deepEqual(x.image.shape, [4, 3, 3], what);
    assert.deepEqual(Array.from(x.image.data), Array.from(pixels(seed)), what);
    assert.equal(x.label, ds.samples[i][1], what);
  }
  await assert.rejects(ds.get(7), RangeError);
  await assert.rejects(ds.get(-1), RangeError);
});

test('JPEGs decode to the same RGB bytes as PIL (baseline, progressive, grayscale)', async () => {
  for (const [name, { b64, pilSha256 }] of Object.entries(PIL_JPEGS)) {
    const path = join(root, `${name.replace(/\W+/g, '_')}.jpeg`);
    writeFileSync(path, Buffer.from(b64, 'base64'));
    const img = await decodeImage(path);
    assert.deepEqual(img.shape, [17, 33, 3], name);
    assert.equal(createHash('sha256').update(img.data).digest('hex'), pilSha256, name);
  }
});

test("a corrupt file raises a DataError naming it; onError: 'skip' uses the next good image and its label", async () => {
  const ds = new ImageFolder({ root });
  const bad = join(root, 'cat', 'z.jpg');
  await assert.rejects(ds.get(2), (e: unknown) => {
    assert.ok(e instanceof DataError);
    assert.equal(e.path, bad);
    assert.match(e.message, /^cannot decode image .*cat\/z\.jpg: /);
    return true;
  });
  await assert.rejects(
    ds.get(5),
    (e: unknown) => e instanceof DataError && e.path === join(root, 'dog', 'p.bmp'),
  );

  const warn = mock.method(console, 'warn', () => {});
  try {
    const skipping = new ImageFolder({ root, onError: 'skip' });
    const s = await skipping.get(2, ctx);
    // Replaced by the next decodable image (dog/b.png), with that image's label: no label shift.
    assert.deepEqual(bytes(s.image), Array.from(pixels(1)));
    assert.equal(s.label, 1);
    assert.equal(skipping.skipped, 1);
    // The good neighbours are untouched.
    assert.equal((await skipping.get(1, ctx)).label, 0);
    assert.deepEqual(bytes((await skipping.get(3, ctx)).image), Array.from(pixels(1)));
    const t = await skipping.get(5, ctx);
    assert.deepEqual(bytes(t.image), Array.from(pixels(5)));
    assert.equal(t.label, 1);
    assert.equal(skipping.skipped, 2);
    assert.equal(warn.mock.callCount(), 2);
    assert.match(
      String(warn.mock.calls[0].arguments[0]),
      /^ImageFolder: skipping cat\/z\.jpg: cannot decode/,
    );
  } finally {
    warn.mock.restore();
  }
});

test('DataLoader skipBadSamples: a file that fails to load is replaced by the next, logged once, counted, and capped', async () => {
  const dir = join(root, '..', `${root.split('/').pop()}-skip`);
  mkdirSync(join(dir, 'a'), { recursive: true });
  for (let i = 0; i < 6; i++) writeFileSync(join(dir, 'a', `img${i}.png`), encodePng(3, 4, pixels(10 + i)));
  writeFileSync(join(dir, 'a', 'img2b.jpg'), Buffer.from('truncated, not a jpeg')); // sorts as index 3
  after(() => rmSync(dir, { recursive: true, force: true }));
  const ds = new ImageFolder({ root: dir });
  const bad = join(dir, 'a', 'img2b.jpg');
  const warn = mock.method(console, 'warn', () => {});
  try {
    for (const numWorkers of [0, 1]) {
      warn.mock.resetCalls();
      const loader = new DataLoader(ds, { batchSize: 7, numWorkers, skipBadSamples: 1 });
      for await (using batch of loader) {
        // The bad file's place holds the next image: 7 images, and its label (no shift).
        const images = batch.image.toTypedArray() as Uint8Array;
        assert.equal(batch.image.shape[0], 7);
        assert.deepEqual(Array.from(images.subarray(3 * 36, 4 * 36)), Array.from(pixels(13)));
      }
      assert.equal(loader.skippedSamples, 1, `numWorkers ${numWorkers}`);
      assert.equal(warn.mock.callCount(), 1);
      assert.match(
        String(warn.mock.calls[0].arguments[0]),
        new RegExp(`^DataLoader: skipped ${bad} \\(index 3\\): DataError`),
      );
      await loader.close();
    }
    // One more than allowed fails the loader, naming the file.
    const strict = new DataLoader(ds, { batchSize: 7, numWorkers: 1, skipBadSamples: 0 });
    await assert.rejects(
      (async () => {
        for await (using _ of strict);
      })(),
      (e: Error) => {
        assert.equal(e.name, 'DataLoaderError');
        assert.match(
          e.message,
          new RegExp(`more than 0 bad sample\\(s\\) skipped \\(skipBadSamples\\); the last: ${bad}`),
        );
        return true;
      },
    );
    await strict.close();
  } finally {
    warn.mock.restore();
  }
});

test('a file whose name is not UTF-8 (Latin-1 "caf\\xe9.png") loads, as torchvision loads it', async () => {
  const dir = join(root, 'latin1');
  mkdirSync(join(dir, 'c'), { recursive: true });
  // Node decodes names as UTF-8: the old code listed "caf\uFFFD.png", which does not exist (ENOENT).
  const name = Buffer.concat([Buffer.from(`${dir}/c/caf`), Buffer.from([0xe9]), Buffer.from('.png')]);
  writeFileSync(name, encodePng(3, 4, pixels(6)));
  writeFileSync(join(dir, 'c', 'plain.png'), encodePng(3, 4, pixels(7)));
  const ds = new ImageFolder({ root: dir });
  assert.equal(ds.length, 2);
  assert.equal(ds.samples[0][0], join(dir, 'c', 'caf\uFFFD.png'), 'shown with the odd byte replaced');
  assert.deepEqual(bytes((await ds.get(0)).image), Array.from(pixels(6)));
  assert.deepEqual(bytes((await ds.get(1)).image), Array.from(pixels(7)));
  // Through a worker thread too (the dataset is rebuilt there from its spec).
  const loader = new DataLoader(ds, { batchSize: 2, numWorkers: 1 });
  try {
    for await (using b of loader) assert.deepEqual(b.image.shape, [2, 4, 3, 3]);
  } finally {
    await loader.close();
  }
});
