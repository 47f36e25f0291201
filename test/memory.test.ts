// Memory management (architecture §4): tidy / scope / tidyAsync / keep / dispose free exactly
// what they should, memory() reports it, and a steady-state training loop has a flat
// live-tensor count and flat RSS (the acceptance test).
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import * as t from '../src/index.ts';

// A real garbage collection even when node was not started with --expose-gc.
v8.setFlagsFromString('--expose-gc');
const gc: () => void = globalThis.gc ?? vm.runInNewContext('gc');

const live = (): number => t.memory().tensors;
const tick = (ms = 0): Promise<void> => new Promise((r) => setTimeout(r, ms));

// --- (a) scopes -------------------------------------------------------------------------

test('tidy frees everything it created except the returned tensor', () => {
  const before = live();
  let inner: t.Tensor[] = [];
  const out = t.tidy(() => {
    const a = t.ones([4]);
    const b = a.add(1);
    const c = b.mul(b).relu();
    inner = [a, b, c];
    return c.sum();
  });
  assert.equal(live(), before + 1);
  assert.equal(out.item(), 16);
  assert.ok(inner.every((x) => x.isDisposed));
  assert.equal(out.isDisposed, false);
  out.dispose();
  assert.equal(live(), before);
});

test('tidy keeps tensors in returned arrays, nested arrays and plain objects', () => {
  const before = live();
  let scratch: t.Tensor | undefined;
  const r = t.tidy(() => {
    scratch = t.zeros([3]);
    const a = t.ones([2]);
    const b = t.full([2], 2);
    const c = t.full([2], 3);
    const d = t.full([2], 4);
    return { a, list: [b, [c]], nested: { d }, n: 5, s: 'x' };
  });
  assert.equal(live(), before + 4);
  assert.equal(scratch?.isDisposed, true);
  assert.deepEqual(r.a.toArray(), [1, 1]);
  assert.deepEqual((r.list[0] as t.Tensor).toArray(), [2, 2]);
  assert.deepEqual(((r.list[1] as t.Tensor[])[0] as t.Tensor).toArray(), [3, 3]);
  assert.deepEqual(r.nested.d.toArray(), [4, 4]);
  assert.equal(r.n, 5);
  // A returned tuple from an op (max with dim) is kept too.
  const [values, indices] = t.tidy(() =>
    t
      .tensor([[1, 3, 2]])
      .mul(2)
      .max(1),
  );
  assert.deepEqual(values.toArray(), [6]);
  assert.deepEqual(indices.toArray(), [1]);
  for (const x of [r.a, r.list[0] as t.Tensor, (r.list[1] as t.Tensor[])[0], r.nested.d, values, indices])
    x.dispose();
  assert.equal(live(), before);
});

test('tidy does not free tensors that were created outside it', () => {
  const outside = t.ones([3]);
  const before = live();
  const r = t.tidy(() => outside.add(1));
  assert.equal(outside.isDisposed, false);
  assert.equal(live(), before + 1);
  // Returning a tensor from outside the scope leaves it alone as well.
  const same = t.tidy(() => {
    t.zeros([10]);
    return outside;
  });
  assert.equal(same, outside);
  assert.equal(outside.isDisposed, false);
  assert.equal(live(), before + 1);
  r.dispose();
  outside.dispose();
});

test('nested tidy: the inner result belongs to the outer scope', () => {
  const before = live();
  let innerResult: t.Tensor | undefined;
  let innerTemp: t.Tensor | undefined;
  const out = t.tidy(() => {
    const a = t.ones([2]);
    innerResult = t.tidy(() => {
      innerTemp = a.mul(3);
      return innerTemp.add(1);
    });
    assert.equal(innerTemp?.isDisposed, true, 'the inner temporary is freed when the inner tidy ends');
    assert.equal(innerResult.isDisposed, false);
    assert.equal(live(), before + 2); // a and innerResult
    return innerResult.sum();
  });
  assert.equal(innerResult?.isDisposed, true, 'the inner result is freed by the outer tidy');
  assert.equal(out.item(), 8);
  assert.equal(live(), before + 1);
  out.dispose();
});

