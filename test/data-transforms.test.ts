// Transforms against PyTorch (test/fixtures/data/transforms.json, made by transforms.py),
// their randomness and specs, the batched tensor versions, and the Shapes / FakeData datasets.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import {
  buildTransform,
  CenterCrop,
  Compose,
  DataLoader,
  FakeData,
  type Image,
  Normalize,
  normalizeBatch,
  RandomCrop,
  RandomHorizontalFlip,
  RandomResizedCrop,
  Resize,
  Rng,
  randomCropBatch,
  randomHorizontalFlipBatch,
  SHAPES_CLASSES,
  Shapes,
  ToTensor,
  toTensorBatch,
} from '../src/data/index.ts';
import { resizedCrop } from '../src/data/transforms/image.ts';
import * as t from '../src/index.ts';

const F = JSON.parse(readFileSync(new URL('fixtures/data/transforms.json', import.meta.url), 'utf8')) as {
  shape: [number, number, number];
  image: number[];
  toTensor: number[];
  mean: number[];
  std: number[];
  normalize: number[];
  resize: {
    window: [number, number, number, number];
    size: [number, number];
    float: number[];
    uint8: number[];
  }[];
};
const hwc = (): Image => ({ data: Uint8Array.from(F.image), shape: [...F.shape] });
const rng = () => new Rng(1);

function assertClose(actual: ArrayLike<number>, expected: number[], tol: number, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++) {
    assert.ok(Math.abs(actual[i] - expected[i]) <= tol, `${what}[${i}]: ${actual[i]} vs ${expected[i]}`);
  }
}

test('ToTensor and Normalize equal PyTorch exactly', () => {
  const x = new ToTensor().apply(hwc(), rng());
  assert.deepEqual(x.shape, [3, 6, 9]);
  assert.deepEqual(Array.from(x.data), F.toTensor.map(Math.fround));
  const n = new Normalize(F.mean, F.std).apply(x, rng());
  assert.deepEqual(Array.from(n.data), F.normalize.map(Math.fround));
  assert.throws(() => new Normalize(F.mean, F.std).apply(hwc(), rng()), /apply ToTensor first/);
});

test('bilinear resize and resized crop equal F.interpolate(bilinear, align_corners=False)', () => {
  const chw = new ToTensor().apply(hwc(), rng());
  for (const c of F.resize) {
    const [top, left, h, w] = c.window;
    const [oh, ow] = c.size;
    const f = resizedCrop(chw, top, left, h, w, oh, ow);
    assert.deepEqual(f.shape, [3, oh, ow]);
    assertClose(f.data, c.float, 1e-6, `float ${c.window}->${c.size}`);
    const u = resizedCrop(hwc(), top, left, h, w, oh, ow);
    assert.deepEqual(u.shape, [oh, ow, 3]);
    // PyTorch's uint8 kernel rounds in fixed point: at most one level apart.
    assertClose(u.data, c.uint8, 1, `uint8 ${c.window}->${c.size}`);
  }
  // Resize(n) matches the smaller edge and floors the other; [h, w] is exact.
  assert.deepEqual(new Resize(4).apply(hwc(), rng()).shape, [4, 6, 3]);
  assert.deepEqual(new Resize([13, 20]).apply(chw, rng()).shape, [3, 13, 20]);
  assertClose(new Resize([4, 5]).apply(chw, rng()).data, F.resize[0].float, 1e-6, 'Resize([4, 5])');
});

test('CenterCrop and RandomCrop follow torchvision (offsets, padding, sizes)', () => {
  const img: Image = { data: Uint8Array.from({ length: 5 * 6 }, (_, i) => i), shape: [5, 6, 1] };
  // torchvision: top = round((5 - 2) / 2) = 2 (half to even), left = round((6 - 3) / 2) = 2.
  const cc = new CenterCrop([2, 3]).apply(img, rng());
  assert.deepEqual(Array.from(cc.data), [14, 15, 16, 20, 21, 22]);
  // Larger than the image: zero padding around it.
  const big = new CenterCrop([7, 6]).apply(img, rng());
  assert.deepEqual(Array.from(big.data.slice(0, 6)), [0, 0, 0, 0, 0, 0]);
  assert.deepEqual(Array.from(big.data.slice(6, 12)), [0, 1, 2, 3, 4, 5]);

  // Each RandomCrop is a window of the zero-padded image, and all offsets occur.
  const crop = new RandomCrop(5, { padding: 1 });
  const seen = new Set<string>();
  const r = rng();
  for (let k = 0; k < 300; k++) {
    const out = crop.apply(img, r).data;
    let found = '';
    for (let dy = -1; dy <= 1 && !found; dy++) {
      for (let dx = -1; dx <= 2 && !found; dx++) {
        let ok = true;
        for (let y = 0; y < 5 && ok; y++) {
          for (let x = 0; x < 5 && ok; x++) {
            const sy = y + dy;
            const sx = x + dx;
            const v = sy >= 0 && sy < 5 && sx >= 0 && sx < 6 ? sy * 6 + sx : 0;
            ok = out[y * 5 + x] === v;
          }
        }
        if (ok) found = `${dy},${dx}`;
      }
    }
    assert.ok(found, 'a RandomCrop output is not a window of the padded image');
    seen.add(found);
  }
  assert.equal(seen.size, 3 * 4, `offsets seen: ${[...seen]}`);
  assert.throws(() => new RandomCrop(8).apply(img, rng()), /larger than the input image size/);
  assert.deepEqual(new RandomCrop(8, { padIfNeeded: true }).apply(img, rng()).shape, [8, 8, 1]);
  const reflect = new RandomCrop([5, 6], { padding: 2, paddingMode: 'reflect' });
  assert.deepEqual(reflect.apply(img, rng()).shape, [5, 6, 1]);
});

