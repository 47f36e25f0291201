// Compose runs RandomResizedCrop [+ RandomHorizontalFlip] [+ ToTensor [+ Normalize]] and
// ToTensor + Normalize as single passes over the image: they must give the same bits and
// use the same random draws as the transforms applied one after the other, on arrays and
// on decoded files; and a broken JPEG must still fail whatever window the crop draws.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import sharp from 'sharp';
import {
  Compose,
  DataError,
  decodeImage,
  type Image,
  ImageFolder,
  Normalize,
  RandomHorizontalFlip,
  RandomResizedCrop,
  Rng,
  ToTensor,
  type Transform,
} from '../src/data/index.ts';
import { hflip } from '../src/data/transforms/image.ts';

const MEAN = [0.485, 0.456, 0.406];
const STD = [0.229, 0.224, 0.225];

/** A uint8 [h, w, c] image with structure in both directions and noise (so every tap matters). */
function image(h: number, w: number, c = 3, seed = 1): Image {
  const r = new Rng(seed);
  const data = new Uint8Array(h * w * c);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++)
      for (let k = 0; k < c; k++) data[(y * w + x) * c + k] = (x * 5 + y * 3 + k * 60 + r.int(0, 40)) % 256;
  return { data, shape: [h, w, c] };
}

/** The transforms one by one, as before fusion: the reference. */
function oneByOne(ts: Transform[], img: Image, rng: Rng): Image {
  let x = img;
  for (const t of ts) x = t.apply(x, rng);
  return x;
}

const pipelines: [string, () => Transform[]][] = [
  ['RRC', () => [new RandomResizedCrop(24)]],
  ['RRC + flip', () => [new RandomResizedCrop([20, 28]), new RandomHorizontalFlip()]],
  ['RRC + ToTensor', () => [new RandomResizedCrop(24), new ToTensor()]],
  [
    'RRC + flip + ToTensor + Normalize',
    () => [new RandomResizedCrop(24), new RandomHorizontalFlip(), new ToTensor(), new Normalize(MEAN, STD)],
  ],
  ['ToTensor + Normalize', () => [new ToTensor(), new Normalize(MEAN, STD)]],
  [
    'flip + ToTensor + Normalize (one mean)',
    () => [new RandomHorizontalFlip(), new ToTensor(), new Normalize([0.5], [0.25])],
  ],
];

test('fused Compose steps give the same bits and leave the stream where the separate transforms do', () => {
  for (const [name, make] of pipelines) {
    const composed = new Compose(make());
    for (const [h, w] of [
      [37, 53],
      [64, 41],
      [9, 12],
    ]) {
      const img = image(h, w);
      for (let s = 0; s < 12; s++) {
        const r1 = new Rng(7, s);
        const r2 = new Rng(7, s);
        const got = composed.apply(img, r1);
        const want = oneByOne(make(), img, r2);
        assert.deepEqual(got.shape, want.shape, `${name} ${h}x${w} seed ${s}: shape`);
        assert.equal(got.data.constructor, want.data.constructor, `${name}: dtype`);
        assert.deepEqual(got.data, want.data, `${name} ${h}x${w} seed ${s}: values`);
        assert.equal(r1.uint32(), r2.uint32(), `${name} ${h}x${w} seed ${s}: same draws used`);
      }
    }
  }
  // A flip draw that comes out both ways, and a float image through the fused step (no fusion then).
  const c = new Compose([new RandomResizedCrop(8), new RandomHorizontalFlip(), new ToTensor()]);
  const chw = new ToTensor().apply(image(16, 20), new Rng(0));
  const sep = [new RandomResizedCrop(8), new RandomHorizontalFlip(), new ToTensor()];
  assert.deepEqual(c.apply(chw, new Rng(3)), oneByOne(sep, chw, new Rng(3)));
});

test('hflip of uint8 images: mirrored pixels for 1, 3 and 4 channels', () => {
  for (const ch of [1, 3, 4]) {
    const img = image(5, 7, ch);
    const f = hflip(img);
    for (let y = 0; y < 5; y++)
      for (let x = 0; x < 7; x++)
        for (let k = 0; k < ch; k++)
          assert.equal(
            f.data[(y * 7 + x) * ch + k],
            img.data[(y * 7 + 6 - x) * ch + k],
            `c=${ch} (${y},${x},${k})`,
          );
  }
});

const root = mkdtempSync(join(tmpdir(), 'tsddp-fused-'));
after(() => rmSync(root, { recursive: true, force: true }));

test('ImageFolder with the ImageNet recipe equals decode + the transforms one by one', async () => {
  mkdirSync(join(root, 'good', 'a'), { recursive: true });
  const src = image(61, 83);
  const raw = { raw: { width: 83, height: 61, channels: 3 as const } };
  writeFileSync(
    join(root, 'good', 'a', '0.jpg'),
    await sharp(src.data, raw).jpeg({ quality: 85 }).toBuffer(),
  );
  writeFileSync(join(root, 'good', 'a', '1.png'), await sharp(src.data, raw).png().toBuffer());
  const make = () => [
    new RandomResizedCrop(32),
    new RandomHorizontalFlip(),
    new ToTensor(),
    new Normalize(MEAN, STD),
  ];
  const ds = new ImageFolder({ root: join(root, 'good'), transform: new Compose(make()) });
  for (const [i, [path]] of ds.samples.entries()) {
    const decoded = await decodeImage(path);
    for (let s = 0; s < 8; s++) {
      const got = await ds.get(i, { rng: new Rng(s), workerId: 0, numWorkers: 0, epoch: 0 });
      assert.deepEqual(got.image, oneByOne(make(), decoded, new Rng(s)), `${path} seed ${s}`);
    }
  }
});

test('a truncated JPEG fails under RandomResizedCrop whatever window is drawn', async () => {
  mkdirSync(join(root, 'bad', 'a'), { recursive: true });
  const src = image(300, 200);
  const jpg = await sharp(src.data, { raw: { width: 200, height: 300, channels: 3 } })
    .jpeg({ quality: 90 })
    .toBuffer();
  // Cut in the middle: a decoder that stopped at the bottom of a window in the top half
  // would never see the end missing.
  writeFileSync(join(root, 'bad', 'a', 'cut.jpg'), jpg.subarray(0, jpg.length >> 1));
  const transform = new Compose([new RandomResizedCrop(16, { scale: [0.01, 0.05] }), new ToTensor()]);
  const ds = new ImageFolder({ root: join(root, 'bad'), transform });
  for (let s = 0; s < 16; s++) {
    await assert.rejects(
      ds.get(0, { rng: new Rng(s), workerId: 0, numWorkers: 0, epoch: 0 }),
      (e: unknown) => e instanceof DataError && /cannot decode image .*cut\.jpg/.test(e.message),
      `seed ${s}`,
    );
  }
});
