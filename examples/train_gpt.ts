// nanoGPT's train.py in TypeScript: a byte-level GPT (vocab 256, so no tokenizer) trained
// on any text file, data-parallel over as many processes as the launcher starts.
//
//   node --import tsx examples/train_gpt.ts --data input.txt                 # one process
//   npx tsrun --nproc-per-node 2 examples/train_gpt.ts --data input.txt      # DDP, 2 processes
//   npx tsrun --nproc-per-node 2 examples/train_gpt.ts --data test/fixtures/text/tiny.txt \
//     --n-layer 2 --n-head 2 --n-embd 32 --block-size 32 --max-iters 200    # a one-minute run
//
// Run it again with the same --out-dir and it resumes from the newest checkpoint.
//
// Fine-tuning a Hugging Face GPT-2 (nanoGPT's init_from='gpt2'): --init-from a local folder
// (config.json + model.safetensors) and --data a .bin of its token ids (uint16, as nanoGPT's
// data/*/prepare.py writes with tiktoken); --tensorboard DIR logs the curves,
// --save-pretrained DIR writes the result back as a Hugging Face folder.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import * as t from '../src/index.ts';

const args = new Command('train_gpt')
  .requiredOption('--data <file>', 'a text file (its bytes are the tokens), or a .bin of uint16 token ids')
  .option('--block-size <n>', 'context length in bytes', Number, 64)
  .option('--n-layer <n>', 'transformer blocks', Number, 4)
  .option('--n-head <n>', 'attention heads', Number, 4)
  .option('--n-embd <n>', 'width', Number, 128)
  .option('--dropout <p>', 'dropout probability', Number, 0)
  .option('--batch-size <n>', 'sequences per process per micro-step', Number, 16)
  .option('--grad-accum <n>', 'micro-steps per optimizer step', Number, 1)
  .option('--max-iters <n>', 'optimizer steps in all (a resumed run counts the saved ones)', Number, 2000)
  .option('--lr <x>', 'peak learning rate', Number, 1e-3)
  .option('--min-lr <x>', 'learning rate at the end of the cosine decay', Number, 1e-4)
  .option('--warmup-iters <n>', 'linear warmup steps', Number, 100)
  .option('--weight-decay <x>', 'AdamW weight decay of the matrices', Number, 0.1)
  .option('--grad-clip <x>', 'clip the gradient norm to this (0: off)', Number, 1)
  .option('--eval-interval <n>', 'evaluate and checkpoint every n steps', Number, 250)
  .option('--eval-iters <n>', 'batches per split per process in an evaluation', Number, 20)
  .option('--log-interval <n>', 'print the training loss every n steps', Number, 10)
  .option('--out-dir <dir>', 'where rank 0 writes checkpoints', 'out-gpt')
  .option('--resume <mode>', "'auto' (the newest checkpoint in --out-dir, if any) or 'never'", 'auto')
  .option('--seed <n>', 'seeds the model and every random stream', Number, 1337)
  .option(
    '--strategy <s>',
    'ddp (replicas), zero1 (ZeroRedundancyOptimizer) or fsdp (fullyShard per block)',
    'ddp',
  )
  .option('--activation-checkpointing', 'recompute each block in backward instead of keeping its activations')
  .option('--init-from <dir>', 'start from this Hugging Face GPT-2 folder instead of random weights')
  .option('--tensorboard <dir>', 'rank 0 writes the losses and the learning rate for TensorBoard')
  .option('--save-pretrained <dir>', 'at the end, rank 0 writes the model as a Hugging Face GPT-2 folder')
  .option(
    '--sample-tokens <n>',
    'bytes rank 0 generates at the end (0: none; a .bin run samples none)',
    Number,
    300,
  )
  .option('--temperature <x>', 'sampling temperature', Number, 0.8)
  .option('--top-k <n>', 'sample among the k likeliest bytes', Number, 40)
  .parse()
  .opts<{
    data: string;
    blockSize: number;
    nLayer: number;
    nHead: number;
    nEmbd: number;
    dropout: number;
    batchSize: number;
    gradAccum: number;
    maxIters: number;
    lr: number;
    minLr: number;
    warmupIters: number;
    weightDecay: number;
    gradClip: number;
    evalInterval: number;
    evalIters: number;
    logInterval: number;
    outDir: string;
    resume: string;
    seed: number;
    strategy: string;
    activationCheckpointing?: boolean;
    initFrom?: string;
    tensorboard?: string;
    savePretrained?: string;
    sampleTokens: number;
    temperature: number;
    topK: number;
  }>();

