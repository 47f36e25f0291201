// Broken and unusual image files (docs/reliability.md R16): real files written by sharp — RGB,
// CMYK and grayscale JPEGs, grayscale, grayscale+alpha, RGBA, 16-bit and palette PNGs,
// lossless WebP, a PNG named .jpg and a JPEG named .png — decode to uint8 [H, W, 3] RGB
// with the source's colours (what PIL's convert('RGB') gives torchvision), and a
// truncated JPEG, random bytes and an empty file either raise an error naming the file
// or, with onError: 'skip', are replaced by the next good image carrying its own label:
// counted, logged once per file, and never shifting any other sample's label.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, mock, test } from 'node:test';
import sharp, { type CreateRaw, type Sharp } from 'sharp';
import {
  Compose,
  DataError,
  DataLoader,
  DataLoaderWorkerError,
  ImageFolder,
  liveWorkers,
  RandomResizedCrop,
  Resize,
  Rng,
  type SampleContext,
  ToTensor,
} from '../src/data/index.ts';
import * as t from '../src/index.ts';

const root = mkdtempSync(join(tmpdir(), 'tsddp-images-'));
after(() => rmSync(root, { recursive: true, force: true }));

type Rgb = [number, number, number];

interface Good {
  file: string;
  label: number;
  /** Every file has its own [H, W], so a decoded shape says which file it came from. */
  hw: [number, number];
  rgb: Rgb;
  /** Largest allowed per-channel difference from `rgb`. */
  tol: number;
}
interface Bad {
  file: string;
  label: number;
  bad: true;
}
type Entry = Good | Bad;

/** A solid-colour image, as raw pixels for sharp. */
function solid(h: number, w: number, px: number[]): { data: Buffer; raw: CreateRaw } {
  const c = px.length;
  const data = Buffer.alloc(h * w * c);
  for (let i = 0; i < h * w; i++) data.set(px, i * c);
  return { data, raw: { width: w, height: h, channels: c as 1 | 2 | 3 | 4 } };
}
const img = (h: number, w: number, px: number[]): Sharp => {
  const s = solid(h, w, px);
  return sharp(s.data, { raw: s.raw });
};

/** A noisy JPEG, so most of its bytes are scan data (halving it cuts the image, not the header). */
async function noisyJpeg(h: number, w: number): Promise<Buffer> {
  const data = Buffer.alloc(h * w * 3);
  let s = 1;
  for (let i = 0; i < data.length; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    data[i] = s >>> 24;
  }
  return sharp(data, { raw: { width: w, height: h, channels: 3 } })
    .jpeg({ quality: 90 })
    .toBuffer();
}

// Class folders sort as a, b, c. Bad files sit last in a class (their replacement comes
// from the next class), next to each other, and last of all (the replacement wraps to 0).
const GREY = 110;
const entries: Entry[] = [
  { file: 'a/1_rgb.jpg', label: 0, hw: [20, 24], rgb: [200, 60, 30], tol: 3 },
  // CMYK: sharp converts sRGB -> CMYK -> sRGB through libvips' built-in CMYK profile; the
  // round trip is not exact (about 10 levels for this in-gamut colour, measured), but an
  // inverted (Adobe) or naive conversion would be off by far more.
  { file: 'a/2_cmyk.jpg', label: 0, hw: [21, 24], rgb: [150, 120, 100], tol: 16 },
  { file: 'a/3_gray.jpg', label: 0, hw: [22, 24], rgb: [GREY, GREY, GREY], tol: 2 },
  { file: 'a/4_png_named.jpg', label: 0, hw: [23, 24], rgb: [10, 200, 90], tol: 0 },
  { file: 'a/5_truncated.jpg', label: 0, bad: true },
  { file: 'b/1_gray.png', label: 1, hw: [24, 24], rgb: [GREY, GREY, GREY], tol: 0 },
  { file: 'b/2_rgba.png', label: 1, hw: [25, 24], rgb: [10, 120, 250], tol: 0 },
  { file: 'b/3_lossless.webp', label: 1, hw: [26, 24], rgb: [240, 240, 20], tol: 0 },
  { file: 'b/4_jpeg_named.png', label: 1, hw: [27, 24], rgb: [30, 30, 220], tol: 3 },
  { file: 'b/5_random.jpg', label: 1, bad: true },
  { file: 'c/1_empty.jpg', label: 2, bad: true },
  { file: 'c/2_rgb16.png', label: 2, hw: [28, 24], rgb: [200, 60, 30], tol: 0 },
  { file: 'c/3_palette.png', label: 2, hw: [29, 24], rgb: [64, 128, 192], tol: 0 },
  { file: 'c/4_gray_alpha.png', label: 2, hw: [30, 24], rgb: [GREY, GREY, GREY], tol: 0 },
  { file: 'c/5_zero.jpg', label: 2, bad: true },
];
const isBad = (e: Entry): e is Bad => 'bad' in e;
const goodOf = (file: string): Good => entries.find((e) => e.file === file) as Good;
const hwOf = (file: string): [number, number] => goodOf(file).hw;

