// bench/memory.ts's tsddp worker, one process per rank (env://, Gloo); the PyTorch twin is
// bench/reference/memory.py and follows the same steps:
//
//   node --import tsx bench/workers/memory.mts STRATEGY LAYERS WIDTH HEADS VOCAB BLOCK BATCH STEPS
//
// STRATEGY: ddp, ddp_ac, zero1, fsdp or fsdp_ac (_ac: the GPT's activationCheckpointing: each block and the loss checkpointed).
// A GPT of LAYERS blocks (nanoGPT's, dropout 0), AdamW (lr 6e-4, weight decay 0.1), BATCH
// sequences of BLOCK random tokens per rank per step (seeded by rank), STEPS steps; the
// first is the warm-up. Memory is the resident set (/proc/self/status) with the
// allocator's mmap threshold fixed (MALLOC_MMAP_THRESHOLD_ and TSDDP_MALLOC_TUNING=0, set
// by bench/memory.ts), so freed tensors leave it:
//   baseMiB        RSS before the model is built (the runtime, libtorch, the process group);
//   peakMiB        VmHWM at the end: the run's peak;
//   activationsMiB in the last step, RSS after forward minus RSS before it (what backward keeps);
//   tokensPerS     all ranks' tokens over the timed steps / the slowest rank's time.
// Each is the largest over the ranks (an all-reduce MAX). Rank 0 prints one JSON line.
import { readFileSync } from 'node:fs';
import * as t from '../../src/index.ts';

const [strategy, ...nums] = process.argv.slice(2);
const [layers, width, heads, vocab, block, batch, steps] = nums.map(Number);
const dist = t.distributed;
t.setNumThreads(Number(process.env.OMP_NUM_THREADS ?? 1));
dist.initProcessGroup({ backend: 'gloo' });
const rank = dist.getRank();
const world = dist.getWorldSize();

const status = (key: string) =>
  Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(readFileSync('/proc/self/status', 'utf8'))?.[1]) / 1024;
const base = status('VmRSS');

t.manualSeed(0);
const gpt = new t.models.GPT(
  { nLayer: layers, nEmbd: width, nHead: heads, vocabSize: vocab, blockSize: block, dropout: 0, bias: true },
  { activationCheckpointing: strategy.endsWith('_ac') },
);
const params = gpt.numParameters(); // before sharding: the whole model's
let net: { forward(x: t.Tensor, y: t.Tensor): t.models.GPTOutput } = gpt;
if (strategy.startsWith('fsdp')) {
  for (const b of gpt.transformer.h) dist.fsdp.fullyShard(b);
  dist.fsdp.fullyShard(gpt);
} else net = new dist.DistributedDataParallel(gpt);
const adamw = { lr: 6e-4, weightDecay: 0.1 };
const opt =
  strategy === 'zero1'
    ? new dist.optim.ZeroRedundancyOptimizer(gpt.parameters(), { optimizerClass: t.optim.AdamW, ...adamw })
    : new t.optim.AdamW(gpt.parameters(), adamw);

const gen = new t.Generator().manualSeed(100 + rank);
const losses: number[] = [];
let activations = 0;
let t0 = 0;
for (let s = 0; s < steps; s++) {
  if (s === 1) {
    await dist.barrier();
    t0 = performance.now();
  }
  // As examples/train_gpt.ts: forward and backward in a scope, so that their tensors go
  // before the optimizer step; then the step in another.
  t.tidy(() => {
    const x = t.randint(0, vocab, [batch, block], { generator: gen });
    const y = t.randint(0, vocab, [batch, block], { generator: gen });
    const before = status('VmRSS');
    const loss = net.forward(x, y).loss as t.Tensor;
    if (s === steps - 1) activations = status('VmRSS') - before;
    loss.backward();
    losses.push(loss.item());
  });
  t.tidy(() => {
    opt.step();
    opt.zeroGrad();
  });
}
const elapsed = (performance.now() - t0) / 1000;
const worst = t.tensor([status('VmHWM'), base, activations, elapsed], { dtype: 'float64' });
await dist.allReduce(worst, 'max');
const [peakMiB, baseMiB, activationsMiB, slowestS] = worst.toTypedArray() as Float64Array;
if (rank === 0) {
  const tokens = world * batch * block * (steps - 1);
  console.log(
    JSON.stringify({
      side: 'tsddp',
      torch: t.buildInfo().torchVersion,
      strategy,
      params,
      peakMiB,
      baseMiB,
      activationsMiB,
      tokensPerS: tokens / slowestS,
      losses,
    }),
  );
}
dist.destroyProcessGroup();
