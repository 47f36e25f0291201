// The Trainer's parts on their own: the step meter (losses read once per log interval,
// equal to reading them every step), the public epoch setters that resume mid-epoch
// (ResumableSampler.setEpoch, DataLoader.setEpoch), where a process sits in the run, and
// Trainer.create() + fit() as a library user calls them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/core/index.ts';
import * as data from '../src/data/index.ts';
import { ResumableSampler, Trainer } from '../src/train/index.ts';
import { planRun } from '../src/train/plan.ts';
import { joinProcessGroup, timeoutSeconds } from '../src/train/process-group.ts';
import { StepMeter } from '../src/train/step-meter.ts';

const record = (step: number) => ({
  type: 'step' as const,
  rank: 0,
  epoch: 0,
  step,
  lr: 0.1,
  images: 8,
  imagesPerSec: 1,
  dataMs: 0,
  forwardMs: 0,
  backwardMs: 0,
  optimizerMs: 0,
  stepMs: 1,
  liveTensors: 0,
  time: step,
});

test('StepMeter: one read per flush gives each step the loss and accuracy .item() would', () => {
  const meter = new StepMeter(3);
  const expected: { loss: number; acc: number }[] = [];
  t.manualSeed(0);
  const before = t.memory().tensors;
  for (let step = 1; step <= 3; step++) {
    let loss = 0;
    let correct = 0;
    // Two micro-batches of 4 images.
    for (let m = 0; m < 2; m++) {
      using _ = t.scope();
      const logits = t.randn([4, 5]);
      const labels = t.tensor([0, 1, 2, 3], { dtype: 'int64' });
      const l = t.crossEntropy(logits, labels);
      loss += l.item() / 2;
      correct += logits.argmax(1).eq(labels).sum().item();
      meter.addMicroBatch(l, logits, labels);
    }
    meter.endStep(record(step), 2, 8);
    expected.push({ loss, acc: correct / 8 });
  }
  assert.ok(meter.full);
  assert.throws(
    () => t.tidy(() => meter.addMicroBatch(t.tensor(1), t.zeros([1, 2]), t.tensor([0]))),
    /flush\(\) before/,
  );
  const recs = meter.flush();
  assert.deepEqual(
    recs.map((r) => r.step),
    [1, 2, 3],
  );
  for (const [i, r] of recs.entries()) {
    assert.ok(Math.abs(r.loss - expected[i].loss) < 1e-6, `step ${i + 1}: ${r.loss} vs ${expected[i].loss}`);
    assert.equal(r.acc, expected[i].acc);
  }
  // The buffer is reused: after a flush it starts at zero, and the tensor count is flat.
  {
    using _ = t.scope();
    const logits = t.tensor([[2, 1]]);
    meter.addMicroBatch(t.tensor(0.5), logits, t.tensor([0], { dtype: 'int64' }));
  }
  meter.endStep(record(4), 1, 1);
  assert.deepEqual(
    meter.flush().map((r) => [r.loss, r.acc]),
    [[0.5, 1]],
  );
  assert.equal(t.memory().tensors, before + 1, 'one buffer tensor held');
  meter.dispose();
  assert.equal(t.memory().tensors, before);
  assert.throws(() => new StepMeter(0), /capacity must be an integer >= 1/);
});

