// tsddp and PyTorch in one job: the same store keys and init collectives as
// torch.distributed 2.13, so a world may mix PyTorch and tsddp ranks, and tsddp workers run
// under the real torchrun (TORCHELASTIC_USE_AGENT_STORE: the agent hosts the store).
// Each rank runs test/workers/interop_rank.py or interop-rank.mts — the same collectives,
// then 3 SGD steps (DDP, DDP with ZeroRedundancyOptimizer, or fully_shard) of ResNet-18 (torchvision's module tree and state-dict keys, base
// width 16, 10 classes, batch 4 of 32x32 images per rank, 1/4 MiB buckets, BatchNorm
// buffers broadcast from rank 0 before every forward) from one initial state dict that
// PyTorch wrote as safetensors — and prints its results: the collectives' values, each
// step's loss and the sha256 of every parameter and buffer. A mixed world must give, rank
// by rank, bit for bit what an all-PyTorch world gives. Needs a Python with torch (setup's .venv); skipped, with
// the reason, without one.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { probeTorchPython, REPO_ROOT } from '../src/benchmark/reference.ts';
import { freePort } from '../src/host/gang.ts';
import { type CommandRun, runCommand } from './helpers/run.ts';

const torch = probeTorchPython();
const skip = torch === null ? 'no Python that can import torch (npm run setup makes .venv)' : false;
const PY_RANK = join(REPO_ROOT, 'test/workers/interop_rank.py');
const TS_RANK = join(REPO_ROOT, 'test/workers/interop-rank.mts');
const TSX = ['--import', 'tsx'];
const tmp = mkdtempSync(join(tmpdir(), 'tsddp-interop-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
// ResNet-18's initial state (seed 0), written by PyTorch; every rank of every world loads it.
const INIT = join(tmp, 'resnet18-init.safetensors');
before(async () => {
  if (torch === null) return;
  const r = await run(torch.python, [PY_RANK, '--write-init', INIT], {});
  assert.equal(r.code, 0, r.out);
});

type Side = 'pytorch' | 'tsddp';
interface RankResult {
  rank: number;
  side: Side;
  losses: number[];
  /** [name, sha256 of the raw float32 data] of every parameter after training. */
  params: [string, string][];
  /** The same for every buffer (BatchNorm's running statistics and batch counts). */
  buffers: [string, string][];
  [collective: string]: unknown;
}

/** `cmd args` in the repository, to its end. */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<CommandRun> {
  return runCommand([cmd, ...args], { env, cwd: REPO_ROOT });
}

function results(out: string): RankResult[] {
  return out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as RankResult)
    .sort((a, b) => a.rank - b.rank);
}

type Strategy = 'ddp' | 'zero1' | 'fsdp';

/** A 2-rank env:// world whose rank r runs sides[r], training under `strategy`. */
async function world(sides: [Side, Side], strategy: Strategy = 'ddp'): Promise<RankResult[]> {
  const port = await freePort();
  const runs = await Promise.all(
    sides.map((side, rank) => {
      const env = {
        MASTER_ADDR: '127.0.0.1',
        MASTER_PORT: String(port),
        WORLD_SIZE: '2',
        RANK: String(rank),
        LOCAL_RANK: String(rank),
      };
      return side === 'pytorch'
        ? run((torch as { python: string }).python, [PY_RANK, INIT, strategy], env)
        : run(process.execPath, [...TSX, TS_RANK, INIT, strategy], env);
    }),
  );
  for (const [rank, r] of runs.entries()) assert.equal(r.code, 0, `rank ${rank} (${sides[rank]}):\n${r.out}`);
  const out = results(runs.map((r) => r.out).join('\n'));
  assert.deepEqual(
    out.map((r) => r.side),
    sides,
  );
  return out;
}

const references = new Map<Strategy, RankResult[]>();
async function allPyTorch(strategy: Strategy = 'ddp'): Promise<RankResult[]> {
  if (!references.has(strategy)) references.set(strategy, await world(['pytorch', 'pytorch'], strategy));
  return references.get(strategy) as RankResult[];
}

/**
 * Rank by rank, every collective's result, loss, trained parameter and buffer equals the
 * all-PyTorch world's. The parameters are also the same on both ranks; the buffers are not
 * (each rank's last forward updates rank 0's broadcast statistics with its own batch).
 */
function assertSameAsPyTorch(got: RankResult[], ref: RankResult[], replicated = true): void {
  for (const r of [0, 1]) {
    const { side: _a, ...mine } = got[r];
    const { side: _b, ...theirs } = ref[r];
    assert.deepEqual(mine, theirs, `rank ${r} (${got[r].side}) differs from PyTorch's rank ${r}`);
  }
  if (replicated) assert.deepEqual(got[0].params, got[1].params, 'the same parameters on both ranks');
}

test('a world of a PyTorch rank 0 and a tsddp rank 1 gives PyTorch’s results, bit for bit', {
  skip,
}, async () => {
  assertSameAsPyTorch(await world(['pytorch', 'tsddp']), await allPyTorch());
});

test('a world of a tsddp rank 0 (serving the store) and a PyTorch rank 1 gives PyTorch’s results', {
  skip,
}, async () => {
  assertSameAsPyTorch(await world(['tsddp', 'pytorch']), await allPyTorch());
});

// Beyond DDP: ZeroRedundancyOptimizer's shards and broadcasts, and fully_shard's
// all-gathers and reduce-scatters, are PyTorch's too, so a mixed world trains as PyTorch's.
for (const sides of [
  ['pytorch', 'tsddp'],
  ['tsddp', 'pytorch'],
] as [Side, Side][]) {
  test(`zero1: a world of a ${sides[0]} rank 0 and a ${sides[1]} rank 1 gives PyTorch’s ZeroRedundancyOptimizer results`, {
    skip,
  }, async () => {
    assertSameAsPyTorch(await world(sides, 'zero1'), await allPyTorch('zero1'));
  });
  test(`fsdp: a world of a ${sides[0]} rank 0 and a ${sides[1]} rank 1 gives PyTorch’s fully_shard results, shard by shard`, {
    skip,
  }, async () => {
    const got = await world(sides, 'fsdp');
    assertSameAsPyTorch(got, await allPyTorch('fsdp'), false);
    // Each rank holds its own rows of every parameter.
    assert.notDeepEqual(got[0].params, got[1].params);
  });
}

// torchrun's three ways to rendezvous: --standalone (c10d on a free local port), static
// (--master-addr/--master-port), and c10d with an endpoint and id.
const RENDEZVOUS: [string, () => Promise<string[]>][] = [
  ['--standalone', async () => ['--standalone']],
  [
    'static rendezvous',
    async () => [
      '--nnodes',
      '1',
      '--node-rank',
      '0',
      '--master-addr',
      '127.0.0.1',
      '--master-port',
      String(await freePort()),
    ],
  ],
  [
    'c10d rendezvous',
    async () => [
      '--nnodes',
      '1:1',
      '--rdzv-backend',
      'c10d',
      '--rdzv-endpoint',
      `127.0.0.1:${await freePort()}`,
      '--rdzv-id',
      'interop',
    ],
  ],
];

for (const [mode, flags] of RENDEZVOUS) {
  test(`tsddp workers run under the real torchrun (${mode}; the agent hosts the store)`, {
    skip,
  }, async () => {
    const r = await run(
      (torch as { python: string }).python,
      [
        ...['-m', 'torch.distributed.run', ...(await flags()), '--nproc-per-node', '2', '--no-python'],
        ...[process.execPath, ...TSX, TS_RANK, INIT],
      ],
      {},
    );
    assert.equal(r.code, 0, r.out);
    const got = results(r.out);
    assert.deepEqual(
      got.map((x) => x.side),
      ['tsddp', 'tsddp'],
    );
    assertSameAsPyTorch(got, await allPyTorch());
  });
}

test('under torchrun --max-restarts 1, a crashed tsddp gang restarts and resumes from its last checkpoint', {
  skip,
}, async () => {
  // Rank 1 is SIGKILLed after step 5 of the first attempt; checkpoints every 3 steps.
  const job = {
    config: {
      model: 'resnet18',
      widthMultiplier: 0.125,
      imageSize: 16,
      trainSize: 96,
      valSize: 8,
      batchSize: 4,
      epochs: 1,
      workers: 0,
      evalEvery: 0,
      checkpointDir: join(tmp, 'ck'),
      checkpointEvery: 3,
    },
    crash: { atStep: 5, ranks: [1], attempt: 0 },
    result: join(tmp, 'res'),
  };
  writeFileSync(join(tmp, 'job.json'), JSON.stringify(job));
  const r = await run(
    (torch as { python: string }).python,
    [
      ...['-m', 'torch.distributed.run', '--standalone', '--nproc-per-node', '2', '--max-restarts', '1'],
      ...[
        '--no-python',
        process.execPath,
        ...TSX,
        join(REPO_ROOT, 'test/workers/train-worker.ts'),
        join(tmp, 'job.json'),
      ],
    ],
    {},
  );
  assert.equal(r.code, 0, r.out);
  for (const rank of [0, 1]) {
    const res = JSON.parse(readFileSync(join(tmp, `res.rank${rank}`), 'utf8'));
    assert.equal(res.startStep, 3, `rank ${rank} resumed from the step-3 checkpoint:\n${r.out}`);
    assert.equal(res.resumedFrom, join(tmp, 'ck', 'ckpt-000003'));
    assert.equal(res.steps, 12);
  }
});