test('RandomHorizontalFlip and RandomResizedCrop: reproducible from the sample stream', () => {
  const img = hwc();
  const flip = new RandomHorizontalFlip(0.5);
  let flips = 0;
  const r = rng();
  for (let k = 0; k < 200; k++) {
    const out = flip.apply(img, r);
    if (out !== img) {
      flips++;
      // Row 0, last pixel of the flip = row 0, first pixel of the image.
      assert.deepEqual(Array.from(out.data.slice(8 * 3, 9 * 3)), Array.from(img.data.slice(0, 3)));
    }
  }
  assert.ok(flips > 70 && flips < 130, `flipped ${flips}/200`);
  assert.equal(new RandomHorizontalFlip(0).apply(img, rng()), img);

  const rrc = new RandomResizedCrop(4, { scale: [0.3, 1] });
  const a = rrc.apply(img, new Rng(5));
  assert.deepEqual(a.shape, [4, 4, 3]);
  assert.deepEqual(rrc.apply(img, new Rng(5)), a, 'same stream, same crop');
  for (let k = 0; k < 50; k++) {
    const [i, j, h, w] = rrc.params(6, 9, new Rng(k));
    assert.ok(i >= 0 && j >= 0 && i + h <= 6 && j + w <= 9 && h > 0 && w > 0);
    const area = (h * w) / 54;
    const fallback = h === 6 && w === 8; // the central crop when ten draws fail (w/h clipped to 4/3)
    assert.ok(fallback || (area > 0.2 && area <= 1.1), `area ${area}`);
  }
});

test('transforms round-trip through their JSON specs', () => {
  const tf = new Compose([
    new RandomResizedCrop(4),
    new RandomCrop(4, { padding: 1 }),
    new RandomHorizontalFlip(),
    new CenterCrop(3),
    new Resize([5, 5]),
    new ToTensor(),
    new Normalize([0.5, 0.5, 0.5], [0.2, 0.2, 0.2]),
  ]);
  const spec = JSON.parse(JSON.stringify(tf.toSpec()));
  const rebuilt = buildTransform(spec);
  assert.deepEqual(rebuilt.toSpec(), tf.toSpec());
  assert.deepEqual(rebuilt.apply(hwc(), new Rng(3)), tf.apply(hwc(), new Rng(3)));
  assert.throws(() => buildTransform({ name: 'Rotate' }), /unknown transform 'Rotate'/);
});

test('batched tensor transforms agree with the per-sample ones', () => {
  t.tidy(() => {
    const imgs = [hwc(), new RandomHorizontalFlip(1).apply(hwc(), rng())];
    const u8 = t.tensor(Uint8Array.from([...imgs[0].data, ...imgs[1].data]), { shape: [2, 6, 9, 3] });
    const x = toTensorBatch(u8);
    assert.deepEqual(x.shape, [2, 3, 6, 9]);
    const per = imgs.map((im) => new ToTensor().apply(im, rng()));
    assert.deepEqual(Array.from(x.toTypedArray() as Float32Array), [...per[0].data, ...per[1].data]);
    const n = normalizeBatch(x, F.mean, F.std);
    const perN = per.map((im) => new Normalize(F.mean, F.std).apply(im, rng()).data);
    assert.deepEqual(Array.from(n.toTypedArray() as Float32Array), [...perN[0], ...perN[1]]);

    assert.deepEqual(randomHorizontalFlipBatch(x, { p: 1 }).toArray(), x.flip([3]).toArray());
    assert.deepEqual(randomHorizontalFlipBatch(x, { p: 0 }).toArray(), x.toArray());
    const g = new t.Generator().manualSeed(0);
    const mixed = randomHorizontalFlipBatch(
      t.arange(8, { dtype: 'float32' }).view([8, 1, 1, 1]).expand([8, 1, 1, 2]),
      {
        generator: g,
      },
    );
    assert.equal(mixed.shape[0], 8);

    // Each cropped sample is a window of its own zero-padded sample.
    const big = t
      .arange(4 * 2 * 5 * 5, { dtype: 'float32' })
      .view([4, 2, 5, 5])
      .add(1);
    const c = randomCropBatch(big, 5, { padding: 2, generator: new t.Generator().manualSeed(1) });
    assert.deepEqual(c.shape, [4, 2, 5, 5]);
    const padded = t.constantPadNd(big, [2, 2, 2, 2], 0);
    const offsets = new Set<string>();
    for (let b = 0; b < 4; b++) {
      const got = JSON.stringify(c.select(0, b).toArray());
      let match = '';
      for (let dy = 0; dy <= 4 && !match; dy++) {
        for (let dx = 0; dx <= 4 && !match; dx++) {
          const win = padded.select(0, b).narrow(1, dy, 5).narrow(2, dx, 5);
          if (JSON.stringify(win.toArray()) === got) match = `${dy},${dx}`;
        }
      }
      assert.ok(match, `sample ${b} is not a window of its padded sample`);
      offsets.add(match);
    }
    assert.ok(offsets.size > 1, 'all samples got the same crop');
    assert.deepEqual(randomCropBatch(big, 5).toArray(), big.toArray(), 'no padding, full size: identity');
  });
});