async function writeImages(): Promise<void> {
  for (const d of ['a', 'b', 'c']) mkdirSync(join(root, d));
  const files: Record<string, Buffer> = {
    'a/1_rgb.jpg': await img(...hwOf('a/1_rgb.jpg'), [200, 60, 30])
      .jpeg({ quality: 100 })
      .toBuffer(),
    'a/2_cmyk.jpg': await img(...hwOf('a/2_cmyk.jpg'), [150, 120, 100])
      .toColourspace('cmyk')
      .jpeg({ quality: 100 })
      .toBuffer(),
    // A true one-channel grayscale JPEG (checked below).
    'a/3_gray.jpg': await img(...hwOf('a/3_gray.jpg'), [GREY])
      .toColourspace('b-w')
      .jpeg({ quality: 100 })
      .toBuffer(),
    'a/4_png_named.jpg': await img(...hwOf('a/4_png_named.jpg'), [10, 200, 90])
      .png()
      .toBuffer(),
    'a/5_truncated.jpg': await noisyJpeg(64, 96).then((b) => b.subarray(0, b.length >> 1)),
    'b/1_gray.png': await img(...hwOf('b/1_gray.png'), [GREY])
      .toColourspace('b-w')
      .png()
      .toBuffer(),
    // Alpha varies pixel to pixel: it is dropped, never composited onto a background.
    'b/2_rgba.png': await (async () => {
      const [h, w] = hwOf('b/2_rgba.png');
      const s = solid(h, w, [10, 120, 250, 255]);
      for (let i = 0; i < h * w; i++) s.data[i * 4 + 3] = (i * 37) % 256;
      return sharp(s.data, { raw: s.raw }).png().toBuffer();
    })(),
    'b/3_lossless.webp': await img(...hwOf('b/3_lossless.webp'), [240, 240, 20])
      .webp({ lossless: true })
      .toBuffer(),
    'b/4_jpeg_named.png': await img(...hwOf('b/4_jpeg_named.png'), [30, 30, 220])
      .jpeg({ quality: 100 })
      .toBuffer(),
    'b/5_random.jpg': Buffer.from(Array.from({ length: 700 }, (_, i) => (i * 7919 + 13) % 251)),
    'c/1_empty.jpg': Buffer.alloc(0),
    'c/2_rgb16.png': await img(...hwOf('c/2_rgb16.png'), [200, 60, 30])
      .toColourspace('rgb16')
      .png()
      .toBuffer(),
    'c/3_palette.png': await img(...hwOf('c/3_palette.png'), [64, 128, 192])
      .png({ palette: true })
      .toBuffer(),
    'c/4_gray_alpha.png': await (async () => {
      const [h, w] = hwOf('c/4_gray_alpha.png');
      const s = solid(h, w, [GREY, 0]);
      for (let i = 0; i < h * w; i++) s.data[i * 2 + 1] = (i * 53) % 256;
      return sharp(s.data, { raw: s.raw }).toColourspace('b-w').png().toBuffer();
    })(),
    // A zero-length file is empty; this one starts like a JPEG and stops at once.
    'c/5_zero.jpg': Buffer.from([0xff, 0xd8]),
  };
  for (const [f, bytes] of Object.entries(files)) writeFileSync(join(root, f), bytes);
}
await writeImages();