// 1. DDP when a launcher (tsrun, torchrun) set RANK, a plain process otherwise: nanoGPT's test.
const distributed = process.env.RANK !== undefined;
if (distributed) t.distributed.initProcessGroup({ backend: 'auto' });
const rank = distributed ? t.distributed.getRank() : 0;
const worldSize = distributed ? t.distributed.getWorldSize() : 1;
const master = rank === 0; // logs, checkpoints and samples
const log = (line: string): void => {
  if (master) console.log(line);
};
const device = t.cuda.isAvailable() ? `cuda:${process.env.LOCAL_RANK ?? 0}` : 'cpu';

/** One seed per named random stream: independent streams, each reproducible from --seed. */
const streamSeed = (...parts: (string | number)[]): bigint =>
  BigInt(`0x${createHash('sha256').update(parts.join('/')).digest('hex').slice(0, 15)}`);

// 2. Resume: the newest complete checkpoint holds the model's shape, so a resumed run
// takes it from there rather than from the flags (as nanoGPT does). This first read only
// peeks at the record; the weights are loaded below, into the model built from it.
let config: t.models.GPTConfig = {
  vocabSize: 256,
  blockSize: args.blockSize,
  nLayer: args.nLayer,
  nHead: args.nHead,
  nEmbd: args.nEmbd,
  dropout: args.dropout,
  bias: false,
};
if (args.resume !== 'auto' && args.resume !== 'never')
  throw new TypeError(`--resume must be 'auto' or 'never', got '${args.resume}'`);
if (!['ddp', 'zero1', 'fsdp'].includes(args.strategy))
  throw new TypeError(`--strategy must be ddp, zero1 or fsdp, got '${args.strategy}'`);
const strategy = distributed ? (args.strategy as 'ddp' | 'zero1' | 'fsdp') : 'ddp'; // one process: nothing to share
const resumeFrom = args.resume === 'auto' ? await t.latestCheckpoint(args.outDir) : null;
// The replicas are identical and the batches are drawn afresh, so any world size may resume.
const loadOpts = { allowWorldSizeChange: true };
if (resumeFrom !== null) {
  const peek = await t.loadCheckpoint(resumeFrom, { rng: false }, loadOpts);
  config = (peek.extra as { config: t.models.GPTConfig }).config;
}
// A Hugging Face folder's weights, unless a checkpoint of the fine-tuning takes over.
t.manualSeed(args.seed);
const pretrained =
  args.initFrom !== undefined && resumeFrom === null
    ? await t.models.GPT.fromPretrained(args.initFrom)
    : null;
if (pretrained !== null) config = { ...pretrained.config };
const T = Math.min(args.blockSize, config.blockSize); // the training windows' length

// 3. Data: the file's bytes are the tokens (or, for a .bin, its uint16 token ids); the
// first 90% train, the last 10% validate.
const tokenIds = args.data.endsWith('.bin');
const raw = readFileSync(args.data);
const all = tokenIds
  ? t
      .fromBytes(new Uint8Array(raw.subarray(0, raw.length - (raw.length % 2))), [raw.length >> 1], 'uint16')
      .to('int32')
  : t.fromBytes(new Uint8Array(raw), [raw.length], 'uint8');
const nTokens = all.shape[0];
if (nTokens > 0 && all.max().item() >= config.vocabSize)
  throw new RangeError(
    `${args.data}: token id ${all.max().item()} is outside the model's ${config.vocabSize} tokens`,
  );
const nTrain = Math.floor(nTokens * 0.9);
const splits = { train: all.slice(0, 0, nTrain), val: all.slice(0, nTrain, nTokens) };
for (const [name, data] of Object.entries(splits)) {
  if (data.shape[0] <= T + 1)
    throw new RangeError(
      `${args.data}: the ${name} split has ${data.shape[0]} tokens, need > block size + 1`,
    );
}
const offsets = t.arange(T).unsqueeze(0); // [1, T]