test('Shapes: deterministic, balanced, splits differ, every shape visible', () => {
  const ds = new Shapes({ size: 40, imageSize: 32 });
  assert.equal(ds.length, 40);
  assert.equal(SHAPES_CLASSES.length, 10);
  const a = ds.get(7);
  assert.equal(a.label, 7);
  assert.deepEqual(a.image.shape, [32, 32, 3]);
  assert.ok(a.image.data instanceof Uint8Array);
  assert.deepEqual(new Shapes({ size: 40 }).get(7), a, 'same seed, same image');
  assert.notDeepEqual(new Shapes({ size: 40, seed: 1 }).get(7).image, a.image);
  assert.notDeepEqual(new Shapes({ size: 40, split: 'val' }).get(7).image, a.image);
  assert.deepEqual(new Shapes({ size: 3, imageSize: 64 }).get(2).image.shape, [64, 64, 3]);
  assert.throws(() => ds.get(40), /out of range/);
  // Each image shows its shape where its parameters put it: the centre pixel has the
  // foreground colour for filled shapes and the background colour for hollow ones (ring,
  // frame, bars), and the corners are background.
  const big = new Shapes({ size: 200, noise: 0 });
  const near = (px: number[], c: number[], tol: number) => px.every((v, k) => Math.abs(v - c[k]) <= tol);
  for (let i = 0; i < big.length; i++) {
    const p = big.params(i);
    const d = big.render(i).data;
    const at = (x: number, y: number) =>
      [0, 1, 2].map((k) => d[(Math.floor(y) * 32 + Math.floor(x)) * 3 + k] / 255);
    const hollow = ['ring', 'frame', 'bars'].includes(SHAPES_CLASSES[p.label]);
    const centre = at(p.cx, p.cy);
    assert.ok(
      hollow ? !near(centre, p.fg, 0.02) : near(centre, p.fg, 0.02),
      `sample ${i} (${SHAPES_CLASSES[p.label]}): centre ${centre} vs foreground ${p.fg}`,
    );
    assert.ok(near(at(0, 0), p.bg, 0.16), `sample ${i}: corner ${at(0, 0)} vs background ${p.bg}`);
    assert.ok(
      Math.abs(0.299 * (p.fg[0] - p.bg[0]) + 0.587 * (p.fg[1] - p.bg[1]) + 0.114 * (p.fg[2] - p.bg[2])) >=
        0.3,
    );
  }
});

test('Shapes and FakeData go through workers with their transforms', async () => {
  const transform = new Compose([
    new RandomCrop(32, { padding: 4 }),
    new RandomHorizontalFlip(),
    new ToTensor(),
  ]);
  const ds = new Shapes({ size: 8, transform });
  const spec = ds.workerSpec();
  assert.deepEqual(JSON.parse(JSON.stringify(spec.options)), spec.options, 'spec is plain data');
  const collect = async (numWorkers: number) => {
    const out: number[][] = [];
    for await (using b of new DataLoader(ds, { batchSize: 4, numWorkers, seed: 2 })) {
      const img = b.image as t.Tensor;
      assert.deepEqual(img.shape, [4, 3, 32, 32]);
      assert.equal(img.dtype, 'float32');
      out.push(Array.from(img.sum([1, 2, 3]).toTypedArray() as Float32Array));
    }
    return out;
  };
  assert.deepEqual(await collect(1), await collect(0));

  const fake = new FakeData({ size: 5, imageSize: [3, 8, 8], numClasses: 4 });
  const s = fake.get(3);
  assert.deepEqual(s.image.shape, [8, 8, 3]);
  assert.ok(s.label >= 0 && s.label < 4);
  assert.deepEqual(fake.get(3), s);
  assert.notDeepEqual(fake.get(2).image, s.image);
});
