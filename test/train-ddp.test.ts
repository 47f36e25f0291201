// The recipe on several real processes (Gloo over loopback), started like tsrun starts
// workers. docs/reliability.md R1: two DDP ranks match one process on the combined batch, also
// across a mid-run kill and `resume: 'auto'` (and the resumed run equals the uninterrupted
// one bitwise). docs/reliability.md R17: a world-size change is refused. docs/reliability.md R13: distributed
// evaluation counts every validation sample exactly once.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, test } from 'node:test';
import * as t from '../src/index.ts';
import { readJsonLines, type StepRecord } from '../src/metrics/index.ts';
import {
  buildDatasets,
  buildScheduler,
  evaluate,
  planRun,
  prepareImages,
  seedBatchGenerator,
  type TrainConfigInput,
  type TrainResult,
  train,
} from '../src/train/index.ts';
import { MODELS } from './workers/train-models.ts';
import { describe, runWorkers } from './workers/train-spawn.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-train-ddp-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const stepRecords = (file: string) => readJsonLines(file).filter((r): r is StepRecord => r.type === 'step');

// docs/reliability.md R1's tolerances.
const RTOL = 1.3e-6;
const ATOL = 5e-5;
function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++) {
    const d = Math.abs(actual[i] - expected[i]);
    assert.ok(
      d <= ATOL + RTOL * Math.abs(expected[i]),
      `${what}[${i}]: ${actual[i]} vs ${expected[i]} (diff ${d})`,
    );
  }
}

function shared(dir: string): TrainConfigInput {
  return {
    dataset: 'shapes',
    imageSize: 16,
    trainSize: 32, // 2 ranks x 16 samples = 4 steps of 4 per epoch
    valSize: 10,
    batchSize: 4,
    epochs: 3,
    lr: 0.1,
    warmupEpochs: 1,
    augment: true,
    bucketCapMb: 0.0001, // a bucket per parameter: many all-reduces per backward
    gradientAsBucketView: true,
    workers: 1,
    evalEvery: 0,
    seed: 7,
    checkpointDir: join(tmp, dir),
    checkpointEvery: 5,
    metricsFile: join(tmp, `${dir}.jsonl`),
  };
}

/**
 * One process on the combined batch: every step, both ranks' samples (their
 * DistributedSampler shares, augmented with each rank's generator) in one forward, the
 * mean loss, SGD with the same schedule. Returns the loss per step and the final state.
 */
async function reference(cfgIn: TrainConfigInput, steps: number) {
  const plan = planRun(cfgIn);
  const cfg = plan.options;
  const setup = await buildDatasets(plan);
  const worldSize = 2;
  t.manualSeed(cfg.seed);
  const model = MODELS.tiny(setup.numClasses);
  const opt = new t.optim.SGD(model.parameters(), {
    lr: cfg.lr as number,
    momentum: cfg.momentum,
    weightDecay: cfg.weightDecay,
  });
  const stepsPerEpoch = cfg.trainSize! / worldSize / cfg.batchSize;
  const sched = buildScheduler(opt, plan, stepsPerEpoch, cfg.lr as number);
  const samplers = [0, 1].map(
    (rank) => new t.data.DistributedSampler(setup.train, { numReplicas: worldSize, rank, seed: cfg.seed }),
  );
  const gen = new t.Generator();
  const losses: number[] = [];
  for (let step = 0; step < steps; step++) {
    const epoch = Math.floor(step / stepsPerEpoch);
    const j = step % stepsPerEpoch;
    using _ = t.scope();
    const xs: t.Tensor[] = [];
    const ys: number[] = [];
    for (const [rank, sampler] of samplers.entries()) {
      sampler.setEpoch(epoch);
      const idx = sampler.indices().slice(j * cfg.batchSize, (j + 1) * cfg.batchSize);
      const S = setup.imageSize;
      const raw = new Uint8Array(idx.length * S * S * 3);
      idx.forEach((i, k) => {
        const s = (setup.train as t.data.Shapes).get(i);
        raw.set(s.image.data as Uint8Array, k * S * S * 3);
        ys.push(s.label);
      });
      const image = t.tensor(raw, { dtype: 'uint8', shape: [idx.length, S, S, 3] });
      const generator = seedBatchGenerator(gen, cfg.seed, epoch, j, rank);
      xs.push(prepareImages(image, setup, { augment: true, generator, channelsLast: false }));
    }
    const y = t.tensor(BigInt64Array.from(ys.map(BigInt)), { dtype: 'int64' });
    const loss = t.crossEntropy(model.forward(t.cat(xs, 0)), y);
    loss.backward();
    opt.step();
    opt.zeroGrad();
    sched.step();
    losses.push(loss.item());
  }
  return { losses, state: model.stateDict() };
}