test('ResumableSampler.setEpoch(epoch, startIndex) starts the epoch part-way; DataLoader.setEpoch replays an epoch', async () => {
  const dataset = new data.Shapes({ split: 'train', size: 40, imageSize: 8 });
  const sampler = new ResumableSampler(
    new data.DistributedSampler(dataset, { numReplicas: 2, rank: 1, seed: 3 }),
    dataset,
  );
  sampler.setEpoch(2);
  const whole = [...sampler];
  sampler.setEpoch(2, 6);
  assert.deepEqual([...sampler], whole.slice(6));
  assert.equal(sampler.length, whole.length - 6);
  assert.throws(() => sampler.setEpoch(2, -1), /startIndex should be a non-negative integer/);

  // setEpochFrom with the same world is setEpoch(epoch, offset / world).
  sampler.setEpochFrom(2, 12);
  assert.deepEqual([...sampler], whole.slice(6));
  assert.throws(() => sampler.setEpochFrom(2, -3), /offset should be a non-negative integer/);

  // Re-sharding (docs/reliability.md R17, elastic): 2 ranks consume 3 batches of 4 each (24 samples);
  // 3 ranks then share exactly the rest of the epoch (two padding samples, from the order’s
  // head, as DistributedSampler pads): nothing lost, nothing repeated.
  const orderOf = (replicas: number, rank: number) => {
    const s = new ResumableSampler(
      new data.DistributedSampler(dataset, { numReplicas: replicas, rank, seed: 3 }),
      dataset,
    );
    s.setEpoch(2);
    return s;
  };
  const old = [0, 1].map((r) => [...orderOf(2, r)].slice(0, 12));
  const order = [...orderOf(1, 0)];
  assert.deepEqual(old.flat().sort(), order.slice(0, 24).sort());
  const next = [0, 1, 2].map((r) => {
    const s = orderOf(3, r);
    s.setEpochFrom(2, 24);
    return [...s];
  });
  assert.deepEqual(
    next.map((n) => n.length),
    [6, 6, 6],
  );
  assert.deepEqual(next.flat().sort(), [...order.slice(24), order[0], order[1]].sort());
  assert.equal(new Set([...old.flat(), ...next.flat()]).size, 40);

  // With a seed, the batches of epoch e depend on (seed, e) only, not on the epochs iterated before.
  const loader = () => new data.DataLoader(dataset, { batchSize: 8, shuffle: true, seed: 7 });
  const labels = async (l: ReturnType<typeof loader>) => {
    const out: number[] = [];
    for await (using b of l) out.push(...Array.from(b.label.toTypedArray() as BigInt64Array, Number));
    return out;
  };
  const a = loader();
  a.setEpoch(0);
  await labels(a);
  a.setEpoch(1);
  const epoch1 = await labels(a);
  const b = loader();
  b.setEpoch(1);
  assert.deepEqual(await labels(b), epoch1);
  assert.throws(
    () => new data.DataLoader(dataset, { batchSize: 8 }).setEpoch(1),
    /needs a loader created with a seed/,
  );
  assert.throws(() => b.setEpoch(-1), /non-negative integer/);
});

test('joinProcessGroup: no launcher environment is one process; a partial one is refused by name', async () => {
  const c = planRun({}).launch;
  const alone = await joinProcessGroup(c, {});
  assert.deepEqual(
    { ...alone, group: null },
    { group: null, rank: 0, worldSize: 1, localRank: 0, restartCount: 0, created: false },
  );
  await assert.rejects(joinProcessGroup(c, { RANK: '0', WORLD_SIZE: '2' }), /MASTER_PORT/);
  assert.equal(timeoutSeconds(c, { worldSize: 4, localWorldSize: 4 }), 300);
  assert.equal(timeoutSeconds(c, { worldSize: 8, localWorldSize: 4 }), 1800);
  assert.equal(timeoutSeconds({ timeout: 7 }, { worldSize: 8, localWorldSize: 4 }), 7);
});

test('Trainer.create() then fit(), as a library user calls them', async () => {
  const trainer = await Trainer.create(
    {
      model: 'resnet18',
      widthMultiplier: 0.125,
      imageSize: 8,
      trainSize: 32,
      valSize: 8,
      batchSize: 8,
      epochs: 2,
      workers: 0,
      logEvery: 3,
    },
    { progress: false },
  );
  assert.equal(trainer.at.stepsPerEpoch, 4);
  assert.equal(trainer.at.endStep, 8);
  assert.equal(trainer.ddp, null);
  const r = await trainer.fit();
  assert.equal(r.steps, 8);
  assert.equal(r.epochs, 2);
  assert.ok(Number.isFinite(r.lastLoss), `last loss ${r.lastLoss}`);
  assert.equal(r.lastEval?.count, 8);
});
