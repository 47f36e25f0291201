// CIFAR-10/100 binary readers and the MD5-checked download + extraction, against a local
// HTTP server serving small archives made here in the official layout.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, test } from 'node:test';
import { CIFAR10, CIFAR100, DataError, DataLoader, extractTarGz } from '../src/data/index.ts';
import { tempNameOwner } from '../src/files/index.ts';
import type * as t from '../src/index.ts';
import { tarGz } from './fixtures/data/tar.ts';

/** A record: label byte(s) then R, G, B planes, with pixel values derived from (i, plane, p). */
function record(labels: number[], i: number): Uint8Array {
  const r = new Uint8Array(labels.length + 3072);
  r.set(labels);
  for (let k = 0; k < 3072; k++) r[labels.length + k] = (i * 7 + k * 13) % 256;
  return r;
}
function batch(labelsOf: (i: number) => number[], from: number, n: number): Uint8Array {
  const recs = Array.from({ length: n }, (_, k) => record(labelsOf(from + k), from + k));
  const out = new Uint8Array(recs.reduce((a, r) => a + r.length, 0));
  let o = 0;
  for (const r of recs) {
    out.set(r, o);
    o += r.length;
  }
  return out;
}

const files10: Record<string, Uint8Array> = {};
for (let k = 0; k < 5; k++)
  files10[`cifar-10-batches-bin/data_batch_${k + 1}.bin`] = batch((i) => [i % 10], k * 3, 3);
files10['cifar-10-batches-bin/test_batch.bin'] = batch((i) => [(i + 1) % 10], 100, 2);
files10['cifar-10-batches-bin/batches.meta.txt'] = new TextEncoder().encode('airplane\n');
const archive10 = tarGz(files10);
const md5of = (b: Uint8Array) => createHash('md5').update(b).digest('hex');

const archive100 = tarGz({
  'cifar-100-binary/train.bin': batch((i) => [i % 20, i % 100], 0, 4),
  'cifar-100-binary/test.bin': batch(() => [1, 42], 50, 1),
});

let server: Server;
let base: string;
const hits: string[] = [];
before(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? '');
    if (req.url === '/cifar-10-binary.tar.gz') res.end(archive10);
    else if (req.url === '/cifar-100-binary.tar.gz') res.end(archive100);
    else if (req.url === '/broken.tar.gz') res.end(archive10.subarray(0, archive10.length >> 1));
    else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

const tmp = () => mkdtempSync(join(tmpdir(), 'tsddp-cifar-'));

test('CIFAR10: download with MD5 check, extract, read records as HWC images', async () => {
  const root = tmp();
  try {
    const url = `${base}/cifar-10-binary.tar.gz`;
    const ds = await CIFAR10.create({ root, download: true, url, md5: md5of(archive10) });
    assert.equal(ds.length, 15);
    const s = ds.get(4); // batch 2, record 1
    assert.equal(s.label, 4);
    assert.deepEqual(s.image.shape, [32, 32, 3]);
    // Pixel (y=0, x=1): R plane index 1, G 1024 + 1, B 2048 + 1 of record 4.
    const px = Array.from(s.image.data.slice(3, 6) as Uint8Array);
    assert.deepEqual(px, [(4 * 7 + 1 * 13) % 256, (4 * 7 + 1025 * 13) % 256, (4 * 7 + 2049 * 13) % 256]);
    const testSet = new CIFAR10({ root, train: false });
    assert.equal(testSet.length, 2);
    assert.equal(testSet.get(1).label, 2);
    // Already there: no second download.
    const before = hits.length;
    await CIFAR10.create({ root, download: true, url, md5: md5of(archive10) });
    assert.equal(hits.length, before);
    // No temp file of the download or the extraction (src/files names them .<name>.tmp-<pid>-<hex>).
    assert.ok(
      !readdirSync(join(root, 'cifar-10-batches-bin')).some((f) => tempNameOwner(basename(f)) !== null),
    );
    assert.ok(!readdirSync(root).some((f) => tempNameOwner(f) !== null));

    // Through workers, the same batches.
    const labels = async (numWorkers: number) => {
      const out: number[] = [];
      for await (using b of new DataLoader(ds, { batchSize: 4, numWorkers })) {
        out.push(...((b.label as t.Tensor).toArray() as number[]));
      }
      return out;
    };
    assert.deepEqual(await labels(1), await labels(0));
    ds.close();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a wrong MD5 deletes the download and throws; missing or truncated files are named', async () => {
  const root = tmp();
  try {
    const url = `${base}/cifar-10-binary.tar.gz`;
    await assert.rejects(
      CIFAR10.download(root, { url, md5: '0'.repeat(32) }),
      (e: unknown) =>
        e instanceof DataError && /MD5 mismatch \(expected 0{32}, got [0-9a-f]{32}\)/.test(e.message),
    );
    assert.deepEqual(readdirSync(root), [], 'nothing is left behind');
    assert.throws(() => new CIFAR10({ root }), /data_batch_1\.bin is missing; download it with/);
    await assert.rejects(CIFAR10.download(root, { url: `${base}/nope.tar.gz` }), /HTTP 404/);

    await CIFAR10.download(root, { url, md5: md5of(archive10) });
    truncateSync(join(root, 'cifar-10-batches-bin', 'data_batch_3.bin'), 3000);
    assert.throws(
      () => new CIFAR10({ root }),
      (e: unknown) =>
        e instanceof DataError && /data_batch_3\.bin is truncated or corrupt/.test(e.message) && !!e.path,
    );

    // A truncated archive fails extraction without leaving partial files.
    const broken = join(root, 'broken.tar.gz');
    writeFileSync(broken, archive10.subarray(0, archive10.length >> 1));
    const dest = join(root, 'out');
    await assert.rejects(extractTarGz(broken, dest), /cannot extract .*broken\.tar\.gz/);
    if (existsSync(dest)) {
      const left = readdirSync(dest, { recursive: true }) as string[];
      assert.ok(!left.some((f) => tempNameOwner(basename(f)) !== null), `partial files left: ${left}`);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('archive members that would escape the target folder are refused', async () => {
  const root = tmp();
  try {
    const evil = join(root, 'evil.tar.gz');
    writeFileSync(evil, tarGz({ '../escape.txt': new Uint8Array([1]) }));
    await assert.rejects(extractTarGz(evil, join(root, 'x')), /would be written outside the target folder/);
    assert.ok(!existsSync(join(root, 'escape.txt')));
    const long = `${'d'.repeat(60)}/${'f'.repeat(60)}.bin`;
    writeFileSync(evil, tarGz({ [long]: new Uint8Array([7, 8]) }));
    const written = await extractTarGz(evil, join(root, 'y'));
    assert.deepEqual(written, [join(root, 'y', long)]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('CIFAR100: fine labels from the two-byte records', async () => {
  const root = tmp();
  try {
    const ds = await CIFAR100.create({ root, download: true, url: `${base}/cifar-100-binary.tar.gz` });
    assert.equal(ds.length, 4);
    assert.deepEqual(
      [0, 1, 2, 3].map((i) => ds.get(i).label),
      [0, 1, 2, 3],
    );
    assert.equal(new CIFAR100({ root, train: false }).get(0).label, 42);
    assert.equal(ds.get(2).image.data[0], (2 * 7) % 256);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