test('keep() makes a tensor outlive its scope (tidy and scope())', () => {
  const before = live();
  let kept: t.Tensor | undefined;
  let keptMethod: t.Tensor | undefined;
  let dropped: t.Tensor | undefined;
  t.tidy(() => {
    kept = t.keep(t.ones([2]));
    keptMethod = t.zeros([2]).keep();
    dropped = t.ones([2]);
  });
  assert.equal(kept?.isDisposed, false);
  assert.equal(keptMethod?.isDisposed, false);
  assert.equal(dropped?.isDisposed, true);
  // A kept tensor survives the enclosing scopes of a nested tidy as well.
  let deep: t.Tensor | undefined;
  t.tidy(() => {
    t.tidy(() => {
      deep = t.full([1], 9).keep();
    });
    t.ones([1]);
  });
  assert.equal(deep?.isDisposed, false);
  assert.equal(deep?.item(), 9);
  assert.equal(live(), before + 3);
  kept?.dispose();
  keptMethod?.dispose();
  deep?.dispose();
  assert.equal(live(), before);
});

test('a throwing fn still frees its tensors, and the scope stack recovers', () => {
  const before = live();
  const made: t.Tensor[] = [];
  assert.throws(
    () =>
      t.tidy(() => {
        made.push(t.ones([5]), t.zeros([5]));
        made.push(made[0].add(made[1]));
        throw new Error('boom');
      }),
    /boom/,
  );
  assert.ok(made.every((x) => x.isDisposed));
  assert.equal(live(), before);
  // A libtorch error inside tidy also frees what was made before it.
  assert.throws(
    () =>
      t.tidy(() => {
        made.push(t.ones([2, 3]));
        return made[3].matmul(made[3]);
      }),
    t.TorchError,
  );
  assert.equal(made[3].isDisposed, true);
  assert.equal(live(), before);
  // After the throw, new tensors are not owned by the dead scope.
  const x = t.ones([1]);
  const z = t.tidy(() => t.zeros([1]).add(x));
  assert.equal(x.isDisposed, false);
  assert.equal(z.item(), 1);
  x.dispose();
  z.dispose();
  assert.equal(live(), before);
});

test('using s = t.scope() frees on block exit (and on a throw)', () => {
  const before = live();
  let a: t.Tensor | undefined;
  let b: t.Tensor | undefined;
  let kept: t.Tensor | undefined;
  {
    using _s = t.scope();
    a = t.ones([3]);
    b = a.mul(2);
    kept = b.sum().keep();
    assert.equal(live(), before + 3);
  }
  assert.equal(a.isDisposed, true);
  assert.equal(b.isDisposed, true);
  assert.equal(kept?.item(), 6);
  assert.equal(live(), before + 1);
  kept?.dispose();

  let c: t.Tensor | undefined;
  assert.throws(() => {
    using _s = t.scope();
    c = t.ones([3]);
    throw new Error('inside the block');
  }, /inside the block/);
  assert.equal(c?.isDisposed, true);
  assert.equal(live(), before);

  // Nested scopes close innermost first; tensors made after the inner block belong to the outer.
  let inner: t.Tensor | undefined;
  let outerLater: t.Tensor | undefined;
  {
    using _outer = t.scope();
    {
      using _inner = t.scope();
      inner = t.ones([1]);
    }
    assert.equal(inner.isDisposed, true);
    outerLater = t.ones([1]);
    assert.equal(live(), before + 1);
  }
  assert.equal(outerLater.isDisposed, true);
  assert.equal(live(), before);

  // close() by hand works like the end of the block, and twice is harmless.
  const s = t.scope();
  const d = t.ones([2]);
  s.close();
  s.close();
  assert.equal(d.isDisposed, true);
  assert.equal(live(), before);
});

test('tidyAsync frees across awaits and returns its result', async () => {
  const before = live();
  const temps: t.Tensor[] = [];
  const out = await t.tidyAsync(async () => {
    const a = t.ones([4]);
    temps.push(a);
    await tick(5);
    const b = a.mul(3);
    temps.push(b);
    await Promise.resolve();
    const c = b.add(1);
    temps.push(c);
    await tick(1);
    return { sum: c.sum(), mean: c.mean() };
  });
  assert.ok(temps.every((x) => x.isDisposed));
  assert.equal(out.sum.item(), 16);
  assert.equal(out.mean.item(), 4);
  assert.equal(live(), before + 2);
  out.sum.dispose();
  out.mean.dispose();
  assert.equal(live(), before);
  // A rejected tidyAsync frees too.
  const made: t.Tensor[] = [];
  await assert.rejects(
    t.tidyAsync(async () => {
      made.push(t.ones([2]));
      await tick(1);
      made.push(t.ones([2]));
      throw new Error('async boom');
    }),
    /async boom/,
  );
  assert.ok(made.every((x) => x.isDisposed));
  assert.equal(live(), before);
});

