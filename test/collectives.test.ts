// Collectives between real processes (Gloo on loopback): results of every op on 2 and 3
// ranks, argument checks, and faults: a stopped peer makes the others fail at the
// configured timeout (docs/reliability.md R5), a peer that exits or is killed makes them fail fast.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { type Job, okResults, type RankResult, runJob, startJob } from './helpers/multiproc.ts';

interface ErrorInfo {
  name: string;
  message: string;
  op?: string;
  rank?: number;
  isDistributedError?: boolean;
}

interface OpsResult {
  info: { rank: number; worldSize: number; backend: string };
  beforeInit: ErrorInfo;
  twice: ErrorInfo;
  allReduce: Record<'sum' | 'avg' | 'product' | 'min' | 'max', number[]>;
  ints: number[];
  defaultOp: number[];
  broadcast: number[];
  broadcastWork: boolean;
  completed: boolean;
  blockingCompleted: boolean;
  allGather: number[][];
  reduceScatter: Record<'sum' | 'max', number[]>;
  barrierEnter: number;
  barrierExit: number;
  bad: Record<string, ErrorInfo | null>;
  after: number[];
  /** Absent on the rank that left. */
  isInitializedAfterDestroy?: boolean;
  fault?: FaultResult;
}

interface FaultResult {
  error: ErrorInfo | null;
  elapsedMs: number;
  ticks?: number;
  timeoutMs?: number;
}

const HANG_TIMEOUT_MS = 3000;

// The jobs start together (they use separate ports) and each test awaits its own. After
// the ops, the last rank of the 2-rank job exits by itself and that of the 3-rank job is
// SIGKILLed; the others' next all-reduce must fail.
const jobs: {
  ops2?: Promise<RankResult<OpsResult>[]>;
  ops3?: Promise<RankResult<OpsResult>[]>;
  hang?: Promise<RankResult<FaultResult>[]>;
  pending?: Promise<RankResult<FaultResult>[]>;
} = {};

before(() => {
  jobs.ops2 = runJob<OpsResult>('collectives', { worldSize: 2, config: { scenario: 'ops', fault: 'exit' } });
  jobs.ops3 = opsThenKill();
  jobs.hang = stoppedPeer(3, false);
  jobs.pending = stoppedPeer(2, true);
  for (const p of Object.values(jobs)) p?.catch(() => {});
});

async function opsThenKill(): Promise<RankResult<OpsResult>[]> {
  const job: Job<OpsResult> = await startJob('collectives', {
    worldSize: 3,
    config: { scenario: 'ops', fault: 'kill' },
    timeoutMs: 60_000,
    failureGraceMs: 30_000,
  });
  try {
    await Promise.all([0, 1, 2].map((r) => job.waitForLine(r, 'READY')));
    job.procs[2].kill('SIGKILL');
    await new Promise((resolve) => job.procs[2].once('exit', resolve));
    job.send(0, 'go');
    job.send(1, 'go');
    return await job.done;
  } finally {
    job.kill();
  }
}

/** Each rank's ops result; every rank exited cleanly except the last, which left as planned. */
function opsResults(outcomes: RankResult<OpsResult>[], w: number): OpsResult[] {
  const last = outcomes[w - 1];
  if (w === 2) assert.equal(last.code, 0, `the last rank exits by itself\n${last.stderr}`);
  else assert.equal(last.signal, 'SIGKILL');
  assert.ok(last.result, `rank ${w - 1} wrote its results before leaving\n${last.stderr}`);
  return [...okResults(outcomes.slice(0, w - 1)), last.result];
}

/**
 * `worldSize` ranks; rank 1 is SIGSTOPped before the others start an all-reduce (or, with
 * `pending`, a reduce-scatter waited for later), then SIGKILLed.
 */
async function stoppedPeer(worldSize: number, pending: boolean): Promise<RankResult<FaultResult>[]> {
  const job: Job<FaultResult> = await startJob('collectives', {
    worldSize,
    config: { scenario: 'hang', timeoutMs: HANG_TIMEOUT_MS, pending },
    timeoutMs: 60_000,
  });
  const others = [0, 2].filter((r) => r < worldSize);
  try {
    await Promise.all([...others, 1].map((r) => job.waitForLine(r, 'READY')));
    job.procs[1].kill('SIGSTOP');
    for (const r of others) job.send(r, 'go');
    // The others exit by themselves; rank 1 is stopped until killed.
    await Promise.all(
      others.map(
        (r) =>
          new Promise<void>((resolve) => {
            const p = job.procs[r];
            if (p.exitCode !== null || p.signalCode !== null) resolve();
            else p.once('exit', () => resolve());
          }),
      ),
    );
    job.procs[1].kill('SIGKILL');
    return await job.done;
  } finally {
    job.kill();
  }
}

