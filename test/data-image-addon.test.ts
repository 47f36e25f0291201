// tsddp_image.node, the C++ image kernels of the data workers: built by setup; its JPEG
// decoder gives PIL's bytes (as the sharp path does), loads in worker threads, and hands
// every file it does not decode cleanly (truncated, corrupt, CMYK) back to sharp with the
// reason; its resized crop is bit for bit the JavaScript one. (ImageFolder's errors and
// CMYK handling through both paths: data-images.test.ts.)
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import sharp from 'sharp';
import { imageAddon, isJpeg } from '../src/data/image-addon.ts';
import { Rng } from '../src/data/index.ts';
import { resizeHwc, resizeHwcJs } from '../src/data/transforms/image.ts';
import { PIL_JPEGS } from './fixtures/data/pil-jpegs.ts';

const root = mkdtempSync(join(tmpdir(), 'tsddp-image-addon-'));
after(() => rmSync(root, { recursive: true, force: true }));

const sha256 = (b: Uint8Array | Float32Array) =>
  createHash('sha256')
    .update(new Uint8Array(b.buffer, b.byteOffset, b.byteLength))
    .digest('hex');

function addon() {
  const a = imageAddon();
  assert.ok(a !== null, 'native/build/Release/tsddp_image.node is not built: run node scripts/setup.mjs');
  return a;
}

test('the addon is built and decodes JPEGs to the same RGB bytes as PIL, in and off the main thread', async () => {
  const a = addon();
  assert.match(a.jpegVersion, /^libjpeg(-turbo)? \d/);
  for (const [name, { b64, pilSha256 }] of Object.entries(PIL_JPEGS)) {
    const bytes = Buffer.from(b64, 'base64');
    assert.ok(isJpeg(bytes), name);
    for (const r of [a.decodeJpeg(bytes), await a.decodeJpegAsync(bytes)]) {
      assert.ok(typeof r !== 'string', `${name}: ${r}`);
      assert.deepEqual([r.height, r.width, r.data.byteLength], [17, 33, 17 * 33 * 3], name);
      assert.equal(sha256(new Uint8Array(r.data)), pilSha256, name);
    }
  }
});

test('files it does not decode cleanly come back as the reason, for sharp to handle', async () => {
  const a = addon();
  const noisy = Buffer.from(Array.from({ length: 48 * 32 * 3 }, (_, i) => (i * 37) % 251));
  const jpeg = await sharp(noisy, { raw: { width: 48, height: 32, channels: 3 } })
    .jpeg()
    .toBuffer();
  assert.equal(typeof a.decodeJpeg(jpeg), 'object');
  // Cut in the middle of the scan: libjpeg would pad it with grey and warn.
  const cut = jpeg.subarray(0, jpeg.length >> 1);
  assert.match(String(a.decodeJpeg(cut)), /Premature end of JPEG file/);
  assert.match(String(await a.decodeJpegAsync(cut)), /Premature end of JPEG file/);
  assert.match(String(a.decodeJpeg(Buffer.from('not a jpeg at all'))), /Not a JPEG file/);
  assert.match(String(a.decodeJpeg(new Uint8Array(0))), /Empty input file/);
  // CMYK needs a colour conversion libjpeg does not do: sharp converts it.
  const cmyk = await sharp(noisy, { raw: { width: 48, height: 32, channels: 3 } })
    .toColourspace('cmyk')
    .jpeg()
    .toBuffer();
  assert.match(String(a.decodeJpeg(cmyk)), /colour space \d+ is not YCbCr, RGB or grey/);
  assert.throws(() => a.decodeJpeg('x' as unknown as Uint8Array), /decodeJpeg: expected a Uint8Array/);
  assert.throws(
    () => a.decodeJpegAsync(new Float32Array(4) as never),
    /decodeJpegAsync: expected a Uint8Array/,
  );
});

