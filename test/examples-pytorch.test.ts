// The pytorch/examples programs ported to tsddp (examples/pytorch/), each run briefly at
// tiny sizes: it must run to the end and its loss must fall.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
