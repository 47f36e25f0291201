// t.utils.tensorboard.SummaryWriter. The oracle is TensorBoard itself: where .venv has torch
// and tensorboard (npm run setup installs both), test/fixtures/tensorboard/compare.py makes
// PyTorch's SummaryWriter write the scenario below and reads its folder and tsddp's with
// TensorBoard's EventMultiplexer: every run, tag, step and value must be the same (images
// by their decoded pixels). Everywhere, the files are read back here through their TFRecord
// framing, both CRCs checked, and the errors and file handling are tested.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { REPO_ROOT } from '../src/benchmark/reference.ts';
import * as t from '../src/index.ts';
import { train } from '../src/train/index.ts';
import { eventFiles, readEvents, scalars } from './helpers/tensorboard-events.ts';
import { TINY_TRAIN } from './helpers/tiny-train.ts';

const { SummaryWriter, TensorBoardError, crc32, crc32c, maskedCrc32c } = t.utils.tensorboard;
const PYTHON = join(REPO_ROOT, '.venv', 'bin', 'python');
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'tsddp-tensorboard-'));
  dirs.push(d);
  return d;
}

/** The scenario of compare.py, call for call. */
function scenario(w: InstanceType<typeof SummaryWriter>): void {
  for (let i = 0; i < 5; i++) w.addScalar('loss', 1 / (i + 1), i);
  w.addScalar('loss_t', t.tensor(2.5), 5);
  w.addScalars('acc', { train: 0.5, val: 0.25 }, 3);
  const values = t.arange(-50, 51, { dtype: 'float32' }).div(7);
  w.addHistogram('weights', values, 7);
  w.addHistogram('weights_10', values, 7, 10);
  w.addHistogram('weights_edges', values, 7, [-5, -1, 0, 0.5, 3]);
  w.addHistogram('weights_max', values, 7, { maxBins: 20 });
  w.addImage('rgb', t.arange(60, { dtype: 'float32' }).reshape([3, 4, 5]).div(59), 0);
  w.addImage('grey', t.arange(12, { dtype: 'uint8' }).mul(20).reshape([3, 4]), 1, { dataformats: 'HW' });
  w.addImages('batch', t.arange(160, { dtype: 'float32' }).reshape([10, 1, 4, 4]).div(159), 2);
  w.addText('note', 'hello **world**', 2);
  w.addHparams({ lr: 0.1, opt: 'sgd', layers: 4 }, { 'hparam/acc': 0.9 }, { runName: 'hp' });
}

const tensorboard =
  spawnSync(PYTHON, ['-c', 'import torch, tensorboard'], { encoding: 'utf8' }).status === 0
    ? true
    : `${PYTHON} cannot import torch and tensorboard (npm run setup installs them)`;

test('the CRCs: CRC-32C and CRC-32 check values', () => {
  const nine = Buffer.from('123456789');
  assert.equal(crc32c(nine), 0xe3069283);
  assert.equal(crc32(nine), 0xcbf43926);
  const c = crc32c(nine);
  assert.equal(maskedCrc32c(nine), (((c >>> 15) | (c << 17)) + 0xa282ead8) >>> 0);
});

test("TensorBoard reads from tsddp's files what it reads from PyTorch's SummaryWriter's", {
  skip: tensorboard === true ? false : tensorboard,
}, () => {
  const root = tmp();
  const ours = join(root, 'tsddp');
  const w = new SummaryWriter(ours);
  scenario(w);
  w.close();
  const r = spawnSync(
    PYTHON,
    [join(REPO_ROOT, 'test/fixtures/tensorboard/compare.py'), ours, join(root, 'torch')],
    {
      encoding: 'utf8',
    },
  );
  assert.equal(r.status, 0, r.stderr);
  const { tsddp, torch } = JSON.parse(r.stdout) as Record<
    string,
    Record<string, Record<string, [number, unknown][]>>
  >;
  assert.deepEqual(Object.keys(tsddp).sort(), ['.', 'acc_train', 'acc_val', 'hp']);
  assert.deepEqual(Object.keys(tsddp).sort(), Object.keys(torch).sort());
  let compared = 0;
  for (const run of Object.keys(torch)) {
    assert.deepEqual(Object.keys(tsddp[run]).sort(), Object.keys(torch[run]).sort(), `run ${run}'s tags`);
    for (const [tag, events] of Object.entries(torch[run])) {
      const mine = tsddp[run][tag];
      // numpy sums with its pairwise sum and a BLAS dot, tsddp left to right: the last bits may differ.
      for (const [i, [, value]] of events.entries()) {
        if (typeof value !== 'object' || value === null) continue;
        const v = value as Record<string, number>;
        const m = mine[i][1] as Record<string, number>;
        for (const k of ['sum', 'sumSquares'] as const)
          if (k in v) {
            assert.ok(Math.abs(m[k] - v[k]) <= 1e-12 * Math.abs(v[k]), `${tag} ${k}: ${m[k]} vs ${v[k]}`);
            m[k] = v[k];
          }
      }
      assert.deepEqual(mine, events, `${run} ${tag}`);
      compared++;
    }
  }
  assert.equal(compared, 16); // 10 in the root run, 1 in each addScalars series, 4 in the hparams run
});

