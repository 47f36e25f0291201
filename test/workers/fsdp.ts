// One rank of test/fsdp.test.ts: fullyShard on nanoGPT's blocks and then the whole model,
// AdamW, 5 steps, as test/fixtures/distributed/fsdp.py does with PyTorch's fully_shard
// (the initial state and this rank's batches come from the fixture); writes the losses
// and the full parameters after (getModelStateDict with fullStateDict).
import { readFileSync } from 'node:fs';
import * as t from '../../src/index.ts';
import { FIXTURE_GPT, fixtureGpt } from '../helpers/fixture-gpt.ts';
import { type FixtureTensor, toTensor, values } from '../helpers/fixtures.ts';
import { rank, workerConfig, writeResult } from './common.ts';

const d = t.distributed;
const fx = JSON.parse(
  readFileSync(new URL('../fixtures/distributed/fsdp.json', import.meta.url), 'utf8'),
) as {
  init: Record<string, FixtureTensor>;
  ranks: {
    batches: [FixtureTensor, FixtureTensor][];
    reshard_true: { after: Record<string, FixtureTensor> };
  }[];
};
const { mode, reshardAfterForward, accumulate, bf16, checkpointing, offload } = workerConfig<{
  mode?: 'train' | 'reload' | 'twice';
  reshardAfterForward?: boolean;
  accumulate?: boolean;
  bf16?: boolean;
  /** Each block an activation-checkpointed region (recomputed in backward, inside the sharded block). */
  checkpointing?: boolean;
  /** CPUOffloadPolicy({ pinMemory: false }). */
  offload?: boolean;
}>();

function run() {
  const gpt = fixtureGpt(fx.init);
  gpt.activationCheckpointing = checkpointing ?? false;
  const opts = {
    reshardAfterForward,
    mpPolicy: bf16 ? { paramDtype: 'bfloat16' as const, reduceDtype: 'float32' as const } : undefined,
    offloadPolicy: offload ? new d.fsdp.CPUOffloadPolicy({ pinMemory: false }) : undefined,
  };
  for (const block of gpt.transformer.h) d.fsdp.fullyShard(block, opts);
  const model = d.fsdp.fullyShard(gpt, opts);
  const opt = new t.optim.AdamW(model.parameters(), { lr: 1e-2, weightDecay: 0.1 });
  const losses: number[] = [];
  const devices = new Set<string>();
  for (const [x, y] of fx.ranks[rank].batches) {
    t.tidy(() => {
      const idx = toTensor(x);
      const targets = toTensor(y);
      if (accumulate) {
        // The same batch in two halves: no reduction after the first, as PyTorch's no_sync.
        model.setRequiresGradientSync(false);
        const a = model.forward(idx.narrow(0, 0, 1), targets.narrow(0, 0, 1)).loss as t.Tensor;
        a.div(2).backward();
        model.setRequiresGradientSync(true);
        const b = model.forward(idx.narrow(0, 1, 1), targets.narrow(0, 1, 1)).loss as t.Tensor;
        b.div(2).backward();
        losses.push((a.item() + b.item()) / 2);
      } else {
        const { loss } = model.forward(idx, targets);
        (loss as t.Tensor).backward();
        losses.push((loss as t.Tensor).item());
      }
      // Where the shards and their reduced gradients live (CPUOffloadPolicy: the CPU).
      for (const p of model.parameters()) devices.add(p.device).add(p.grad?.device ?? p.device);
      opt.step();
      opt.zeroGrad();
    });
  }
  const full = d.fsdp.getModelStateDict(model, { fullStateDict: true });
  const named = gpt.namedParameters().map(([n]) => n);
  // The whole optimizer state, by parameter name; loaded back, it gathers the same.
  const fullOpt = d.fsdp.getOptimizerStateDict(model, opt, { fullStateDict: true });
  d.fsdp.setOptimizerStateDict(model, opt, fullOpt);
  const again = d.fsdp.getOptimizerStateDict(model, opt, { fullStateDict: true });
  const asJson = (sd: t.optim.OptimizerStateDict) =>
    Object.fromEntries(
      named.map((n, i) => [
        n,
        Object.fromEntries(
          Object.entries(sd.state[i]).map(([k, v]) => [k, v instanceof t.Tensor ? values(v) : v]),
        ),
      ]),
    );
  const shardShapes = model.parameters().map((p) => p.shape);
  return {
    losses,
    devices: [...devices].sort(),
    after: Object.fromEntries(named.map((n) => [n, values(full[n])])),
    shardShapes,
    stateKeys: Object.keys(full),
    optimizer: asJson(fullOpt),
    optimizerAgain: asJson(again),
  };
}

/**
 * A full state dict (PyTorch's parameters after its reshard_true run) loaded into a model
 * sharded over this world (3 ranks: uneven rows), gathered back, and one forward's loss,
 * beside the same forward of a plain model.
 */
function reload() {
  const after = fx.ranks[0].reshard_true.after;
  const full = Object.fromEntries(Object.entries(after).map(([k, v]) => [k, toTensor(v)]));
  full['lm_head.weight'] = full['transformer.wte.weight'];
  const plain = new t.models.GPT(FIXTURE_GPT);
  plain.loadStateDict(full);
  const gpt = new t.models.GPT(FIXTURE_GPT);
  for (const block of gpt.transformer.h) d.fsdp.fullyShard(block);
  const model = d.fsdp.fullyShard(gpt);
  d.fsdp.setModelStateDict(model, full);
  const back = d.fsdp.getModelStateDict(model, { fullStateDict: true });
  const [x, y] = fx.ranks[0].batches[0];
  const loss = t.noGrad(() => (model.forward(toTensor(x), toTensor(y)).loss as t.Tensor).item());
  const plainLoss = t.noGrad(() => (plain.forward(toTensor(x), toTensor(y)).loss as t.Tensor).item());
  return {
    same: Object.keys(full).every((k) => t.equal(back[k], full[k])),
    shardShapes: model.parameters().map((p) => p.shape),
    loss,
    plainLoss,
  };
}

/**
 * Two reduced backwards of the first batch without zeroGrad between them: each shard's
 * .grad after the first, and after the second (which adds into it in place).
 */
function twice() {
  const gpt = fixtureGpt(fx.init);
  for (const block of gpt.transformer.h) d.fsdp.fullyShard(block);
  const model = d.fsdp.fullyShard(gpt);
  const [x, y] = fx.ranks[rank].batches[0];
  const grads = () => model.parameters().map((p) => values(p.grad as t.Tensor));
  const backward = () => t.tidy(() => (model.forward(toTensor(x), toTensor(y)).loss as t.Tensor).backward());
  backward();
  const once = grads();
  backward();
  return { once, twice: grads() };
}

d.initProcessGroup({ backend: 'gloo', timeoutMs: 60_000 });
writeResult(mode === 'reload' ? reload() : mode === 'twice' ? twice() : run());
d.destroyProcessGroup();