/** batchSize random windows: inputs x [B, T] and the next tokens y [B, T], as int64. */
function getBatch(data: t.Tensor, gen: t.Generator): [t.Tensor, t.Tensor] {
  const start = t.randint(data.shape[0] - T, [args.batchSize, 1], { generator: gen });
  const ix = start.add(offsets);
  return [t.take(data, ix).to('int64').to(device), t.take(data, ix.add(1)).to('int64').to(device)];
}

// 4. Model and optimizer. The same seed on every rank gives the same initial weights
// (DDP would broadcast rank 0's anyway); AdamW decays the matrices only. --strategy:
//   ddp    every rank keeps everything; DDP all-reduces the gradients in backward.
//   zero1  as ddp, but each rank keeps the AdamW state of its shard of the parameters only.
//   fsdp   each block, then the whole model, fully sharded: a rank keeps its rows of every
//          parameter, gradient and AdamW state; the blocks are gathered around their use.
const model = pretrained ?? t.models.gpt(config);
model.activationCheckpointing = args.activationCheckpointing === true;
model.to(device);
const fsdp = t.distributed.fsdp;
let sharded: t.distributed.fsdp.FSDPModule | null = null;
if (strategy === 'fsdp') {
  for (const block of model.transformer.h) fsdp.fullyShard(block);
  sharded = fsdp.fullyShard(model);
}
const adamw = {
  weightDecay: args.weightDecay,
  learningRate: args.lr,
  betas: [0.9, 0.99] as [number, number], // nanoGPT's choice for small batches: a shorter memory of gradient scale
};
let optimizer: t.optim.Optimizer = model.configureOptimizers(adamw);
if (strategy === 'zero1')
  optimizer = new t.distributed.optim.ZeroRedundancyOptimizer(
    optimizer.paramGroups.map((g) => ({ params: g.params, weightDecay: g.weightDecay })),
    { optimizerClass: t.optim.AdamW, lr: args.lr, betas: adamw.betas },
  );

/**
 * What a checkpoint holds and a resume loads: plain state dicts under every strategy (the
 * whole model and the whole optimizer state), so a run resumes under another strategy.
 * Under fsdp every rank gathers them (and keeps its rows when loading); under zero1 the
 * shards of the optimizer state go to rank 0.
 */
const checkpointed = {
  model:
    strategy === 'fsdp'
      ? {
          stateDict: () => fsdp.getModelStateDict(model, { fullStateDict: true }),
          loadStateDict: (sd: Record<string, t.Tensor>) => fsdp.setModelStateDict(model, sd),
        }
      : model,
  optimizer:
    strategy === 'fsdp'
      ? {
          stateDict: () => fsdp.getOptimizerStateDict(model, optimizer, { fullStateDict: true }),
          loadStateDict: (sd: t.optim.OptimizerStateDict) => fsdp.setOptimizerStateDict(model, optimizer, sd),
        }
      : optimizer,
};

let startIter = 0;
if (resumeFrom !== null) {
  const ck = await t.loadCheckpoint(resumeFrom, { ...checkpointed, rng: false }, loadOpts);
  startIter = ck.step;
  log(`resuming from ${resumeFrom} at iter ${startIter}`);
}
const ddp = distributed && strategy !== 'fsdp' ? new t.DistributedDataParallel(model) : null;
const net = ddp ?? model; // what training calls: DDP all-reduces the gradients in backward

// Every rank draws its own batches, and dropout masks, from its own stream. A resumed
// run starts new streams rather than replaying the batches of iter 0 onwards.
const trainGen = new t.Generator().manualSeed(streamSeed(args.seed, 'train', rank, startIter));
t.manualSeed(streamSeed(args.seed, 'dropout', rank, startIter));

/** nanoGPT's get_lr: linear warmup, then cosine decay to minLr at maxIters. */
function getLr(it: number): number {
  if (it < args.warmupIters) return (args.lr * (it + 1)) / (args.warmupIters + 1);
  if (it >= args.maxIters) return args.minLr;
  const ratio = (it - args.warmupIters) / (args.maxIters - args.warmupIters);
  return args.minLr + 0.5 * (1 + Math.cos(Math.PI * ratio)) * (args.lr - args.minLr);
}