test("the files: TensorBoard's names, the version event first, every record framed and checked", () => {
  const dir = tmp();
  const w = new SummaryWriter(dir, { filenameSuffix: '.v2' });
  scenario(w);
  w.close();
  const [file] = eventFiles(dir);
  assert.match(file, new RegExp(`events\\.out\\.tfevents\\.\\d{10}\\.[^.]+\\.${process.pid}\\.\\d+\\.v2$`));
  const events = readEvents(file);
  assert.equal(events[0].file_version, 'brain.Event:2');
  const loss = events.filter((e) => e.summary?.value[0].tag === 'loss');
  assert.deepEqual(
    loss.map((e) => [e.step ?? 0, e.summary?.value[0].simple_value]), // proto3 leaves out a 0
    [0, 1, 2, 3, 4].map((i) => [i, Math.fround(1 / (i + 1))]),
  );
  const text = events.find((e) => e.summary?.value[0].tag === 'note/text_summary');
  assert.equal(text?.step, 2);
  const series = readEvents(eventFiles(join(dir, 'acc_val'))[0]);
  assert.deepEqual(series[1].summary?.value[0], { tag: 'acc', simple_value: 0.25 });
});

test('an image is a PNG of the pixels PyTorch would make: sharp decodes it', async () => {
  const dir = tmp();
  const w = new SummaryWriter(dir);
  // HWC floats beyond 0..1 are clipped; 0.5 * 255 = 127.5 truncates to 127.
  const img = t.tensor([
    [
      [0.5, -1, 2],
      [1, 0, 0.25],
    ],
  ]);
  w.addImage('px', img, 0, { dataformats: 'HWC' });
  w.close();
  const image = readEvents(eventFiles(dir)[0])[1].summary?.value[0].image as Record<string, unknown>;
  assert.deepEqual([image.height, image.width, image.colorspace], [1, 2, 3]);
  const { default: sharp } = await import('sharp');
  const { data, info } = await sharp(image.encoded_image_string as Buffer)
    .raw()
    .toBuffer({ resolveWithObject: true });
  assert.deepEqual([info.width, info.height, info.channels], [2, 1, 3]);
  assert.deepEqual([...data], [127, 0, 255, 255, 0, 63]);
});

test('maxQueue, flush() and close(): nothing queued is lost, and a process ending without close() flushes', () => {
  const dir = tmp();
  const w = new SummaryWriter(dir, { maxQueue: 3 });
  const file = eventFiles(dir)[0];
  assert.equal(readEvents(file).length, 1, 'the version event is written at once');
  w.addScalar('a', 1, 0);
  w.addScalar('a', 2, 1);
  assert.equal(readEvents(file).length, 1, 'two events wait in the queue');
  w.addScalar('a', 3, 2);
  assert.equal(readEvents(file).length, 4, 'the third fills the queue');
  w.addScalar('a', 4, 3);
  w.flush();
  assert.equal(readEvents(file).length, 5);
  w.close();
  w.addScalar('a', 5, 4); // after close(), a new file, as PyTorch's writer reopens
  w.close();
  assert.equal(eventFiles(dir).length, 2);

  const child = tmp();
  const code = `import * as t from ${JSON.stringify(join(REPO_ROOT, 'src/index.ts'))};
const w = new t.utils.tensorboard.SummaryWriter(${JSON.stringify(child)});
w.addScalar('x', 7, 1);`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  const events = readEvents(eventFiles(child)[0]);
  assert.deepEqual(events[1].summary?.value[0], { tag: 'x', simple_value: 7 });
});

