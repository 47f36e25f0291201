// PowerSGD against plain all-reduce at equal steps: time per step, bytes all-reduced per
// step and the loss reached, on a real ResNet in DDP. Run it under the launcher:
//
//   node bin/tsrun.mjs --standalone --nproc-per-node 2 bench/powersgd.ts \
//       [--model resnet50] [--size 64] [--batch 8] [--ranks 1,4] [--steps 4] [--rounds 3]
//
// Every round builds each case afresh from the same seed (all-reduce, then PowerSGD at each
// --ranks value), runs 2 untimed steps (the first rebuilds the buckets; PowerSGD starts at
// iteration 2, so every timed step is compressed), then times --steps steps, each from a
// barrier to the slowest rank's end. Rank 0 prints a markdown table of medians over the
// rounds. PyTorch's powerSGD_hook cannot be the reference here: over Gloo it deadlocks with
// several buckets (docs/guide/ddp.md#powersgd-gradient-compression).
import { parseArgs } from 'node:util';
import * as t from '../src/index.ts';
import { resnet18, resnet50 } from '../src/models/index.ts';

const { values: o } = parseArgs({
  options: {
    model: { type: 'string', default: 'resnet50' },
    size: { type: 'string', default: '64' },
    batch: { type: 'string', default: '8' },
    ranks: { type: 'string', default: '1,4' },
    steps: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '3' },
  },
});
const SIZE = Number(o.size);
const BATCH = Number(o.batch);
const STEPS = Number(o.steps);
const ROUNDS = Number(o.rounds);
const WARMUP = 2;
const build = { resnet18, resnet50 }[o.model as 'resnet18' | 'resnet50'];
if (!build) throw new Error(`--model ${o.model}: expected resnet18 or resnet50`);

const dist = t.distributed;
t.setNumThreads(Number(process.env.OMP_NUM_THREADS ?? 1));
dist.initProcessGroup({ backend: 'gloo' });
const rank = dist.getRank();
const world = dist.getWorldSize();

interface Case {
  label: string;
  rank?: number;
}
const cases: Case[] = [
  { label: 'all-reduce' },
  ...o.ranks.split(',').map((r) => ({ label: `PowerSGD rank ${r}`, rank: Number(r) })),
];

interface Sample {
  ms: number[];
  bytes: number;
  uncompressed: number;
  loss: number;
  commMs: number;
}

async function measure(c: Case): Promise<Sample> {
  t.manualSeed(0);
  const model = build({ numClasses: 1000 });
  const ddp = new dist.DistributedDataParallel(model, {
    bucketCapMb: 25,
    ...(c.rank
      ? {
          commHook: 'powerSGD' as const,
          powerSGD: { matrixApproximationRank: c.rank, startPowerSGDIter: WARMUP },
        }
      : {}),
  });
  const opt = new t.optim.SGD(model.parameters(), { lr: 0.01, momentum: 0.9, weightDecay: 5e-4 });
  t.manualSeed(1 + rank);
  const x = t.randn([BATCH, 3, SIZE, SIZE]).keep();
  const y = t.randint(1000, [BATCH]).keep();
  const ms: number[] = [];
  let loss = Number.NaN;
  for (let s = 0; s < WARMUP + STEPS; s++) {
    await dist.barrier();
    const t0 = performance.now();
    {
      using _ = t.scope();
      opt.zeroGrad();
      const l = t.crossEntropy(ddp.forward(x) as t.Tensor, y);
      l.backward();
      opt.step();
      loss = l.item();
    }
    const mine = t.tensor([performance.now() - t0]);
    await dist.allReduce(mine, 'max');
    if (s >= WARMUP) ms.push(mine.item());
    mine.dispose();
  }
  const st = ddp.stats();
  const plainBytes = st.bucketSizes.reduce((a, b) => a + b, 0);
  const out = {
    ms,
    bytes: st.powerSGD?.bytesPerStep ?? plainBytes,
    uncompressed: st.powerSGD?.uncompressedBytesPerStep ?? plainBytes,
    loss,
    commMs: st.backwardCommMs,
  };
  x.dispose();
  y.dispose();
  ddp.close();
  return out;
}

const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const samples = new Map<string, Sample[]>(cases.map((c) => [c.label, []]));
for (let r = 0; r < ROUNDS; r++) {
  for (const c of cases) {
    const s = await measure(c);
    samples.get(c.label)?.push(s);
    if (rank === 0)
      console.error(
        `round ${r + 1}/${ROUNDS} ${c.label}: ${median(s.ms).toFixed(0)} ms/step, ${s.bytes} B/step`,
      );
  }
}
if (rank === 0) {
  const base = median((samples.get('all-reduce') ?? []).flatMap((s) => s.ms));
  console.log(
    `\n${o.model} ${SIZE}x${SIZE}, batch ${BATCH} per rank, world ${world} x ${t.getNumThreads()} thread(s), 25 MiB buckets, ` +
      `${ROUNDS} rounds x ${STEPS} timed steps, medians\n`,
  );
  console.log(
    '| case | ms/step | vs all-reduce | MB all-reduced/step | compression | comm ms/batch | loss after step ' +
      `${WARMUP + STEPS} |`,
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const c of cases) {
    const ss = samples.get(c.label) ?? [];
    const ms = median(ss.flatMap((s) => s.ms));
    const s = ss[0];
    console.log(
      `| ${c.label} | ${ms.toFixed(0)} | ${(ms / base).toFixed(2)}x | ${(s.bytes / 1e6).toFixed(2)} | ` +
        `${(s.uncompressed / s.bytes).toFixed(1)}x | ${median(ss.map((x) => x.commMs)).toFixed(0)} | ${median(ss.map((x) => x.loss)).toFixed(4)} |`,
    );
  }
}
dist.destroyProcessGroup();