/**
 * Mean loss over evalIters batches per split and process, averaged over the ranks. Each
 * evaluation draws the same batches (a fixed stream), so successive results differ by
 * training only, not by sampling noise.
 */
async function estimateLoss(): Promise<{ train: number; val: number }> {
  model.eval(); // no dropout; the raw model: no gradients, so nothing for DDP to do
  const means = t.noGrad(() =>
    (['train', 'val'] as const).map((split) => {
      const gen = new t.Generator().manualSeed(streamSeed(args.seed, 'eval', split, rank));
      let sum = 0;
      for (let k = 0; k < args.evalIters; k++) {
        using _ = t.scope();
        sum += model.forward(...getBatch(splits[split], gen)).loss!.item();
      }
      return sum / args.evalIters;
    }),
  );
  model.train();
  using _ = t.scope();
  const both = t.tensor(means, { dtype: 'float64' });
  if (distributed) await t.distributed.allReduce(both, 'sum');
  const [train, val] = both.div(worldSize).tolist() as number[];
  return { train, val };
}

/** What saveCheckpoint writes for a state dict all ranks gathered beforehand (fsdp). */
function gathered(sd: object): t.Stateful {
  return {
    stateDict: () => sd,
    loadStateDict: () => {
      throw new Error('a gathered state dict is written, not loaded');
    },
  };
}

async function saveCheckpoint(iter: number, valLoss: number): Promise<void> {
  // Every rank takes part in gathering the state (fsdp, zero1); rank 0 writes it.
  const state = {
    model: strategy === 'fsdp' ? fsdp.getModelStateDict(model, { fullStateDict: true }) : null,
    optimizer:
      strategy === 'fsdp' ? fsdp.getOptimizerStateDict(model, optimizer, { fullStateDict: true }) : null,
  };
  if (optimizer instanceof t.distributed.optim.ZeroRedundancyOptimizer) optimizer.consolidateStateDict(0);
  if (master) {
    const extra = { config, valLoss, args };
    const saved = await t.saveCheckpoint(
      args.outDir,
      {
        model: state.model ? gathered(state.model) : model,
        optimizer: state.optimizer ? gathered(state.optimizer) : optimizer,
        epoch: 0, // no epochs: batches are random
        step: iter,
        rng: false,
        extra,
      },
      { keepLast: 2 },
    );
    log(`saved ${saved.dir}`);
  }
  if (distributed) await t.distributed.barrier(); // nobody runs ahead of a checkpoint in progress
}

log(
  `gpt: ${config.nLayer} layers, ${config.nHead} heads, width ${config.nEmbd}, block ${config.blockSize}, ` +
    `${(model.numParameters() / 1e6).toFixed(2)}M parameters${pretrained ? ` from ${args.initFrom}` : ''}; ` +
    `${args.data}: ${nTrain} train / ${nTokens - nTrain} val ${tokenIds ? 'tokens' : 'bytes'}; ` +
    `${worldSize} process(es) x ${args.batchSize} x ${args.gradAccum} micro-steps x ${T} = ` +
    `${worldSize * args.batchSize * args.gradAccum * T} tokens/iter`,
);
// TensorBoard: rank 0's curves; a resumed run hides what the interrupted one logged after its checkpoint.
const board =
  master && args.tensorboard !== undefined
    ? new t.utils.tensorboard.SummaryWriter(args.tensorboard, {
        purgeStep: startIter > 0 ? startIter + 1 : null,
      })
    : null;