/** Mean of the ranks' losses per step (equal batches: the full-batch loss). */
function meanLosses(file: string): number[] {
  const by = new Map<number, number[]>();
  for (const r of stepRecords(file)) by.set(r.step, [...(by.get(r.step) ?? []), r.loss]);
  return [...by.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([, ls]) => ls.reduce((a, b) => a + b, 0) / ls.length);
}

test('2 DDP ranks = 1 process on the combined batch, also across a kill and resume auto (docs/reliability.md R1)', async () => {
  // Uninterrupted.
  const whole = shared('whole');
  const u = await runWorkers(tmp, { config: whole, model: 'tiny', result: join(tmp, 'whole-res') }, 2);
  assert.ok(
    u.every((e) => e.code === 0),
    describe(u),
  );

  // Killed (SIGKILL, both ranks) after step 6; the last checkpoint is step 5's.
  const broken = shared('broken');
  const k = await runWorkers(tmp, { config: broken, model: 'tiny', crash: { atStep: 6 } }, 2, {
    stopAllOnCrash: true,
  });
  assert.ok(
    k.every((e) => e.signal === 'SIGKILL'),
    describe(k),
  );
  // Run again with resume auto: continues from step 5.
  const r = await runWorkers(
    tmp,
    { config: { ...broken, resume: 'auto' }, model: 'tiny', result: join(tmp, 'broken-res') },
    2,
  );
  assert.ok(
    r.every((e) => e.code === 0),
    describe(r),
  );
  const res = JSON.parse(readFileSync(join(tmp, 'broken-res.rank1'), 'utf8')) as TrainResult;
  assert.equal(res.startStep, 5);
  assert.equal(res.resumedFrom, join(tmp, 'broken', 'ckpt-000005'));
  assert.equal(res.steps, 12);

  // The resumed run equals the uninterrupted one bitwise: every rank's losses, the final model.
  const su = stepRecords(whole.metricsFile as string);
  const sr = stepRecords(broken.metricsFile as string);
  assert.deepEqual(
    sr.map((s) => [s.step, s.rank]),
    su.map((s) => [s.step, s.rank]),
  );
  for (let i = 0; i < su.length; i++)
    assert.equal(sr[i].loss, su[i].loss, `step ${su[i].step} rank ${su[i].rank}`);
  assert.equal(
    sha(join(tmp, 'broken', 'ckpt-000012', 'model.safetensors')),
    sha(join(tmp, 'whole', 'ckpt-000012', 'model.safetensors')),
  );
  assert.equal(
    sha(join(tmp, 'broken', 'ckpt-000012', 'optimizer.safetensors')),
    sha(join(tmp, 'whole', 'ckpt-000012', 'optimizer.safetensors')),
  );

  // And both equal one process on the combined batch.
  const ref = await reference(whole, 12);
  assertClose(meanLosses(whole.metricsFile as string), ref.losses, 'loss per step');
  const saved = await t.safetensors.loadFile(join(tmp, 'broken', 'ckpt-000012', 'model.safetensors'));
  assert.deepEqual(Object.keys(saved).sort(), Object.keys(ref.state).sort());
  for (const [name, p] of Object.entries(ref.state)) {
    assertClose(saved[name].toTypedArray() as Float32Array, p.toTypedArray() as Float32Array, name);
  }
  // DDP communication time was measured (c10d::Logger), and rank files were merged.
  assert.ok(su.every((s) => typeof s.commMs === 'number' && typeof s.overlapMs === 'number'));
  assert.equal(new Set(su.map((s) => s.rank)).size, 2);
  // Every step in a memory scope: flat live-tensor count on every rank.
  for (const rank of [0, 1]) {
    const live = new Set(su.filter((s) => s.rank === rank && s.step > 2).map((s) => s.liveTensors));
    assert.equal(live.size, 1, `rank ${rank} live tensors: ${[...live].join(', ')}`);
  }
});