function expectedOps(w: number) {
  const ranks = Array.from({ length: w }, (_, r) => r);
  const inputs = ranks.map((r) => [r + 1, -(r + 2), 0.5 * (r + 1), 3]);
  const fold = (f: (a: number, b: number) => number) =>
    [0, 1, 2, 3].map((i) => inputs.map((x) => x[i]).reduce(f));
  const sum = fold((a, b) => a + b);
  return {
    allReduce: {
      sum,
      avg: sum.map((s) => s / w),
      product: fold((a, b) => a * b),
      min: fold((a, b) => Math.min(a, b)),
      max: fold((a, b) => Math.max(a, b)),
    },
    ints: [ranks.reduce((a, r) => a + r + 1, 0), ranks.reduce((a, r) => a + 1000 * r, 0)],
    broadcast: [10 * (w - 1) + 1, 10 * (w - 1) + 2],
    allGather: ranks.map((k) => [k, k * k, 0 - k]),
    // Rank r receives the reduction of every rank's inputs[r] = [100 s + r, s r].
    reduceScatter: (r: number) => ({
      sum: [ranks.reduce((a, s) => a + 100 * s + r, 0), ranks.reduce((a, s) => a + s * r, 0)],
      max: [100 * (w - 1) + r, (w - 1) * r],
    }),
  };
}

for (const w of [2, 3]) {
  describe(`collectives on ${w} ranks`, () => {
    const results = async () =>
      opsResults((await (w === 2 ? jobs.ops2 : jobs.ops3)) as RankResult<OpsResult>[], w);

    test('allReduce with sum, avg, product, min and max; int64; the default op is sum', async () => {
      const rs = await results();
      const want = expectedOps(w);
      for (const [r, res] of rs.entries()) {
        assert.deepEqual(res.info, { rank: r, worldSize: w, backend: 'gloo' });
        assert.deepEqual(res.allReduce, want.allReduce, `rank ${r}`);
        assert.deepEqual(res.ints, want.ints);
        assert.deepEqual(res.defaultOp, [want.allReduce.sum[0]]);
      }
    });

    test('broadcast from the last rank; the Work handle completes and is awaitable', async () => {
      const rs = await results();
      const want = expectedOps(w);
      for (const res of rs) {
        assert.deepEqual(res.broadcast, want.broadcast);
        assert.equal(res.broadcastWork, true);
        assert.equal(res.completed, true);
        assert.equal(res.blockingCompleted, true);
      }
    });

    test('allGather and reduceScatter', async () => {
      const rs = await results();
      const want = expectedOps(w);
      for (const [r, res] of rs.entries()) {
        assert.deepEqual(res.allGather, want.allGather, `rank ${r}`);
        assert.deepEqual(res.reduceScatter, want.reduceScatter(r), `rank ${r}`);
      }
    });

    test('barrier: no rank leaves before the late rank 0 arrives', async () => {
      const rs = await results();
      const lastEnter = Math.max(...rs.map((x) => x.barrierEnter));
      assert.equal(lastEnter, rs[0].barrierEnter, 'rank 0 arrives last (it sleeps 300 ms)');
      for (const [r, res] of rs.entries()) {
        assert.ok(res.barrierExit >= lastEnter, `rank ${r} left at ${res.barrierExit}, before ${lastEnter}`);
      }
    });

    test('bad arguments throw TypeError/RangeError naming the problem; the group stays usable', async () => {
      const rs = await results();
      for (const res of rs) {
        const b = res.bad;
        for (const key of ['broadcastSrcTooLarge', 'broadcastSrcNegative', 'broadcastSrcFraction']) {
          assert.equal(b[key]?.name, 'RangeError', key);
          assert.match(
            b[key]?.message ?? '',
            new RegExp(`broadcast\\(\\): rank .* out of range for world size ${w}`),
          );
        }
        assert.equal(b.allGatherTooFew?.name, 'TypeError');
        assert.match(b.allGatherTooFew?.message ?? '', new RegExp(`expected ${w} output tensors .*got 1`));
        assert.equal(b.reduceScatterTooMany?.name, 'TypeError');
        assert.match(
          b.reduceScatterTooMany?.message ?? '',
          new RegExp(`expected ${w} input tensors .*got ${w + 1}`),
        );
        assert.equal(b.allReduceUnknownOp?.name, 'TypeError');
        assert.match(
          b.allReduceUnknownOp?.message ?? '',
          /op must be one of sum, avg, product, min, max, band, bor, bxor \(the values of ReduceOp\), got 'mean'/,
        );
        assert.equal(b.reduceScatterUnknownOp?.name, 'TypeError');
        assert.match(b.reduceScatterUnknownOp?.message ?? '', /got 'avg2'/);
        assert.deepEqual(res.after, [(w * (w - 1)) / 2]);
      }
    });

    test('a collective before initProcessGroup, and a second init, are DistributedErrors', async () => {
      const rs = await results();
      for (const [r, res] of rs.entries()) {
        assert.equal(res.beforeInit.name, 'DistributedError');
        assert.match(res.beforeInit.message, /call initProcessGroup\(\) first/);
        assert.equal(res.twice.name, 'DistributedError');
        assert.match(res.twice.message, /already initialized/);
        assert.equal(res.twice.rank, r);
        if (r < w - 1) assert.equal(res.isInitializedAfterDestroy, false, 'destroyProcessGroup()');
      }
    });

    test(`a peer that ${w === 2 ? 'exits' : 'is SIGKILLed'}: the next collective fails fast with a clear error`, async () => {
      const rs = await results();
      for (const [r, res] of rs.slice(0, w - 1).entries()) {
        const f = res.fault;
        assert.ok(f?.error, `rank ${r}: the all-reduce must fail`);
        assert.equal(f.error.isDistributedError, true);
        assert.equal(f.error.name, 'DistributedError');
        assert.equal(f.error.op, 'allReduce');
        assert.equal(f.error.rank, r);
        assert.match(
          f.error.message,
          new RegExp(`allReduce failed on rank ${r}:.*Connection closed by peer`, 's'),
        );
        assert.ok(f.elapsedMs < 10_000, `failed after ${f.elapsedMs} ms (timeout 30 s)`);
      }
    });
  });
}