// 5. Training. An evaluation (and checkpoint) every evalInterval steps and at the end.
let windowStart = performance.now();
for (let iter = startIter; ; iter++) {
  if (iter % args.evalInterval === 0 || iter === args.maxIters) {
    const { train, val } = await estimateLoss();
    log(`step ${iter}: train loss ${train.toFixed(4)}, val loss ${val.toFixed(4)}`);
    board?.addScalars('loss', { train, val }, iter);
    if (iter > startIter) await saveCheckpoint(iter, val);
    windowStart = performance.now(); // evaluation time is not training time
  }
  if (iter >= args.maxIters) break;

  // The learning rate is a function of the step alone, so a resume needs only the step.
  const lr = getLr(iter);
  for (const group of optimizer.paramGroups) group.lr = lr;

  // Gradient accumulation: the gradients of gradAccum micro-batches add up locally, and
  // only the last backward all-reduces them (noSync skips the all-reduce before it).
  let lossSum = 0;
  for (let micro = 0; micro < args.gradAccum; micro++) {
    using _ = t.scope(); // frees this micro-step's tensors
    const [x, y] = getBatch(splits.train, trainGen);
    const step = () => {
      const loss = net.forward(x, y).loss!;
      loss.div(args.gradAccum).backward(); // the mean over micro-batches, as one big batch
      return loss.item();
    };
    const last = micro === args.gradAccum - 1;
    sharded?.setRequiresGradientSync(last); // fsdp: no reduce-scatter before the last
    lossSum += ddp !== null && !last ? ddp.noSync(step) : step();
  }
  {
    using _ = t.scope();
    if (args.gradClip > 0) {
      // Under fsdp a rank holds shards: the norm is over every rank's (one all-reduce).
      if (strategy === 'fsdp') fsdp.clipGradNorm_(model, args.gradClip);
      else t.optim.clipGradNorm_(model.parameters(), args.gradClip);
    }
    optimizer.step();
    optimizer.zeroGrad();
  }

  if ((iter + 1) % args.logInterval === 0) {
    const ms = (performance.now() - windowStart) / args.logInterval;
    // This rank's training loss: an all-reduce per log line would cost every step a sync.
    log(
      `iter ${iter + 1}: loss ${(lossSum / args.gradAccum).toFixed(4)}, lr ${lr.toExponential(2)}, ${ms.toFixed(1)} ms/iter`,
    );
    board?.addScalar('train/loss', lossSum / args.gradAccum, iter + 1);
    board?.addScalar('train/lr', lr, iter + 1);
    windowStart = performance.now();
  }
}

// 6. Every strategy keeps the ranks' models identical: every rank prints a fingerprint of
// its weights (under fsdp, gathered whole).
const digest = createHash('sha256');
const finalState =
  strategy === 'fsdp' ? fsdp.getModelStateDict(model, { fullStateDict: true }) : model.stateDict();
for (const p of Object.values(finalState)) digest.update(p.to('cpu').toBytes());
console.log(`parameters sha256 ${digest.digest('hex').slice(0, 16)} (rank ${rank} of ${worldSize})`);
ddp?.close();
if (distributed) t.distributed.destroyProcessGroup();
board?.close();

// The fine-tuned weights as a Hugging Face folder (rank 0; under fsdp from the gathered state).
if (master && args.savePretrained !== undefined) {
  const whole = strategy === 'fsdp' ? t.models.gpt(config) : model;
  if (whole !== model) whole.loadStateDict(finalState);
  await whole.to('cpu').savePretrained(args.savePretrained);
  log(`saved ${args.savePretrained} (a Hugging Face GPT-2 folder)`);
}

// 7. A sample from the trained model, starting from a newline (nanoGPT's sample.py). Under
// fsdp the sharded model needs its peers for every forward: rank 0 samples from a plain
// copy of the whole weights instead.
if (master && args.sampleTokens > 0 && !tokenIds) {
  const sampler = strategy === 'fsdp' ? t.models.gpt(config) : model;
  if (sampler !== model) sampler.loadStateDict(finalState);
  sampler.to(device);
  sampler.eval();
  using _ = t.scope();
  const start = t.tensor([[10]], { dtype: 'int64', device });
  const out = sampler.generate(start, args.sampleTokens, {
    temperature: args.temperature,
    topK: args.topK,
    generator: new t.Generator().manualSeed(streamSeed(args.seed, 'sample')),
  });
  const text = Buffer.from(out.view([-1]).to('uint8').to('cpu').toBytes()).toString('utf8');
  console.log(`sample (${args.sampleTokens} bytes, temperature ${args.temperature}, top-k ${args.topK}):`);
  console.log(text);
}