test('the native resized crop equals the JavaScript one bit for bit (uint8 and float out, flips, 1-4 channels)', () => {
  addon();
  const rng = new Rng(7n);
  const int = (lo: number, hi: number) => lo + Math.floor(rng.random() * (hi - lo + 1));
  for (let trial = 0; trial < 60; trial++) {
    const [h, w, c] = [int(1, 70), int(1, 90), int(1, 4)];
    const img = { data: Uint8Array.from({ length: h * w * c }, () => int(0, 255)), shape: [h, w, c] };
    const [ch, cw] = [int(1, h), int(1, w)];
    const [top, left] = [int(0, h - ch), int(0, w - cw)];
    const [oh, ow] = [int(1, 60), int(1, 60)];
    const flip = rng.random() < 0.5;
    // Tables as Normalize makes them: irregular floats, one per channel or one for all.
    const tables = Array.from({ length: trial % 3 === 0 ? 1 : c }, (_, k) =>
      Float32Array.from({ length: 256 }, (_, v) => (v / 255 - 0.4 - k / 10) / (0.2 + k / 17)),
    );
    for (const output of [{ flip }, { flip, tables }]) {
      const what = `trial ${trial}: ${h}x${w}x${c} window (${top}, ${left}, ${ch}, ${cw}) -> ${oh}x${ow} ${JSON.stringify({ flip, tables: 'tables' in output })}`;
      const js = resizeHwcJs(img, top, left, ch, cw, oh, ow, output);
      const native = resizeHwc(img, top, left, ch, cw, oh, ow, output);
      assert.deepEqual(native.shape, js.shape, what);
      assert.equal(native.data.constructor, js.data.constructor, what);
      assert.equal(sha256(native.data), sha256(js.data), what);
    }
  }
  const img = { data: new Uint8Array(2 * 3 * 3), shape: [2, 3, 3] };
  assert.throws(() => resizeHwc(img, 1, 0, 2, 3, 4, 4), /window \(1, 0, 2, 3\) is outside the 2x3/);
});

test('with TSDDP_IMAGE_ADDON=0, sharp and the JavaScript transforms give the same bytes', () => {
  const paths = Object.keys(PIL_JPEGS).map((name, i) => {
    const p = join(root, `${i}.jpg`);
    writeFileSync(p, Buffer.from(PIL_JPEGS[name].b64, 'base64'));
    return p;
  });
  // Decode + the ImageNet training transforms (fused) for each file, hashed.
  const script = `
    import { createHash } from 'node:crypto';
    import * as data from './src/data/index.ts';
    import { jpegDecoderName } from './src/data/image-addon.ts';
    const tf = new data.Compose([new data.RandomResizedCrop(24), new data.RandomHorizontalFlip(), new data.ToTensor(),
      new data.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]);
    const out = [jpegDecoderName()];
    for (const p of ${JSON.stringify(paths)}) {
      const img = await data.decodeImage(p);
      const x = tf.apply(img, new data.Rng(3n));
      for (const a of [img.data, x.data]) out.push(createHash('sha256').update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength)).digest('hex'));
    }
    console.log(JSON.stringify(out));`;
  const run = (env: Record<string, string>) =>
    JSON.parse(
      execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        env: { ...process.env, ...env },
        encoding: 'utf8',
      }),
    ) as string[];
  const [offName, ...off] = run({ TSDDP_IMAGE_ADDON: '0' });
  const [onName, ...on] = run({});
  assert.equal(offName, 'sharp');
  assert.match(onName, /^libjpeg/);
  assert.deepEqual(
    off.filter((_, i) => i % 2 === 0),
    Object.values(PIL_JPEGS).map((j) => j.pilSha256),
  );
  assert.deepEqual(on, off);
});

test('the addon loads and decodes in a worker thread (the DataLoader workers)', async () => {
  const { b64, pilSha256 } = PIL_JPEGS['baseline 4:2:0'];
  const addonUrl = new URL('../native/build/Release/tsddp_image.node', import.meta.url);
  const code =
    "const { parentPort, workerData } = require('node:worker_threads');" +
    "const a = require(require('node:url').fileURLToPath(workerData.url));" +
    "const r = a.decodeJpeg(Buffer.from(workerData.b64, 'base64'));" +
    "parentPort.postMessage(require('node:crypto').createHash('sha256').update(new Uint8Array(r.data)).digest('hex'));";
  const worker = new Worker(code, { eval: true, workerData: { url: addonUrl.href, b64 } });
  const hash = await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  assert.equal(hash, pilSha256);
});
