// MNIST / FashionMNIST / KMNIST and the idx reader, on idx files written here in the
// official layout, and their MD5-checked download against a local HTTP server (the
// sandbox cannot reach torchvision's mirrors), as test/data-cifar.test.ts does for CIFAR.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import {
  Compose,
  DataError,
  DataLoader,
  FashionMNIST,
  gunzipFile,
  KMNIST,
  MNIST,
  Normalize,
  readIdx,
  ToTensor,
} from '../src/data/index.ts';
import { tempNameOwner } from '../src/files/index.ts';
import type * as t from '../src/index.ts';

/** An idx file: magic 0x0000TTNN, big-endian dimensions, then the elements. */
function idx(type: number, shape: number[], body: Uint8Array): Buffer {
  const head = Buffer.alloc(4 + 4 * shape.length);
  head[2] = type;
  head[3] = shape.length;
  for (const [k, d] of shape.entries()) head.writeUInt32BE(d, 4 + 4 * k);
  return Buffer.concat([head, body]);
}
const pixel = (i: number, k: number) => (i * 7 + k * 13) % 256;
function images(n: number, from = 0, h = 28, w = 28): Buffer {
  const body = new Uint8Array(n * h * w);
  for (let i = 0; i < n; i++) for (let k = 0; k < h * w; k++) body[i * h * w + k] = pixel(from + i, k);
  return idx(0x08, [n, h, w], body);
}
const labels = (xs: number[]) => idx(0x08, [xs.length], Uint8Array.from(xs));

const trainLabels = Array.from({ length: 6 }, (_, i) => (i * 3) % 10);
const files: Record<string, Buffer> = {
  'train-images-idx3-ubyte': images(6),
  'train-labels-idx1-ubyte': labels(trainLabels),
  't10k-images-idx3-ubyte': images(2, 100),
  't10k-labels-idx1-ubyte': labels([7, 9]),
};
const gz: Record<string, Buffer> = Object.fromEntries(
  Object.entries(files).map(([name, b]) => [`${name}.gz`, gzipSync(b)]),
);
const md5of = (b: Uint8Array) => createHash('md5').update(b).digest('hex');
const md5s = Object.fromEntries(Object.entries(gz).map(([name, b]) => [name, md5of(b)]));

