// ImageFolder: class folders and file order as torchvision's, clear errors for a missing
// folder, and decoding with sharp — or, where sharp is not installed, an error that says
// how to install it (sharp is an optional dependency; the lead decides whether to add it).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { DataError, ImageFolder, Rng } from '../src/data/index.ts';
import { encodePng } from './fixtures/data/png.ts';

const root = mkdtempSync(join(tmpdir(), 'tsddp-imagefolder-'));
after(() => rmSync(root, { recursive: true, force: true }));

const pixels = (seed: number) => Uint8Array.from({ length: 4 * 3 * 3 }, (_, k) => (seed * 31 + k * 7) % 256);
mkdirSync(join(root, 'dog', 'nested'), { recursive: true });
mkdirSync(join(root, 'cat'), { recursive: true });
writeFileSync(join(root, 'dog', 'b.png'), encodePng(3, 4, pixels(1)));
writeFileSync(join(root, 'dog', 'nested', 'a.PNG'), encodePng(3, 4, pixels(2)));
writeFileSync(join(root, 'dog', 'notes.txt'), 'not an image');
writeFileSync(join(root, 'cat', 'x.png'), encodePng(3, 4, pixels(3)));
// A PNG named .jpg must still decode (content is sniffed), a corrupt one must not.
writeFileSync(join(root, 'cat', 'y.jpg'), encodePng(3, 4, pixels(4)));
writeFileSync(join(root, 'cat', 'z.jpg'), Buffer.from('definitely not a jpeg'));

const sharpInstalled = await import('sharp' as string).then(
  () => true,
  () => false,
);

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
    ],
  );
  assert.throws(() => new ImageFolder({ root: join(root, 'missing') }), /missing is not a folder/);
  assert.throws(
    () => new ImageFolder({ root: join(root, 'dog', 'nested') }),
    /couldn't find any class folder/,
  );
});

test('images decode with sharp, or the error says how to install it', async () => {
  const ds = new ImageFolder({ root });
  if (!sharpInstalled) {
    await assert.rejects(ds.get(0), (e: unknown) => {
      assert.ok(e instanceof DataError);
      assert.match(e.message, /'sharp' package, which is not installed .*npm install sharp@\^0\.35/);
      return true;
    });
    // Not even onError: 'skip' hides a missing decoder.
    await assert.rejects(new ImageFolder({ root, onError: 'skip' }).get(0), /npm install sharp/);
    return;
  }
  const x = await ds.get(0);
  assert.deepEqual(x.image.shape, [4, 3, 3]);
  assert.deepEqual(Array.from(x.image.data as Uint8Array), Array.from(pixels(3)));
  assert.equal(x.label, 0);
  assert.deepEqual(
    Array.from((await ds.get(1)).image.data as Uint8Array),
    Array.from(pixels(4)),
    'PNG named .jpg',
  );
  await assert.rejects(
    ds.get(2),
    (e: unknown) => e instanceof DataError && e.path === join(root, 'cat', 'z.jpg'),
  );
  const skipping = new ImageFolder({ root, onError: 'skip' });
  const s = await skipping.get(2, { rng: new Rng(0), workerId: 0, numWorkers: 0, epoch: 0 });
  // Replaced by the next decodable image, with that image's label (no silent label shift).
  assert.deepEqual(Array.from(s.image.data as Uint8Array), Array.from(pixels(1)));
  assert.equal(s.label, 1);
  assert.equal(skipping.skipped, 1);
});