const paths = entries.map((e) => join(root, e.file));
const ctx = (): SampleContext => ({ rng: new Rng(0), workerId: 0, numWorkers: 0, epoch: 0 });

/** The index whose image replaces sample i under onError: 'skip', and how many bad files it passes. */
function replacement(i: number): { index: number; skipped: number } {
  let k = 0;
  while (isBad(entries[(i + k) % entries.length])) k++;
  return { index: (i + k) % entries.length, skipped: k };
}

function assertImage(image: { data: unknown; shape: number[] }, e: Good, what: string): void {
  assert.ok(image.data instanceof Uint8Array, `${what}: uint8 data`);
  assert.deepEqual(image.shape, [...e.hw, 3], `${what}: shape`);
  const d = image.data;
  let worst = 0;
  for (let p = 0; p < d.length; p += 3) {
    for (let k = 0; k < 3; k++) worst = Math.max(worst, Math.abs(d[p + k] - e.rgb[k]));
  }
  assert.ok(worst <= e.tol, `${what}: a pixel is ${worst} levels from [${e.rgb}] (tolerance ${e.tol})`);
}

test('the generated files are what they claim to be', async () => {
  const meta = async (f: string) => sharp(join(root, f)).metadata();
  assert.equal((await meta('a/2_cmyk.jpg')).space, 'cmyk');
  assert.equal((await meta('a/2_cmyk.jpg')).channels, 4);
  assert.equal((await meta('a/3_gray.jpg')).channels, 1);
  assert.equal((await meta('a/4_png_named.jpg')).format, 'png');
  assert.equal((await meta('b/1_gray.png')).channels, 1);
  assert.equal((await meta('b/2_rgba.png')).channels, 4);
  assert.equal((await meta('b/4_jpeg_named.png')).format, 'jpeg');
  assert.equal((await meta('c/2_rgb16.png')).depth, 'ushort');
  assert.equal((await meta('c/3_palette.png')).isPalette, true);
  assert.equal((await meta('c/4_gray_alpha.png')).channels, 2);
});

test('every good file decodes to uint8 [H, W, 3] RGB with its colours and its label', async () => {
  const ds = new ImageFolder({ root });
  assert.deepEqual(ds.classes, ['a', 'b', 'c']);
  assert.deepEqual(
    ds.samples.map(([p, l]) => [p, l]),
    entries.map((e, i) => [paths[i], e.label]),
  );
  for (const [i, e] of entries.entries()) {
    if (isBad(e)) continue;
    const s = await ds.get(i);
    assertImage(s.image, e, e.file);
    assert.equal(s.label, e.label, `${e.file}: label`);
  }
  assert.equal(ds.skipped, 0);
});

test('a truncated, random, empty or cut-off file raises a DataError naming it (default policy)', async () => {
  const ds = new ImageFolder({ root });
  for (const [i, e] of entries.entries()) {
    if (!isBad(e)) continue;
    await assert.rejects(ds.get(i), (err: unknown) => {
      assert.ok(err instanceof DataError, `${e.file}: ${err}`);
      assert.equal(err.path, paths[i]);
      assert.ok(err.message.includes(paths[i]), `${e.file}: message names the file: ${err.message}`);
      return true;
    });
  }
  assert.equal(ds.skipped, 0);
});

test("onError: 'skip' replaces a bad file by the next good one with its own label, counts and logs it once", async () => {
  const warn = mock.method(console, 'warn', () => {});
  try {
    const ds = new ImageFolder({ root, onError: 'skip' });
    let expectedSkipped = 0;
    for (let pass = 0; pass < 2; pass++) {
      for (const [i, e] of entries.entries()) {
        const s = await ds.get(i, ctx());
        const r = replacement(i);
        const used = entries[r.index] as Good;
        expectedSkipped += r.skipped;
        assertImage(s.image, used, `sample ${i} (${e.file})`);
        // A good sample is itself; a bad one is replaced by a sample whose label is its own.
        assert.equal(r.index === i, !isBad(e));
        assert.equal(s.label, used.label, `sample ${i} (${e.file}): label`);
      }
    }
    assert.equal(ds.skipped, expectedSkipped);
    assert.equal(expectedSkipped, 2 * (1 + 2 + 1 + 1));
    // Once per bad file, however often it is met; each line names the file.
    const lines = warn.mock.calls.map((c) => String(c.arguments[0]));
    const badFiles = entries.filter(isBad).map((e) => e.file);
    assert.equal(lines.length, badFiles.length, lines.join('\n'));
    for (const f of badFiles) assert.equal(lines.filter((l) => l.includes(f)).length, 1, `${f} logged once`);
  } finally {
    warn.mock.restore();
  }
});

