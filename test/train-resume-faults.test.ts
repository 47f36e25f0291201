// Resume must lose nothing. Each fault as an adversarial run found it: `--resume auto`
// over checkpoints that were all corrupt started again at step 0 and overwrote them and
// the earlier metrics; a run stopped during the evaluation after its checkpoint resumed
// past it and never evaluated; a resume into an ImageFolder that lost files spun forever
// without a word; and a model whose code changed must be named, key by key, before
// anything is touched.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { nn } from '../src/index.ts';
import { readJsonLines } from '../src/metrics/index.ts';
import { type TrainConfigInput, train } from '../src/train/index.ts';
import { encodePng } from './fixtures/data/png.ts';
import { snapshot } from './helpers/snapshot.ts';
import { TINY_TRAIN } from './helpers/tiny-train.ts';
import { ROOT } from './workers/train-spawn.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-resume-faults-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
const quiet = { progress: false } as const;

function config(name: string): TrainConfigInput {
  return {
    ...TINY_TRAIN,
    epochs: 2,
    checkpointEvery: 2,
    checkpointKeep: 5,
    checkpointDir: join(tmp, name, 'ckpt'),
    metricsFile: join(tmp, name, 'm.jsonl'),
  };
}

/** Flips one byte in the middle of `file`. */
function flipByte(file: string): void {
  const b = readFileSync(file);
  b[b.length >> 1] ^= 0xff;
  writeFileSync(file, b);
}

test('--resume auto over checkpoints that are all corrupt is refused, naming each and why; nothing changes', async () => {
  const cfg = config('corrupt');
  await train({ ...cfg, maxSteps: 4 }, quiet);
  for (const c of ['ckpt-000002', 'ckpt-000004'])
    flipByte(join(cfg.checkpointDir as string, c, 'model.safetensors'));
  const before = snapshot(join(tmp, 'corrupt'));
  let steps = 0;
  await assert.rejects(
    train({ ...cfg, resume: 'auto' }, { ...quiet, onStep: () => void steps++ }),
    (e: Error) => {
      assert.equal(e.name, 'PriorRunError');
      assert.match(e.message, /no checkpoint in .*ckpt can be resumed/);
      assert.match(e.message, /ckpt-000002\/model\.safetensors: sha256 is [0-9a-f]+, the manifest says/);
      assert.match(e.message, /ckpt-000004\/model\.safetensors: sha256/);
      assert.match(e.message, /Nothing was changed/);
      return true;
    },
  );
  assert.equal(steps, 0);
  assert.deepEqual(snapshot(join(tmp, 'corrupt')), before, 'every byte as it was');
});

test('--resume auto where no checkpoint was ever committed (the first save died) is refused too', async () => {
  const cfg = config('uncommitted');
  await train({ ...cfg, maxSteps: 2 }, quiet);
  rmSync(join(cfg.checkpointDir as string, 'ckpt-000002', 'manifest.json'));
  const before = snapshot(join(tmp, 'uncommitted'));
  await assert.rejects(
    train({ ...cfg, resume: 'auto' }, quiet),
    /no checkpoint in .* can be resumed.*ckpt-000002: .*no manifest\.json/,
  );
  assert.deepEqual(snapshot(join(tmp, 'uncommitted')), before);
});

test('a run stopped during the evaluation after its checkpoint reruns that evaluation on resume', async () => {
  const cfg = { ...config('eval'), epochs: 1, evalEvery: 1, checkpointEvery: 0 };
  // Stopped after the last step's checkpoint, before its evaluation finished (as a rank
  // killed in evaluate() leaves it: the checkpoint committed, no evaluation recorded).
  await assert.rejects(
    train(cfg, {
      ...quiet,
      onStep: ({ step }) => {
        if (step === 4) throw new Error('killed');
      },
    }),
    /killed/,
  );
  const ckpt = join(cfg.checkpointDir as string, 'ckpt-000004');
  assert.ok(existsSync(join(ckpt, 'manifest.json')));
  assert.ok(!existsSync(join(ckpt, 'evaluation.json')));
  const evals: number[] = [];
  const r = await train({ ...cfg, resume: 'auto' }, { ...quiet, onEval: (e) => void evals.push(e.step) });
  assert.equal(r.startStep, 4);
  assert.deepEqual(evals, [4], 'the evaluation of step 4 ran');
  assert.ok(r.lastEval !== null && r.lastEval.count === 8);
  assert.ok(existsSync(join(ckpt, 'evaluation.json')), 'and is recorded beside the checkpoint');
  const recorded = readJsonLines(cfg.metricsFile as string).filter((x) => x.type === 'eval');
  assert.deepEqual(
    recorded.map((x) => x.step),
    [4],
  );
  // Resumed once more, nothing is left to do: the evaluation is not repeated.
  const again = await train({ ...cfg, resume: 'auto' }, { ...quiet, onEval: (e) => void evals.push(e.step) });
  assert.equal(again.lastEval, null);
  assert.deepEqual(evals, [4]);
});