describe('collective faults', () => {
  test('a stopped peer: the others fail with a DistributedError at the timeout, never hang (docs/reliability.md R5)', async () => {
    const outcomes = (await jobs.hang) as RankResult<FaultResult>[];
    assert.equal(outcomes[1].signal, 'SIGKILL', 'the stopped rank is killed at the end');
    for (const r of [0, 2]) {
      const [res] = okResults([outcomes[r]]);
      assert.ok(res.error, `rank ${r}: the all-reduce must fail`);
      assert.equal(res.error.name, 'DistributedError');
      assert.equal(res.error.isDistributedError, true);
      assert.equal(res.error.op, 'allReduce');
      assert.equal(res.error.rank, r);
      assert.match(res.error.message, new RegExp(`allReduce failed on rank ${r}:.*Timed out`, 's'));
      // At about the configured timeout: not before it, and not much after (a loaded machine).
      assert.ok(res.elapsedMs >= HANG_TIMEOUT_MS * 0.95, `rank ${r} failed after ${res.elapsedMs} ms`);
      assert.ok(res.elapsedMs < HANG_TIMEOUT_MS + 4000, `rank ${r} failed after ${res.elapsedMs} ms`);
      // Rank 0's asyncOp call left the JS thread free (ticks every 100 ms); rank 2's blocking
      // call held it, as a PyTorch caller's thread is held.
      if (r === 0)
        assert.ok((res.ticks ?? 0) >= (res.elapsedMs / 100) * 0.5, `only ${res.ticks} timer ticks`);
      else assert.equal(res.ticks, 0, 'a blocking call holds the thread');
    }
  });

  test('a collective issued now and waited for later (PendingCollective): issuing returns at once, the wait fails at the timeout', async () => {
    const outcomes = (await jobs.pending) as RankResult<FaultResult & { issuedMs: number }>[];
    const [res] = okResults([outcomes[0]]);
    assert.ok(res.issuedMs < 1000, `issuing took ${res.issuedMs} ms`);
    assert.ok(res.error, 'the wait must fail');
    assert.equal(res.error.name, 'DistributedError');
    assert.equal(res.error.op, 'reduceScatterTensor');
    assert.match(res.error.message, /reduceScatterTensor failed on rank 0:.*Timed out/s);
    assert.ok(res.elapsedMs >= HANG_TIMEOUT_MS * 0.95, `failed after ${res.elapsedMs} ms`);
    assert.ok(res.elapsedMs < HANG_TIMEOUT_MS + 4000, `failed after ${res.elapsedMs} ms`);
  });
});

describe('GLOO_SOCKET_IFNAME', () => {
  test('selects the interface Gloo uses, as in torch.distributed; an unknown one is a clear error', async () => {
    const lo = await runJob<{ sum?: number[]; error?: ErrorInfo }>('gloo-ifname', {
      worldSize: 2,
      env: { GLOO_SOCKET_IFNAME: 'lo' },
    });
    assert.deepEqual(
      okResults(lo).map((r) => r.sum),
      [[3], [3]],
    );
    const bad = await runJob<{ sum?: number[]; error?: ErrorInfo }>('gloo-ifname', {
      worldSize: 1,
      env: { GLOO_SOCKET_IFNAME: 'nosuchif0' },
    });
    const err = bad[0].result?.error;
    assert.ok(err, `rank 0 should have failed: ${bad[0].stdout}${bad[0].stderr}`);
    assert.match(err.message, /nosuchif0/);
  });
});