test('decoded images go through the transforms: RandomResizedCrop + ToTensor give float32 [3, h, w]', async () => {
  const transform = new Compose([new RandomResizedCrop(16), new ToTensor()]);
  const ds = new ImageFolder({ root, transform, onError: 'skip' });
  const warn = mock.method(console, 'warn', () => {});
  try {
    for (const [i, e] of entries.entries()) {
      const s = await ds.get(i, ctx());
      const used = entries[replacement(i).index] as Good;
      assert.ok(s.image.data instanceof Float32Array);
      assert.deepEqual(s.image.shape, [3, 16, 16], e.file);
      assert.equal(s.label, used.label);
      // A crop of a solid image is the same solid colour (CMYK: within its tolerance).
      const d = s.image.data;
      for (let k = 0; k < 3; k++) {
        const v = d[k * 256 + 100] * 255;
        assert.ok(Math.abs(v - used.rgb[k]) <= used.tol + 1e-3, `${e.file}: channel ${k} is ${v}`);
      }
    }
  } finally {
    warn.mock.restore();
  }
});

const small = new Compose([new Resize([8, 8]), new ToTensor()]);

test('through a DataLoader with 1 worker, the error names the worker, the sample index and the file', async () => {
  const loader = new DataLoader(new ImageFolder({ root, transform: small }), { batchSize: 3, numWorkers: 1 });
  const first = entries.findIndex(isBad);
  let batches = 0;
  await assert.rejects(
    (async () => {
      for await (using _ of loader) batches++;
    })(),
    (e: unknown) => {
      assert.ok(e instanceof DataLoaderWorkerError, String(e));
      assert.equal(e.workerId, 0);
      assert.equal(e.index, first);
      assert.equal(e.path, paths[first]);
      assert.ok(
        e.message.startsWith(
          `DataLoader worker 0 failed on sample ${first} (file ${paths[first]}): DataError:`,
        ),
        e.message,
      );
      return true;
    },
  );
  // Samples 0-2 came through; the batch holding sample 4 is the one that failed.
  assert.equal(batches, 1);
  assert.equal(liveWorkers(), 0);
});

test("through a DataLoader with 1 worker and onError: 'skip', every batch arrives with unshifted labels", async () => {
  // The worker's console.warn lines go to this process's stderr; they are expected here.
  const ds = new ImageFolder({ root, transform: small, onError: 'skip' });
  const loader = new DataLoader(ds, { batchSize: 4, numWorkers: 1 });
  const labels: number[] = [];
  const means: number[][] = [];
  for await (using b of loader) {
    const { image, label } = b as { image: t.Tensor; label: t.Tensor };
    assert.deepEqual(image.shape.slice(1), [3, 8, 8]);
    assert.equal(label.dtype, 'int64');
    labels.push(...Array.from(label.toTypedArray() as BigInt64Array, Number));
    t.tidy(() => {
      const m = image.mean([2, 3]).toTypedArray() as Float32Array;
      for (let i = 0; i < m.length; i += 3) means.push(Array.from(m.subarray(i, i + 3), (v) => v * 255));
    });
  }
  assert.equal(liveWorkers(), 0);
  assert.deepEqual(
    labels,
    entries.map((_, i) => entries[replacement(i).index].label),
  );
  for (const [i, m] of means.entries()) {
    const used = entries[replacement(i).index] as Good;
    for (let k = 0; k < 3; k++) assert.ok(Math.abs(m[k] - used.rgb[k]) <= used.tol + 0.01, `sample ${i}`);
  }
});