test('purgeStep: the first events say where a resumed run starts again', () => {
  const dir = tmp();
  const w = new SummaryWriter(dir, { purgeStep: 40 });
  w.addScalar('loss', 1, 40);
  w.close();
  const events = readEvents(eventFiles(dir)[0]);
  assert.deepEqual(
    events.slice(1, 3).map((e) => [e.step, e.file_version ?? e.session_log]),
    [
      [40, 'brain.Event:2'],
      [40, { status: 'START' }],
    ],
  );
});

test('what SummaryWriter cannot log is a TensorBoardError naming the tag; unknown options are refused', () => {
  const w = new SummaryWriter(tmp());
  assert.throws(
    () => w.addHistogram('h', [1, Number.NaN]),
    (e) => e instanceof TensorBoardError && /'h'.*NaN/.test(e.message),
  );
  assert.throws(() => w.addHistogram('h', []), /'h': the input has no element/);
  assert.throws(() => w.addHistogram('h', [1, 2], 0, 'auto' as never), /'auto'.*not implemented/);
  assert.throws(
    () => w.addScalar('s', t.ones([2])),
    (e) => e instanceof TensorBoardError && /'s'.*not 2/.test(e.message),
  );
  assert.throws(() => w.addScalar('s', 1, 1.5), /globalStep=1.5 is not an integer/);
  assert.throws(() => w.addImage('i', t.ones([2, 4, 4])), /'i': 2 channels/);
  assert.throws(() => w.addImage('i', t.ones([3, 4, 4]), 0, { dataformats: 'CHX' }), /'CHX' is not a layout/);
  assert.throws(() => w.addImage('i', t.ones([4, 4]), 0), /does not have the 3 dimensions of 'CHW'/);
  assert.throws(() => w.addScalar('s', 1, { step: 3 } as never), /unknown option 'step'/);
  assert.throws(() => w.addHparams({ lr: [1] as never }, {}), /hparamDict\['lr'\] is object/);
  assert.throws(() => new SummaryWriter(tmp(), { maxQueue: 0 }), /maxQueue=0/);
  w.close();
});

test('tsddp train --tensorboard: the last step of each log interval and every evaluation; a resume purges what came after its checkpoint', async () => {
  const dir = tmp();
  const tb = join(dir, 'tb');
  const cfg = {
    ...TINY_TRAIN,
    epochs: 2,
    evalEvery: 1,
    logEvery: 2,
    checkpointEvery: 2,
    checkpointDir: join(dir, 'ckpt'),
    metricsFile: join(dir, 'm.jsonl'),
    tensorboard: tb,
  };
  await train({ ...cfg, maxSteps: 6 }, { progress: false });
  const [first] = eventFiles(tb);
  const events = readEvents(first);
  const records = readFileSync(cfg.metricsFile, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, number | string>)
    .filter((r) => r.rank === 0);
  const steps = records.filter((r) => r.type === 'step');
  assert.deepEqual(
    scalars(events, 'train/loss'),
    steps.filter((r) => (r.step as number) % 2 === 0).map((r) => [r.step, Math.fround(r.loss as number)]),
  );
  for (const tag of ['train/acc', 'train/lr', 'perf/images_per_sec', 'perf/step_ms', 'perf/data_ms'])
    assert.deepEqual(
      scalars(events, tag).map(([step]) => step),
      [2, 4, 6],
      tag,
    );
  const evals = records.filter((r) => r.type === 'eval');
  assert.deepEqual(
    scalars(events, 'eval/top1'),
    evals.map((r) => [r.step, Math.fround(r.top1 as number)]),
  );
  assert.ok(evals.length >= 1);

  await train({ ...cfg, resume: 'auto' }, { progress: false });
  const second = eventFiles(tb).find((f) => f !== first) as string;
  const resumed = readEvents(second);
  assert.deepEqual(resumed[2].session_log, { status: 'START' });
  assert.equal(resumed[2].step, 7, 'TensorBoard hides steps >= 7 of the first run');
  assert.deepEqual(
    scalars(resumed, 'train/loss').map(([step]) => step),
    [8],
  );
});