let server: Server;
let base: string;
const hits: string[] = [];
before(async () => {
  server = createServer((req, res) => {
    const url = req.url ?? '';
    hits.push(url);
    const name = url.split('/').pop() ?? '';
    if (url.startsWith('/good/') && gz[name] !== undefined) res.end(gz[name]);
    else if (url.startsWith('/bad/') && gz[name] !== undefined) res.end(gz[name].subarray(0, 10));
    else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

const tmp = () => mkdtempSync(join(tmpdir(), 'tsddp-mnist-'));
/** Writes `contents` (name -> bytes) into <root>/<name>/raw/. */
function writeRaw(root: string, name: string, contents: Record<string, Uint8Array>): string {
  const raw = join(root, name, 'raw');
  mkdirSync(raw, { recursive: true });
  for (const [f, b] of Object.entries(contents)) writeFileSync(join(raw, f), b);
  return raw;
}

test("MNIST: download from the first mirror that answers, MD5-checked, into torchvision's folders", async () => {
  const root = tmp();
  try {
    const mirrors = [`${base}/missing/`, `${base}/good`];
    const ds = await MNIST.create({ root, download: true, mirrors, md5: md5s });
    assert.equal(ds.length, 6);
    const raw = join(root, 'MNIST', 'raw');
    // torchvision's layout: the .gz files it downloads, and the idx files beside them.
    assert.deepEqual(readdirSync(raw).sort(), [...Object.keys(files), ...Object.keys(gz)].sort());
    const s = ds.get(4);
    assert.equal(s.label, trainLabels[4]);
    assert.deepEqual(s.image.shape, [28, 28, 1]);
    assert.ok(s.image.data instanceof Uint8Array);
    assert.deepEqual(
      Array.from(s.image.data.slice(0, 3)),
      [0, 1, 2].map((k) => pixel(4, k)),
    );
    assert.deepEqual(Array.from(ds.targets), trainLabels);
    const testSet = new MNIST({ root, train: false });
    assert.equal(testSet.length, 2);
    assert.deepEqual([testSet.get(0).label, testSet.get(1).label], [7, 9]);
    assert.equal(testSet.get(1).image.data[5], pixel(101, 5));
    // Already there: nothing is downloaded again.
    const before = hits.length;
    await MNIST.download(root, { mirrors, md5: md5s });
    assert.equal(hits.length, before);
    assert.ok(!readdirSync(raw).some((f) => tempNameOwner(f) !== null));

    // Rebuilt in workers from workerSpec, the same batches; a 1-channel transform applies.
    const transform = new Compose([new ToTensor(), new Normalize([0.1307], [0.3081])]);
    const withT = new MNIST({ root, transform });
    const load = async (numWorkers: number) => {
      const out: number[][] = [];
      for await (using b of new DataLoader(withT, { batchSize: 4, numWorkers })) {
        assert.deepEqual((b.image as t.Tensor).shape, [(b.label as t.Tensor).shape[0], 1, 28, 28]);
        out.push((b.label as t.Tensor).toArray() as number[], [(b.image as t.Tensor).sum().item()]);
      }
      return out;
    };
    assert.deepEqual(await load(1), await load(0));
    ds.close();
    withT.close();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('FashionMNIST and KMNIST: their own folders, mirrors and classes; the .gz files alone are read', async () => {
  const root = tmp();
  try {
    await FashionMNIST.download(root, { mirrors: [`${base}/good/`] });
    assert.ok(existsSync(join(root, 'FashionMNIST', 'raw', 'train-images-idx3-ubyte')));
    assert.equal(new FashionMNIST({ root }).length, 6);
    assert.equal(FashionMNIST.classes[9], 'Ankle boot');
    assert.equal(KMNIST.classes.length, 10);
    assert.equal(MNIST.classes[3], '3 - three');
    assert.deepEqual(FashionMNIST.mirrors, ['http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/']);
    assert.deepEqual(KMNIST.mirrors, ['http://codh.rois.ac.jp/kmnist/dataset/kmnist/']);
    assert.ok(MNIST.mirrors.includes('https://ossci-datasets.s3.amazonaws.com/mnist/'));
    // Only the downloaded .gz files, as a torchvision folder may hold: decompressed in memory.
    writeRaw(root, 'KMNIST', gz);
    const k = new KMNIST({ root, train: false });
    assert.deepEqual([k.get(0).label, k.get(1).label], [7, 9]);
    assert.equal(k.get(0).image.data[10], pixel(100, 10));
    const spec = k.workerSpec();
    assert.equal(spec.export, 'KMNIST');
    assert.ok(spec.module.endsWith('mnist.ts') || spec.module.endsWith('mnist.js'));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a download failing on every mirror or its MD5 names each failure and leaves no file', async () => {
  const root = tmp();
  try {
    await assert.rejects(
      MNIST.download(root, { mirrors: [`${base}/nope/`, `${base}/bad/`], md5: md5s }),
      (e: unknown) =>
        e instanceof DataError &&
        /could not download train-images-idx3-ubyte\.gz from any mirror/.test(e.message) &&
        /HTTP 404/.test(e.message) &&
        /MD5 mismatch/.test(e.message),
    );
    assert.deepEqual(readdirSync(join(root, 'MNIST', 'raw')), [], 'nothing is left behind');
    // Without an MD5 the truncated .gz downloads, and its extraction fails without a partial file.
    await assert.rejects(
      MNIST.download(root, { mirrors: [`${base}/bad/`] }),
      (e: unknown) =>
        e instanceof DataError && /cannot extract .*train-images-idx3-ubyte\.gz/.test(e.message),
    );
    assert.deepEqual(readdirSync(join(root, 'MNIST', 'raw')), ['train-images-idx3-ubyte.gz']);
    assert.throws(() => new MNIST({ root, download: true } as never), /use `await MNIST\.create/);
    await assert.rejects(gunzipFile(join(root, 'nope.gz'), join(root, 'x')), DataError);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

/** Asserts `new MNIST({ root })` throws a DataError naming `file` whose message matches `re`. */
function refused(root: string, file: string, re: RegExp): void {
  assert.throws(
    () => new MNIST({ root }),
    (e: unknown) =>
      e instanceof DataError &&
      e.path?.endsWith(file) === true &&
      e.message.includes(file) &&
      re.test(e.message),
  );
}

test('missing, truncated, wrong-magic and mismatched idx files are refused naming the file', () => {
  const root = tmp();
  try {
    refused(
      root,
      'train-images-idx3-ubyte',
      /is missing \(and so is train-images-idx3-ubyte\.gz\); download it/,
    );
    const raw = writeRaw(root, 'MNIST', files);
    assert.equal(new MNIST({ root }).length, 6);

    truncateSync(join(raw, 'train-images-idx3-ubyte'), 16 + 784 * 5 + 100);
    refused(
      root,
      'train-images-idx3-ubyte',
      /truncated or corrupt: 4036 bytes, but its header \(uint8 \[6, 28, 28\]\) needs 4720/,
    );
    truncateSync(join(raw, 'train-images-idx3-ubyte'), 10);
    refused(root, 'train-images-idx3-ubyte', /truncated: its header needs 16 bytes, the file has 10/);

    // Labels where the images should be: an idx file, but not of images.
    writeFileSync(join(raw, 'train-images-idx3-ubyte'), files['train-labels-idx1-ubyte']);
    refused(
      root,
      'train-images-idx3-ubyte',
      /has magic number 2049 \(uint8, 1 dimensions\); image files have 2051/,
    );
    // Not an idx file at all.
    writeFileSync(join(raw, 'train-images-idx3-ubyte'), Buffer.from('GIF89a not an idx file'));
    refused(root, 'train-images-idx3-ubyte', /is not an idx file: magic number 0x47494638/);

    writeFileSync(join(raw, 'train-images-idx3-ubyte'), images(5));
    refused(root, 'train-images-idx3-ubyte', /holds 5 images but .*train-labels-idx1-ubyte 6 labels/);

    // A corrupt .gz (with no idx file beside it) is named too.
    rmSync(join(raw, 'train-images-idx3-ubyte'));
    writeFileSync(join(raw, 'train-images-idx3-ubyte.gz'), gz['train-images-idx3-ubyte.gz'].subarray(0, 30));
    refused(root, 'train-images-idx3-ubyte.gz', /cannot decompress .*: unexpected end of file/);

    writeRaw(root, 'MNIST', files);
    rmSync(join(raw, 't10k-labels-idx1-ubyte'));
    assert.throws(() => new MNIST({ root, train: false }), /t10k-labels-idx1-ubyte is missing/);
    assert.throws(() => new MNIST({ root }).get(6), RangeError);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('readIdx reads every idx element type, big-endian, from the file or its .gz', () => {
  const root = tmp();
  try {
    const be = Buffer.alloc(12);
    be.writeInt16BE(-2, 0);
    be.writeInt16BE(300, 2);
    be.writeInt32BE(-70000, 4);
    be.writeInt32BE(5, 8);
    writeFileSync(join(root, 'a'), idx(0x0b, [2], be.subarray(0, 4)));
    writeFileSync(join(root, 'b.gz'), gzipSync(idx(0x0c, [1, 2], be.subarray(4))));
    const f = Buffer.alloc(8);
    f.writeFloatBE(1.5, 0);
    f.writeFloatBE(-0.25, 4);
    writeFileSync(join(root, 'c'), idx(0x0d, [2, 1, 1], f));
    writeFileSync(join(root, 'd'), idx(0x09, [2], Uint8Array.from([255, 1])));
    const d = Buffer.alloc(8);
    d.writeDoubleBE(Math.PI);
    writeFileSync(join(root, 'e'), idx(0x0e, [1], d));
    assert.deepEqual(Array.from(readIdx(join(root, 'a')).data), [-2, 300]);
    const b = readIdx(join(root, 'b.gz'));
    assert.deepEqual([b.dtype, b.shape, Array.from(b.data)], ['int32', [1, 2], [-70000, 5]]);
    assert.deepEqual(Array.from(readIdx(join(root, 'c')).data), [1.5, -0.25]);
    assert.deepEqual(Array.from(readIdx(join(root, 'd')).data), [-1, 1]);
    assert.deepEqual(Array.from(readIdx(join(root, 'e')).data), [Math.PI]);
    writeFileSync(join(root, 'z'), Buffer.from([0, 0, 0x0a, 1, 0, 0, 0, 0]));
    assert.throws(() => readIdx(join(root, 'z')), /is not an idx file: magic number 0x00000a01/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