test('tidyAsync leaves tensors created concurrently by another task alone', async () => {
  const before = live();
  const fromA: t.Tensor[] = [];
  const fromB: t.Tensor[] = [];
  const fromOutside: t.Tensor[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  // Task A: a tidyAsync that waits while others run.
  const taskA = t.tidyAsync(async () => {
    fromA.push(t.ones([2]));
    await gate;
    fromA.push(t.ones([3]));
    await tick(2);
    return fromA[1].sum();
  });
  // Task B: another tidyAsync interleaved with A, returning its own tensor.
  const taskB = t.tidyAsync(async () => {
    await tick(1);
    fromB.push(t.zeros([2]));
    await tick(1);
    const r = fromB[0].add(7);
    fromB.push(r);
    return r;
  });
  // Plain code outside any scope, running while A and B are suspended.
  await tick(1);
  fromOutside.push(t.full([2], 5));
  release();
  await tick(1);
  fromOutside.push(t.full([2], 6));
  const [a, b] = await Promise.all([taskA, taskB]);
  assert.equal(a.item(), 3);
  assert.deepEqual(b.toArray(), [7, 7]);
  assert.ok(
    fromA.every((x) => x.isDisposed),
    "A's temporaries are freed",
  );
  assert.equal(fromB[0].isDisposed, true, "B's temporary is freed");
  assert.equal(fromB[1].isDisposed, false, "B's result is alive");
  assert.ok(
    fromOutside.every((x) => !x.isDisposed),
    'tensors created outside while the tasks were suspended are left alone',
  );
  assert.deepEqual(fromOutside[0].toArray(), [5, 5]);
  assert.equal(live(), before + 4);
  for (const x of [a, b, ...fromOutside]) x.dispose();
  assert.equal(live(), before);
});

test('dispose() twice is harmless and does not free a reused slot', () => {
  const before = live();
  const x = t.ones([2]);
  x.dispose();
  assert.equal(x.isDisposed, true);
  assert.equal(live(), before);
  x.dispose();
  x[Symbol.dispose]();
  assert.equal(live(), before);
  // The freed slot is likely reused by the next tensor: disposing the stale object again,
  // or closing a scope that held it, must not touch the new one.
  const y = t.tidy(() => {
    const z = t.ones([2]);
    z.dispose();
    const w = t.full([2], 4);
    z.dispose();
    return w;
  });
  x.dispose();
  assert.equal(y.isDisposed, false);
  assert.deepEqual(y.toArray(), [4, 4]);
  y.dispose();
  y.dispose();
  assert.equal(live(), before);
  // A tensor freed by tidy can be disposed again by hand.
  let inner: t.Tensor | undefined;
  t.tidy(() => {
    inner = t.ones([1]);
  });
  inner?.dispose();
  assert.equal(live(), before);
});

test('memory().bytes reflects a 1 MB tensor; views share its storage', () => {
  const { tensors: n0, bytes: b0 } = t.memory();
  const mb = t.zeros([256, 1024]); // 262144 float32 = 1 MiB
  assert.equal(t.memory().tensors, n0 + 1);
  assert.equal(t.memory().bytes - b0, 1024 * 1024);
  const view = mb.narrow(0, 0, 10);
  const tr = mb.t();
  assert.equal(t.memory().tensors, n0 + 3);
  assert.equal(t.memory().bytes - b0, 1024 * 1024, 'views are counted once');
  mb.dispose();
  assert.equal(t.memory().bytes - b0, 1024 * 1024, 'the storage lives while a view does');
  view.dispose();
  tr.dispose();
  assert.deepEqual(t.memory(), { tensors: n0, bytes: b0 });
  const d = t.zeros([1024, 128], { dtype: 'float64' }); // 1 MiB as float64
  assert.equal(t.memory().bytes - b0, 1024 * 1024);
  d.dispose();
  assert.equal(t.memory().bytes, b0);
});

test('unscoped tensors that become unreachable are freed by the GC safety net', async () => {
  // Settle anything from earlier tests first.
  for (let i = 0; i < 3; i++) {
    gc();
    await tick(5);
  }
  const before = live();
  (() => {
    for (let i = 0; i < 200; i++) t.ones([8]).add(i);
  })();
  assert.ok(live() >= before + 200, `expected at least ${before + 200} live, got ${live()}`);
  let now = live();
  for (let i = 0; i < 20 && now > before; i++) {
    gc();
    await tick(5);
    now = live();
  }
  assert.equal(now, before, 'every dropped tensor was finalized');
});

// --- (b) the acceptance test: a flat steady-state training loop -------------------------

interface LoopResult {
  countAt100: number;
  countAtEnd: number;
  rssGrowthMB: number;
  firstLoss: number;
  lastLoss: number;
  ms: number;
}

/** A 2-layer MLP on 16x8 random data: forward, MSE loss, backward, SGD update, zero grads. */
function trainLoop(iterations: number, mode: 'tidy' | 'scope'): LoopResult {
  t.manualSeed(0);
  const x = t.randn([16, 8]);
  const y = t.randn([16, 1]);
  const w1 = t.randn([16, 8]).mul_(0.3).requiresGrad_();
  const b1 = t.zeros([16], { requiresGrad: true });
  const w2 = t.randn([1, 16]).mul_(0.3).requiresGrad_();
  const b2 = t.zeros([1], { requiresGrad: true });
  const params = [w1, b1, w2, b2];
  const lr = 0.05;

  const step = (): number => {
    const h = t.linear(x, w1, b1).relu();
    const out = t.linear(h, w2, b2);
    const loss = t.mseLoss(out, y);
    loss.backward();
    t.noGrad(() => {
      for (const w of params) {
        w.sub_(w.grad!.mul(lr));
        w.grad = null;
      }
    });
    return loss.item();
  };

  let countAt100 = -1;
  let rssAt500 = 0;
  let firstLoss = Number.NaN;
  let lastLoss = Number.NaN;
  const start = performance.now();
  for (let i = 1; i <= iterations; i++) {
    let loss: number;
    if (mode === 'tidy') {
      loss = t.tidy(step);
    } else {
      using _s = t.scope();
      loss = step();
    }
    if (i === 1) firstLoss = loss;
    lastLoss = loss;
    if (i === 100) countAt100 = live();
    if (i === 500) rssAt500 = process.memoryUsage().rss;
  }
  const ms = performance.now() - start;
  const result = {
    countAt100,
    countAtEnd: live(),
    rssGrowthMB: (process.memoryUsage().rss - rssAt500) / (1024 * 1024),
    firstLoss,
    lastLoss,
    ms,
  };
  for (const w of [x, y, ...params]) w.dispose();
  return result;
}

function checkLoop(ctx: TestContext, r: LoopResult, label: string): void {
  ctx.diagnostic(
    `${label}: 5000 iterations in ${(r.ms / 1000).toFixed(2)} s; live tensors ${r.countAt100} -> ${r.countAtEnd}; ` +
      `RSS growth 500->5000: ${r.rssGrowthMB.toFixed(1)} MB; loss ${r.firstLoss.toFixed(4)} -> ${r.lastLoss.toExponential(2)}`,
  );
  assert.equal(r.countAtEnd, r.countAt100, 'the live tensor count is flat from iteration 100 to 5000');
  assert.ok(r.rssGrowthMB < 50, `RSS grew by ${r.rssGrowthMB.toFixed(1)} MB between iteration 500 and 5000`);
  assert.ok(r.lastLoss < r.firstLoss * 0.1, `the loop trains: loss ${r.firstLoss} -> ${r.lastLoss}`);
  assert.ok(r.ms < 30_000, `took ${r.ms} ms`);
}

test('acceptance: 5000 training steps inside t.tidy keep tensors and RSS flat', (ctx) => {
  const before = live();
  const r = trainLoop(5000, 'tidy');
  checkLoop(ctx, r, 'tidy');
  // The loop's only live tensors are the data and the parameters (6), nothing from the steps.
  assert.equal(r.countAtEnd, before + 6);
  assert.equal(live(), before);
});

test('acceptance: 5000 training steps inside `using t.scope()` keep tensors and RSS flat', (ctx) => {
  const before = live();
  const r = trainLoop(5000, 'scope');
  checkLoop(ctx, r, 'scope');
  assert.equal(r.countAtEnd, before + 6);
  assert.equal(live(), before);
});
