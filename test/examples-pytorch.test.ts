// The pytorch/examples programs ported to tsddp (examples/pytorch/), each run briefly at
// tiny sizes: it must run to the end and its loss must fall.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-examples-pytorch-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

function run(script: string, args: string[]): string {
  const r = spawnSync(process.execPath, ['--import', 'tsx', script, ...args], {
    encoding: 'utf8',
    timeout: 300_000,
    env: { ...process.env, OMP_NUM_THREADS: '1' },
  });
  assert.equal(r.status, 0, `${script} ${args.join(' ')}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** Every number after `label` in the output, in order. */
function numbers(out: string, label: RegExp): number[] {
  return [...out.matchAll(label)].map((m) => Number(m[1]));
}

test('time_sequence_prediction: LSTM cells trained by LBFGS with a closure; the loss falls', () => {
  const out = run('examples/pytorch/time_sequence_prediction.ts', [
    '--steps',
    '2',
    '--samples',
    '6',
    '--length',
    '40',
    '--future',
    '10',
  ]);
  const losses = numbers(out, /^loss: (\S+)$/gm);
  const tests = numbers(out, /^test loss: (\S+)$/gm);
  assert.equal(tests.length, 2, out);
  assert.ok(losses.length > 2, out);
  assert.ok(losses.at(-1)! < losses[0] / 2, `training loss ${losses[0]} -> ${losses.at(-1)}`);
  assert.ok(tests[1] < tests[0] || tests[1] < losses[0], `test loss ${tests.join(' -> ')}`);
});

/** The bundled sonnets split into a corpus folder (train, valid, test); the vocabulary size. */
function corpus(): { dir: string; words: number } {
  const dir = join(tmp, 'corpus');
  const lines = readFileSync('test/fixtures/text/tiny.txt', 'utf8').split('\n');
  rmSync(dir, { recursive: true, force: true });
  spawnSync('mkdir', ['-p', dir]);
  writeFileSync(join(dir, 'train.txt'), `${lines.slice(0, 120).join('\n')}\n`);
  writeFileSync(join(dir, 'valid.txt'), `${lines.slice(120, 150).join('\n')}\n`);
  writeFileSync(join(dir, 'test.txt'), `${lines.slice(150, 180).join('\n')}\n`);
  const words = new Set(lines.slice(0, 180).flatMap((l) => l.split(/\s+/).filter(Boolean)));
  return { dir, words: words.size + 1 }; // + <eos>
}

for (const model of ['LSTM', 'Transformer']) {
  test(`word_language_model (${model}): below the uniform model's loss on held-out text`, () => {
    const { dir, words } = corpus();
    const out = run('examples/pytorch/word_language_model/main.ts', [
      '--data',
      dir,
      '--model',
      model,
      '--epochs',
      '2',
      '--emsize',
      '16',
      '--nhid',
      '16',
      '--nlayers',
      '1',
      '--bptt',
      '10',
      '--batch-size',
      '4',
      '--log-interval',
      '10',
      '--lr',
      model === 'LSTM' ? '20' : '5',
      '--save',
      join(tmp, `${model}.pt`),
    ]);
    const valid = numbers(out, /valid loss +(\S+)/g);
    const testLoss = numbers(out, /test loss +(\S+)/g);
    assert.equal(valid.length, 2, out);
    // A model that learned nothing predicts every word alike: ln(vocabulary size).
    const uniform = Math.log(words);
    assert.ok(
      Math.min(...valid) < uniform - 0.2,
      `valid ${valid.join(', ')} vs uniform ${uniform.toFixed(2)}`,
    );
    assert.ok(testLoss[0] < uniform, `test ${testLoss[0]} vs uniform ${uniform.toFixed(2)}`);
  });
}

/**
 * MNIST's idx files with learnable digits: label k lights rows 2k+4 and 2k+5 of a noisy
 * image (the real set cannot be downloaded here). Written where torchvision (and
 * t.data.MNIST) look: <root>/MNIST/raw/.
 */
function fakeMnist(root: string, counts: { train: number; test: number }): void {
  const raw = join(root, 'MNIST', 'raw');
  mkdirSync(raw, { recursive: true });
  let seed = 1;
  const rand = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const header = (magic: number, dims: number[]) => {
    const b = Buffer.alloc(4 + 4 * dims.length);
    b.writeUInt32BE(magic, 0);
    dims.forEach((d, i) => {
      b.writeUInt32BE(d, 4 + 4 * i);
    });
    return b;
  };
  for (const [split, n] of [
    ['train', counts.train],
    ['t10k', counts.test],
  ] as const) {
    const labels = Uint8Array.from({ length: n }, (_, i) => i % 10);
    const images = new Uint8Array(n * 784);
    for (let i = 0; i < n; i++)
      for (let p = 0; p < 784; p++) {
        const row = Math.floor(p / 28);
        const lit = row === 2 * labels[i] + 4 || row === 2 * labels[i] + 5;
        images[i * 784 + p] = lit ? 200 + Math.floor(55 * rand()) : Math.floor(40 * rand());
      }
    writeFileSync(
      join(raw, `${split}-images-idx3-ubyte`),
      Buffer.concat([header(0x803, [n, 28, 28]), images]),
    );
    writeFileSync(join(raw, `${split}-labels-idx1-ubyte`), Buffer.concat([header(0x801, [n]), labels]));
  }
}

test('vae: the variational autoencoder on MNIST; its training and test losses fall', () => {
  const root = join(tmp, 'mnist');
  fakeMnist(root, { train: 320, test: 64 });
  const out = run('examples/pytorch/vae.ts', ['--data', root, '--batch-size', '32', '--epochs', '2']);
  const train = numbers(out, /Epoch: \d+ Average loss: (\S+)/g);
  const testLoss = numbers(out, /Test set loss: (\S+)/g);
  assert.equal(train.length, 2, out);
  assert.ok(train[1] < train[0], `average loss ${train.join(' -> ')}`);
  assert.ok(testLoss[1] < testLoss[0], `test loss ${testLoss.join(' -> ')}`);
});

test('siamese_network: ResNet-18 twins learn which MNIST pairs show the same digit', () => {
  const root = join(tmp, 'mnist-pairs');
  fakeMnist(root, { train: 160, test: 40 });
  const out = run('examples/pytorch/siamese_network.ts', [
    '--data',
    root,
    '--batch-size',
    '16',
    '--test-batch-size',
    '40',
    '--epochs',
    '2',
    '--log-interval',
    '1',
  ]);
  const losses = numbers(out, /\tLoss: (\S+)/g);
  const accuracy = numbers(out, /Accuracy: (\d+)\/40/g);
  assert.equal(accuracy.length, 2, out);
  const head = losses.slice(0, 3).reduce((s, x) => s + x, 0) / 3;
  const tail = losses.slice(-3).reduce((s, x) => s + x, 0) / 3;
  assert.ok(tail < head, `training loss ${losses.map((x) => x.toFixed(3)).join(' ')}`);
  assert.ok(accuracy[1] > 20, `accuracy ${accuracy.join(' -> ')} of 40 (chance: 20)`);
});