test('a pending evaluation resumed by name, into another --checkpoint-dir, is recorded beside the checkpoint it ran for', async () => {
  const a = { ...config('eval-a'), epochs: 1, evalEvery: 1, checkpointEvery: 0 };
  await assert.rejects(
    train(a, {
      ...quiet,
      onStep: ({ step }) => {
        if (step === 4) throw new Error('killed');
      },
    }),
    /killed/,
  );
  const ckpt = join(a.checkpointDir as string, 'ckpt-000004');
  const b = { ...a, checkpointDir: join(tmp, 'eval-b', 'ckpt'), metricsFile: join(tmp, 'eval-b', 'm.jsonl') };
  const r = await train({ ...b, resume: ckpt }, quiet);
  assert.ok(r.lastEval !== null);
  assert.ok(
    existsSync(join(ckpt, 'evaluation.json')),
    'recorded in the folder it resumed, not under --checkpoint-dir',
  );
});

/** An ImageFolder root with train/ and val/, `perClass` 16x16 PNGs in each of two classes. */
function imageFolder(name: string, perClass: number): string {
  const root = join(tmp, name, 'data');
  for (const split of ['train', 'val'])
    for (const cls of ['a', 'b']) {
      mkdirSync(join(root, split, cls), { recursive: true });
      const n = split === 'train' ? perClass : 2;
      for (let i = 0; i < n; i++) {
        const px = Uint8Array.from(
          { length: 16 * 16 * 3 },
          (_, k) => (k * 7 + i * 13 + cls.charCodeAt(0)) % 256,
        );
        writeFileSync(join(root, split, cls, `${i}.png`), encodePng(16, 16, px));
      }
    }
  return root;
}

/** `tsddp train <args>` in a child process, killed after 2 minutes (a regression here was an endless loop). */
function tsddpTrain(args: string[]): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, ['bin/tsddp.mjs', 'train', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, OMP_NUM_THREADS: '1' },
    timeout: 120_000,
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

test('a resume into an ImageFolder that lost files is refused with the counts; --allow-data-change goes on', async () => {
  const data = imageFolder('shrink', 12); // 24 training images: 6 steps of 4 per epoch
  const ckpt = join(tmp, 'shrink', 'ckpt');
  const args = [
    ...[
      '--model',
      'resnet18',
      '--width-multiplier',
      '0.125',
      '--image-size',
      '16',
      '--dataset',
      'imagefolder',
    ],
    ...['--data', data, '--batch-size', '4', '--epochs', '2', '--workers', '0', '--eval-every', '0'],
    ...['--checkpoint-dir', ckpt, '--checkpoint-every', '5', '--checkpoint-keep', '5'],
  ];
  assert.equal(tsddpTrain([...args, '--max-steps', '5']).status, 0); // stops at step 5 of epoch 1's 6
  // The user deletes 8 images: 4 steps per epoch, and step 5 of the first is past its end.
  for (const cls of ['a', 'b']) for (let i = 8; i < 12; i++) rmSync(join(data, 'train', cls, `${i}.png`));
  const before = snapshot(ckpt);
  const refused = tsddpTrain([...args, '--resume', 'auto']);
  assert.equal(refused.status, 1, refused.out);
  assert.match(
    refused.out,
    /the training data changed since this checkpoint \(24 training samples then, 16 now\)/,
  );
  assert.match(refused.out, /--allow-data-change/);
  assert.deepEqual(snapshot(ckpt), before);
  const goes = tsddpTrain([...args, '--resume', 'auto', '--allow-data-change']);
  assert.equal(goes.status, 0, goes.out);
  assert.match(goes.out, /the training data changed \(24 training samples then, 16 now\); going on with it/);
  assert.match(goes.out, /epoch 1 has 4 steps now and 5 were done: it is over/);
  assert.match(goes.out, /done: 9 steps/, 'epoch 2 ran whole after the 5 steps of epoch 1');
});

test('the same number of images with other files is a change of data too', async () => {
  const data = imageFolder('renamed', 4);
  const cfg: TrainConfigInput = {
    ...config('renamed'),
    dataset: 'imagefolder',
    data,
    trainSize: undefined,
    valSize: undefined,
    batchSize: 4,
  };
  await train({ ...cfg, maxSteps: 2 }, quiet);
  renameSync(join(data, 'train', 'a', '0.png'), join(data, 'train', 'b', 'moved.png'));
  await assert.rejects(
    train({ ...cfg, resume: 'auto' }, quiet),
    /training data changed .*the same number of samples \(8\), but other files or labels/,
  );
});

test('--resume auto with every option the same but a changed model names the keys before touching anything', async () => {
  const cfg = config('model');
  const small = () => new nn.Sequential(new nn.Flatten(), new nn.Linear(3 * 16 * 16, 10));
  await train({ ...cfg, maxSteps: 2 }, { ...quiet, model: small });
  const before = snapshot(join(tmp, 'model'));
  const grown = () =>
    new nn.Sequential(new nn.Flatten(), new nn.Linear(3 * 16 * 16, 10), new nn.ReLU(), new nn.Linear(10, 10));
  await assert.rejects(train({ ...cfg, resume: 'auto' }, { ...quiet, model: grown }), (e: Error) => {
    assert.equal(e.name, 'CheckpointError');
    assert.match(
      e.message,
      /model state does not match: missing keys \[3\.weight, 3\.bias\], unexpected keys \[\]/,
    );
    return true;
  });
  assert.deepEqual(snapshot(join(tmp, 'model')), before);
});