test('--comm-hook powerSGD: plain all-reduce for --powersgd-start-iter steps, then compressed gradients', async () => {
  // After the uninterrupted run of the first test (its metrics are the uncompressed baseline).
  const cfg = { ...shared('powersgd'), commHook: 'powerSGD' as const, powersgdRank: 1, powersgdStartIter: 2 };
  const p = await runWorkers(tmp, { config: cfg, model: 'tiny' }, 2);
  assert.ok(
    p.every((e) => e.code === 0),
    describe(p),
  );
  const base = stepRecords(shared('whole').metricsFile as string);
  const comp = stepRecords(cfg.metricsFile as string);
  assert.equal(comp.length, base.length);
  for (let i = 0; i < base.length; i++) {
    assert.ok(Number.isFinite(comp[i].loss));
    // Steps 1 and 2 (numbered from 1) were all-reduced as they are, and step 3 computes its
    // loss before its own compressed update: equal. From step 4 on the model differs.
    if (base[i].step <= 3) assert.equal(comp[i].loss, base[i].loss, `step ${base[i].step}`);
    else assert.notEqual(comp[i].loss, base[i].loss, `step ${base[i].step}`);
  }
});

test('resuming a 2-rank checkpoint with another world size is refused, or re-sharded with --reshard (docs/reliability.md R17)', async () => {
  const cfg = { ...shared('whole'), resume: 'auto' as const, workers: 0 };
  await assert.rejects(train(cfg, { model: MODELS.tiny, progress: false }), (e: Error) => {
    assert.equal(e.name, 'CheckpointError');
    assert.equal((e as t.CheckpointError).code, 'WORLD_SIZE_MISMATCH');
    assert.match(e.message, /cannot resume with world size 1: saved with world size 2/);
    assert.match(e.message, /or pass --reshard/);
    return true;
  });
  // Step 10 of the 2-rank run: epoch 3 of 3 (4 steps an epoch), 2 steps = 16 of its 32
  // samples done. One rank takes the other 16: 4 steps of 4, so the run ends at 10 + 4.
  const lines: string[] = [];
  const out = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const res = await train(
    {
      ...shared('reshard'),
      resume: join(tmp, 'whole', 'ckpt-000010'),
      reshard: true,
      workers: 0,
    },
    { model: MODELS.tiny, out },
  );
  assert.deepEqual([res.startStep, res.steps, res.worldSize], [10, 14, 1]);
  assert.match(
    lines.join('\n'),
    /world size 2 -> 1: epoch 3 goes on at sample 16 of its order, re-sharded \(4 steps left in it\); global batch 8 -> 4; LR schedule as saved/,
  );
});

test('distributed evaluation: 10 samples on 3 ranks are each counted once, as one process counts them', async () => {
  const cfg: TrainConfigInput = {
    model: 'resnet18',
    widthMultiplier: 0.125,
    imageSize: 16,
    trainSize: 12,
    valSize: 10,
    batchSize: 2,
    evalBatchSize: 2,
    epochs: 1,
    warmupEpochs: 0,
    workers: 0,
    checkpointDir: join(tmp, 'eval'),
  };
  const exits = await runWorkers(tmp, { config: cfg, result: join(tmp, 'eval-res') }, 3);
  assert.ok(
    exits.every((e) => e.code === 0),
    describe(exits),
  );
  const results = [0, 1, 2].map(
    (r) => JSON.parse(readFileSync(join(tmp, `eval-res.rank${r}`), 'utf8')) as TrainResult,
  );
  assert.deepEqual(
    results.map((r) => r.lastEval?.localCount),
    [4, 3, 3],
  );
  for (const r of results) assert.equal(r.lastEval?.count, 10);

  // The same model evaluated by one process over the whole validation set.
  const setup = await buildDatasets(planRun(cfg));
  const model = t.models.resnet18({ numClasses: 10, stem: 'cifar', widthMultiplier: 0.125 });
  const ckpt = readdirSync(join(tmp, 'eval')).sort().at(-1) as string;
  model.loadStateDict(await t.safetensors.loadFile(join(tmp, 'eval', ckpt, 'model.safetensors')));
  const loader = new t.data.DataLoader(setup.val, { batchSize: 5 });
  const one = await evaluate(model, loader, {
    prepare: (image) => prepareImages(image, setup, { augment: false, channelsLast: false }),
    amp: null,
    group: null,
  });
  const ev = results[0].lastEval!;
  assert.equal(one.count, 10);
  assert.equal(ev.top1, one.top1);
  assert.equal(ev.top5, one.top5);
  assert.ok(Math.abs(ev.loss - one.loss) <= 1e-5 * Math.abs(one.loss), `${ev.loss} vs ${one.loss}`);
});
