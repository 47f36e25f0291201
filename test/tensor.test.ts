// The Tensor API: dtypes, metadata, creation, conversion, data access, printing and the
// everyday ops (elementwise, reductions, shape ops, linear algebra, in-place, ops.call).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inspect } from 'node:util';
import v8 from 'node:v8';
import vm from 'node:vm';
import * as t from '../src/index.ts';

type Nested = number | boolean | Nested[];

/** Elementwise closeness of nested arrays (or numbers), with a useful failure message. */
function assertClose(actual: unknown, expected: Nested, tol = 1e-5, path = ''): void {
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${path}: expected an array, got ${JSON.stringify(actual)}`);
    assert.equal(actual.length, expected.length, `${path}: length`);
    expected.forEach((e, i) => {
      assertClose((actual as unknown[])[i], e, tol, `${path}[${i}]`);
    });
    return;
  }
  if (typeof expected === 'boolean') {
    assert.equal(actual, expected, path);
    return;
  }
  assert.equal(typeof actual, 'number', `${path}: expected a number, got ${JSON.stringify(actual)}`);
  const a = actual as number;
  assert.ok(
    Math.abs(a - expected) <= tol * Math.max(1, Math.abs(expected)),
    `${path}: ${a} is not close to ${expected}`,
  );
}

// A real garbage collection even when node was not started with --expose-gc.
v8.setFlagsFromString('--expose-gc');
const gc: () => void = globalThis.gc ?? vm.runInNewContext('gc');

const FLOATS = ['float32', 'float64', 'float16', 'bfloat16'] as const;
const INTS = ['int64', 'int32', 'int16', 'int8', 'uint8'] as const;

test('DTYPES lists the seventeen supported dtypes (test/dtypes-more.test.ts tests the last seven)', () => {
  assert.deepEqual([...t.DTYPES].sort(), [
    'bfloat16',
    'bool',
    'complex128',
    'complex64',
    'float16',
    'float32',
    'float64',
    'float8_e4m3fn',
    'float8_e5m2',
    'int16',
    'int32',
    'int64',
    'int8',
    'uint16',
    'uint32',
    'uint64',
    'uint8',
  ]);
});

test('every float dtype round-trips through tensor()/toTypedArray()/toArray()/item()', () => {
  // Values exactly representable in float16 and bfloat16 (8 bits of mantissa).
  const data = [
    [1.5, -2.25],
    [0, 96],
  ];
  for (const dtype of FLOATS) {
    const x = t.tensor(data, { dtype });
    assert.equal(x.dtype, dtype);
    assert.deepEqual(x.shape, [2, 2]);
    const typed = x.toTypedArray();
    // float16/bfloat16 come out widened to float32 (JS has no typed array for them).
    const expectedCtor = dtype === 'float64' ? Float64Array : Float32Array;
    assert.ok(typed instanceof expectedCtor, `${dtype}: got ${typed.constructor.name}`);
    assert.deepEqual(Array.from(typed as Float32Array), [1.5, -2.25, 0, 96]);
    assert.deepEqual(x.toArray(), data);
    assert.equal(x.select(0, 0).select(0, 1).item(), -2.25);
    assert.equal(t.tensor(96, { dtype }).item(), 96);
  }
});

test('float16 and bfloat16 round values the way their formats do', () => {
  // 1/3 is not representable: each format keeps its own number of mantissa bits.
  const h = t.tensor([1 / 3], { dtype: 'float16' }).item();
  const b = t.tensor([1 / 3], { dtype: 'bfloat16' }).item();
  assert.equal(h, 0.333251953125);
  assert.equal(b, 0.333984375);
  // float16 overflows to infinity above 65504; bfloat16 has float32's range.
  assert.equal(t.tensor([1e5], { dtype: 'float16' }).item(), Number.POSITIVE_INFINITY);
  assert.ok(Math.abs(t.tensor([1e5], { dtype: 'bfloat16' }).item() - 1e5) < 1000);
});

test('every integer dtype round-trips through tensor()/toTypedArray()/toArray()/item()', () => {
  const ctor = {
    int64: BigInt64Array,
    int32: Int32Array,
    int16: Int16Array,
    int8: Int8Array,
    uint8: Uint8Array,
  } as const;
  for (const dtype of INTS) {
    const data = [
      [1, 0],
      [7, 100],
    ];
    const x = t.tensor(data, { dtype });
    assert.equal(x.dtype, dtype);
    const typed = x.toTypedArray();
    assert.ok(typed instanceof ctor[dtype], `${dtype}: got ${typed.constructor.name}`);
    assert.deepEqual(Array.from(typed as Int32Array, Number), [1, 0, 7, 100]);
    assert.deepEqual(x.toArray(), data);
    assert.equal(x.select(0, 1).select(0, 1).item(), 100);
    // A tensor() from the typed array it gives back has the same dtype and values.
    const again = t.tensor(typed, { shape: [2, 2] });
    assert.equal(again.dtype, dtype);
    assert.deepEqual(again.toArray(), data);
  }
  // Negative values and wrap-around like a C cast.
  assert.deepEqual(t.tensor([-3, 127], { dtype: 'int8' }).toArray(), [-3, 127]);
  assert.deepEqual(t.tensor([-32768, 32767], { dtype: 'int16' }).toArray(), [-32768, 32767]);
  assert.deepEqual(t.tensor([0, 255], { dtype: 'uint8' }).toArray(), [0, 255]);
  assert.deepEqual(
    t.tensor([-2147483648, 2147483647], { dtype: 'int32' }).toArray(),
    [-2147483648, 2147483647],
  );
});

test('int64 keeps all 64 bits through BigInt64Array', () => {
  const big = 2n ** 53n + 1n; // not representable as a JS number
  const x = t.tensor(new BigInt64Array([big, -big, 5n]));
  assert.equal(x.dtype, 'int64');
  const back = x.toTypedArray() as BigInt64Array;
  assert.ok(back instanceof BigInt64Array);
  assert.deepEqual(Array.from(back), [big, -big, 5n]);
  assert.equal(x.select(0, 2).item(), 5);
  assert.equal(x.add(1).select(0, 0).toTypedArray()[0], big + 1n);
});

test('bool round-trips and converts from numbers', () => {
  const x = t.tensor([
    [true, false],
    [false, true],
  ]);
  assert.equal(x.dtype, 'bool');
  const typed = x.toTypedArray();
  assert.ok(typed instanceof Uint8Array);
  assert.deepEqual(Array.from(typed), [1, 0, 0, 1]);
  assert.deepEqual(x.toArray(), [
    [true, false],
    [false, true],
  ]);
  assert.equal(x.select(0, 0).select(0, 0).item(), 1);
  assert.equal(x.select(0, 0).select(0, 1).item(), 0);
  assert.deepEqual(t.tensor([2, 0, -1], { dtype: 'bool' }).toArray(), [true, false, true]);
});

test('tensor() picks float32 for numbers and the typed array dtype for typed arrays', () => {
  assert.equal(t.tensor([1, 2, 3]).dtype, 'float32');
  assert.equal(t.tensor(3.5).dtype, 'float32');
  assert.deepEqual(t.tensor(3.5).shape, []);
  assert.equal(t.tensor(3.5).item(), 3.5);
  assert.equal(t.tensor(new Float64Array([1])).dtype, 'float64');
  assert.equal(t.tensor(new Int32Array([1])).dtype, 'int32');
  assert.equal(t.tensor(new Uint8Array([1])).dtype, 'uint8');
  // A float32 round of a float64 JS number.
  assert.equal(t.tensor([0.1]).item(), Math.fround(0.1));
  assert.equal(t.tensor([0.1], { dtype: 'float64' }).item(), 0.1);
  // dtype aliases PyTorch users type.
  assert.equal(t.zeros([1], { dtype: 'double' as t.DType }).dtype, 'float64');
  assert.equal(t.zeros([1], { dtype: 'long' as t.DType }).dtype, 'int64');
});

test('shape, strides, numel, dim/ndim, size(), dtype, device', () => {
  const x = t.zeros([2, 3, 4]);
  assert.deepEqual(x.shape, [2, 3, 4]);
  assert.deepEqual(x.size(), [2, 3, 4]);
  assert.equal(x.size(1), 3);
  assert.equal(x.size(-1), 4);
  assert.deepEqual(x.strides, [12, 4, 1]);
  assert.deepEqual(x.stride(), [12, 4, 1]);
  assert.equal(x.numel(), 24);
  assert.equal(x.dim(), 3);
  assert.equal(x.ndim, 3);
  assert.equal(x.dtype, 'float32');
  assert.equal(x.device, 'cpu');
  assert.equal(x.isCuda, false);
  const s = t.tensor(1);
  assert.deepEqual(s.shape, []);
  assert.equal(s.ndim, 0);
  assert.equal(s.numel(), 1);
  const e = t.zeros([0, 3]);
  assert.equal(e.numel(), 0);
  assert.deepEqual(e.toArray(), []);
});

test('isContiguous: transpose breaks it, contiguous() restores it, channelsLast', () => {
  const x = t.arange(24, { dtype: 'float32' }).reshape(2, 3, 4);
  assert.equal(x.isContiguous(), true);
  const tr = x.transpose(0, 2);
  assert.deepEqual(tr.shape, [4, 3, 2]);
  assert.deepEqual(tr.strides, [1, 4, 12]);
  assert.equal(tr.isContiguous(), false);
  const c = tr.contiguous();
  assert.equal(c.isContiguous(), true);
  assert.deepEqual(c.strides, [6, 2, 1]);
  assert.deepEqual(c.toArray(), tr.toArray());

  const img = t.randn([2, 3, 4, 5]);
  assert.equal(img.isContiguous('channelsLast'), false);
  const cl = img.to({ memoryFormat: 'channelsLast' });
  assert.equal(cl.isContiguous(), false);
  assert.equal(cl.isContiguous('channelsLast'), true);
  assert.deepEqual(cl.shape, [2, 3, 4, 5]);
  assert.deepEqual(cl.strides, [60, 1, 15, 3]);
  assert.ok(cl.equal(img), 'same values in a different layout');
  assert.equal(img.contiguous('channelsLast').isContiguous('channelsLast'), true);
  assert.equal(cl.contiguous().isContiguous(), true);
});

test('creation functions and their dtype options', () => {
  const z = t.zeros([2, 3]);
  assert.equal(z.dtype, 'float32');
  assert.deepEqual(z.toArray(), [
    [0, 0, 0],
    [0, 0, 0],
  ]);
  assert.equal(t.zeros([2], { dtype: 'int64' }).dtype, 'int64');
  assert.deepEqual(t.ones([2], { dtype: 'int32' }).toArray(), [1, 1]);
  assert.equal(t.ones([2], { dtype: 'int32' }).dtype, 'int32');
  const f = t.full([2, 2], 7, { dtype: 'float64' });
  assert.equal(f.dtype, 'float64');
  assert.deepEqual(f.toArray(), [
    [7, 7],
    [7, 7],
  ]);
  assert.equal(t.full([1], 2.5).item(), 2.5);
  assert.equal(t.full([1], true).dtype, 'bool');
  const em = t.empty([3, 2], { dtype: 'int16' });
  assert.deepEqual(em.shape, [3, 2]);
  assert.equal(em.dtype, 'int16');

  const a = t.arange(5);
  assert.equal(a.dtype, 'int64'); // like torch.arange(5)
  assert.deepEqual(a.toArray(), [0, 1, 2, 3, 4]);
  assert.deepEqual(t.arange(2, 5).toArray(), [2, 3, 4]);
  assert.deepEqual(t.arange(0, 1, 0.25).toArray(), [0, 0.25, 0.5, 0.75]);
  assert.equal(t.arange(0, 1, 0.25).dtype, 'float32');
  assert.equal(t.arange(3, { dtype: 'float64' }).dtype, 'float64');

  const l = t.linspace(0, 1, 5);
  assert.equal(l.dtype, 'float32');
  assert.deepEqual(l.toArray(), [0, 0.25, 0.5, 0.75, 1]);
  assert.equal(t.linspace(0, 1, 3, { dtype: 'float64' }).dtype, 'float64');

  assert.deepEqual(t.eye(3).toArray(), [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
  ]);
  assert.deepEqual(t.eye(2, 3, { dtype: 'int32' }).toArray(), [
    [1, 0, 0],
    [0, 1, 0],
  ]);
  assert.equal(t.eye(2, { dtype: 'bool' }).dtype, 'bool');
});

test('random creation functions: ranges, dtypes, requiresGrad, seeding', () => {
  t.manualSeed(123);
  const r = t.rand([1000]);
  assert.equal(r.dtype, 'float32');
  assert.ok(r.ge(0).all().item() === 1 && r.lt(1).all().item() === 1, 'rand in [0, 1)');
  const mean = r.mean().item();
  assert.ok(mean > 0.4 && mean < 0.6, `rand mean ${mean}`);
  assert.equal(t.rand([2], { dtype: 'float64' }).dtype, 'float64');

  const n = t.randn([4000], { dtype: 'float64' });
  assert.equal(n.dtype, 'float64');
  assert.ok(Math.abs(n.mean().item()) < 0.1);
  assert.ok(Math.abs(n.std().item() - 1) < 0.1);
  const g = t.randn([2, 3], { requiresGrad: true });
  assert.equal(g.requiresGrad, true);
  assert.equal(g.isLeaf, true);

  const ri = t.randint(10, [500]);
  assert.equal(ri.dtype, 'int64');
  assert.ok(ri.ge(0).all().item() === 1 && ri.lt(10).all().item() === 1);
  const ri2 = t.randint(-3, 3, [200], { dtype: 'int32' });
  assert.equal(ri2.dtype, 'int32');
  assert.equal(ri2.min().item(), -3);
  assert.equal(ri2.max().item(), 2);

  const p = t.randperm(8);
  assert.equal(p.dtype, 'int64');
  assert.deepEqual(
    (p.toArray() as number[]).sort((a, b) => a - b),
    [0, 1, 2, 3, 4, 5, 6, 7],
  );
  assert.equal(t.randperm(4, { dtype: 'int32' }).dtype, 'int32');

  // Same seed, same numbers.
  t.manualSeed(7);
  const a = t.randn([5]).toArray();
  t.manualSeed(7);
  assert.deepEqual(t.randn([5]).toArray(), a);
});

test('*Like creation functions keep the shape and take dtype options', () => {
  const x = t.tensor([
    [1, 2, 3],
    [4, 5, 6],
  ]);
  const check = (y: t.Tensor, dtype: t.DType) => {
    assert.deepEqual(y.shape, [2, 3]);
    assert.equal(y.dtype, dtype);
  };
  check(t.zerosLike(x), 'float32');
  assert.deepEqual(t.zerosLike(x).sum().item(), 0);
  check(x.zerosLike({ dtype: 'int32' }), 'int32');
  check(t.onesLike(x, { dtype: 'float64' }), 'float64');
  assert.equal(t.onesLike(x).sum().item(), 6);
  const fl = t.fullLike(x, 9, { dtype: 'int16' });
  check(fl, 'int16');
  assert.deepEqual(fl.toArray(), [
    [9, 9, 9],
    [9, 9, 9],
  ]);
  check(x.fullLike(0.5), 'float32');
  const rl = t.randLike(x, { dtype: 'float64' });
  check(rl, 'float64');
  assert.equal(rl.ge(0).all().item(), 1);
  assert.equal(rl.lt(1).all().item(), 1);
  check(x.randnLike(), 'float32');
  check(t.randnLike(x, { dtype: 'bfloat16' }), 'bfloat16');
  const ril = t.randintLike(x, 5, { dtype: 'int64' });
  check(ril, 'int64');
  assert.ok(ril.ge(0).all().item() === 1 && ril.lt(5).all().item() === 1);
  const ril2 = x.randintLike(10, 12);
  check(ril2, 'float32');
  assert.ok(ril2.ge(10).all().item() === 1 && ril2.lt(12).all().item() === 1);
  check(t.emptyLike(x, { dtype: 'uint8' }), 'uint8');
  check(x.emptyLike(), 'float32');
  const rq = t.zerosLike(x, { requiresGrad: true });
  assert.equal(rq.requiresGrad, true);
});

test('to(dtype), to({ dtype }), float()/double()/long(), cpu()', () => {
  const x = t.tensor([1.7, -2.2]);
  const d = x.to('float64');
  assert.equal(d.dtype, 'float64');
  assertClose(d.toArray(), [1.7, -2.2]);
  const i = x.to({ dtype: 'int32' });
  assert.equal(i.dtype, 'int32');
  assert.deepEqual(i.toArray(), [1, -2]); // truncation toward zero
  assert.equal(x.to({ dtype: 'bool' }).dtype, 'bool');
  assert.equal(i.float().dtype, 'float32');
  assert.equal(x.double().dtype, 'float64');
  assert.equal(x.long().dtype, 'int64');
  assert.equal(x.to('cpu').device, 'cpu');
  assert.equal(x.cpu().device, 'cpu');
  assert.equal(x.to({ device: 'cpu', dtype: 'float16' }).dtype, 'float16');
  // Converting to the same dtype returns a tensor that aliases the input, like PyTorch;
  // copy: true forces new memory.
  const same = x.to('float32');
  same.mul_(2);
  assertClose(x.toArray(), [3.4, -4.4]);
  const copied = x.to({ dtype: 'float32', copy: true });
  copied.zero_();
  assertClose(x.toArray(), [3.4, -4.4]);
});

test('clone has independent memory; detach shares memory and drops grad', () => {
  const x = t.tensor([1, 2, 3], { requiresGrad: true });
  const c = x.clone();
  assert.equal(c.requiresGrad, true); // clone is differentiable
  const cd = c.detach();
  cd.zero_();
  assert.deepEqual(x.toArray(), [1, 2, 3], 'clone does not share memory with x');

  const d = x.detach();
  assert.equal(d.requiresGrad, false);
  assert.equal(d.gradFn, null);
  d.add_(10);
  assert.deepEqual(x.toArray(), [11, 12, 13], 'detach shares memory with x');

  const y = t.tensor([1, 2]);
  assert.equal(y.requiresGrad, false);
  const r = y.requiresGrad_();
  assert.equal(r, y, 'requiresGrad_ returns this');
  assert.equal(y.requiresGrad, true);
  y.requiresGrad_(false);
  assert.equal(y.requiresGrad, false);
  y.requiresGrad = true;
  assert.equal(y.requiresGrad, true);
  assert.equal(t.tensor([1], { requiresGrad: true }).requiresGrad, true);
});

test('fromBuffer aliases JS memory both ways', () => {
  const buf = new Float32Array([1, 2, 3, 4, 5, 6]);
  const x = t.fromBuffer(buf, [2, 3]);
  assert.equal(x.dtype, 'float32');
  assert.deepEqual(x.shape, [2, 3]);
  buf[0] = 100;
  assert.equal(x.select(0, 0).select(0, 0).item(), 100, 'a JS write is visible in the tensor');
  x.mul_(2);
  assert.deepEqual(Array.from(buf), [200, 4, 6, 8, 10, 12], 'an in-place op is visible in the JS array');
  x.select(0, 1).fill_(-1);
  assert.deepEqual(Array.from(buf), [200, 4, 6, -1, -1, -1]);

  // An ArrayBuffer with an explicit dtype, and other typed arrays.
  const ab = new ArrayBuffer(16);
  const asF64 = t.fromBuffer(ab, [2], 'float64');
  new Float64Array(ab)[1] = 2.5;
  assert.deepEqual(asF64.toArray(), [0, 2.5]);
  const ints = new Int32Array([1, 2, 3]);
  const xi = t.fromBuffer(ints, [3]);
  assert.equal(xi.dtype, 'int32');
  xi.add_(1);
  assert.deepEqual(Array.from(ints), [2, 3, 4]);
  // A typed array that is a window onto a larger buffer aliases just that window.
  const whole = new Float32Array([0, 1, 2, 3, 4, 5]);
  const win = t.fromBuffer(whole.subarray(2, 5), [3]);
  win.fill_(9);
  assert.deepEqual(Array.from(whole), [0, 1, 9, 9, 9, 5]);
});

test('a view of a fromBuffer tensor stays valid after the original is disposed and after GC', async () => {
  const make = () => {
    const buf = new Float32Array(1024).map((_, i) => i);
    const base = t.fromBuffer(buf, [32, 32]);
    const view = base.narrow(0, 30, 2); // rows 30 and 31
    base.dispose();
    return view;
  };
  const view = make();
  // The JS buffer is no longer referenced from JS: only the tensor keeps it alive.
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
    // Churn allocations so a freed buffer would likely be overwritten.
    const junk: Float64Array[] = [];
    for (let j = 0; j < 50; j++) junk.push(new Float64Array(1024).fill(-7));
    junk.length = 0;
  }
  assert.equal(view.isDisposed, false);
  const row = view.toArray() as number[][];
  assert.equal(row[0][0], 960);
  assert.equal(row[1][31], 1023);
  assert.equal(view.sum().item(), (960 + 1023) * 32);
  view.dispose();
});

test('data() resolves to the same values as toTypedArray()', async () => {
  for (const dtype of ['float32', 'float64', 'int64', 'int32', 'bool', 'float16'] as const) {
    const x = t
      .arange(6, { dtype: dtype === 'bool' ? 'int64' : dtype })
      .to(dtype)
      .reshape(2, 3);
    const sync = x.toTypedArray();
    const async_ = await x.data();
    assert.equal(async_.constructor, sync.constructor, dtype);
    assert.deepEqual(Array.from(async_ as Float32Array), Array.from(sync as Float32Array), dtype);
  }
  // Non-contiguous input comes out in logical (row-major) order.
  const tr = t.arange(6).reshape(2, 3).t();
  assert.deepEqual(Array.from(await tr.data(), Number), [0, 3, 1, 4, 2, 5]);
});

test('toString and inspect are PyTorch repr', () => {
  const x = t.tensor([
    [1, 2],
    [3, 4],
  ]);
  assert.equal(String(x), 'tensor([[1., 2.],\n        [3., 4.]])');
  assert.equal(
    t.tensor([1.5, 2], { dtype: 'float64' }).toString(),
    'tensor([1.5000, 2.0000], dtype=torch.float64)',
  );
  assert.equal(t.arange(3).toString(), 'tensor([0, 1, 2])');
  assert.equal(t.tensor([1, 2], { dtype: 'int32' }).toString(), 'tensor([1, 2], dtype=torch.int32)');
  assert.equal(t.tensor([true, false]).toString(), 'tensor([ True, False])');
  assert.equal(t.tensor(3).toString(), 'tensor(3.)');
  assert.equal(t.tensor([-1, 10]).toString(), 'tensor([-1., 10.])');
  assert.equal(t.tensor([1, 2], { requiresGrad: true }).toString(), 'tensor([1., 2.], requires_grad=True)');
  const g = t.tensor([1, 2], { requiresGrad: true });
  assert.equal(g.mul(g).toString(), 'tensor([1., 4.], grad_fn=<MulBackward0>)');
  const big = t.arange(2000).toString();
  // PyTorch's summarization: `,  ...` (the gap is an element of its own); more cases in
  // tensor-surface.test.ts against PyTorch's repr
  assert.equal(big, 'tensor([   0,    1,    2,  ..., 1997, 1998, 1999])');
  const d = t.ones([1]);
  d.dispose();
  assert.equal(d.toString(), 'tensor(<disposed>)');
  // util.inspect (console.log) uses the same text.
  assert.equal(inspect(x), String(x));
});

test('broadcasting in elementwise ops with tensors and scalars', () => {
  const a = t.tensor([[1], [2], [3]]); // 3x1
  const b = t.tensor([10, 20]); // 2
  const s = a.add(b);
  assert.deepEqual(s.shape, [3, 2]);
  assert.deepEqual(s.toArray(), [
    [11, 21],
    [12, 22],
    [13, 23],
  ]);
  assert.deepEqual(a.mul(b).toArray(), [
    [10, 20],
    [20, 40],
    [30, 60],
  ]);
  assert.deepEqual(b.sub(a).toArray(), [
    [9, 19],
    [8, 18],
    [7, 17],
  ]);
  assert.deepEqual(b.div(4).toArray(), [2.5, 5]);
  assert.deepEqual(b.add(1).toArray(), [11, 21]);
  assert.deepEqual(b.add(1, 3).toArray(), [13, 23]); // alpha
  assert.deepEqual(b.add(b, { alpha: 2 }).toArray(), [30, 60]);
  assert.deepEqual(b.pow(2).toArray(), [100, 400]);
  assert.deepEqual(b.sub(5).toArray(), [5, 15]);
  // Type promotion: int64 + float32 -> float32; int tensor + float scalar -> float32.
  const i = t.arange(3);
  assert.equal(i.add(t.ones([3])).dtype, 'float32');
  assert.equal(i.mul(0.5).dtype, 'float32');
  assert.deepEqual(i.mul(0.5).toArray(), [0, 0.5, 1]);
  assert.equal(i.add(1).dtype, 'int64');
  assert.deepEqual(t.div(t.tensor([7, -7]), 2, { roundingMode: 'floor' }).toArray(), [3, -4]);
  // Broadcast against a 0-d tensor.
  assert.deepEqual(b.mul(t.tensor(2)).toArray(), [20, 40]);
});

test('comparisons give bool tensors', () => {
  const a = t.tensor([1, 2, 3]);
  const b = t.tensor([3, 2, 1]);
  const cases: [t.Tensor, boolean[]][] = [
    [a.eq(b), [false, true, false]],
    [a.ne(b), [true, false, true]],
    [a.lt(b), [true, false, false]],
    [a.le(b), [true, true, false]],
    [a.gt(2), [false, false, true]],
    [a.ge(2), [false, true, true]],
    [a.eq(2), [false, true, false]],
  ];
  for (const [r, expected] of cases) {
    assert.equal(r.dtype, 'bool');
    assert.deepEqual(r.toArray(), expected);
  }
  assert.equal(a.equal(a.clone()), true);
  assert.equal(a.equal(b), false);
  assert.equal(a.allclose(a.add(1e-9)), true);
  assert.deepEqual(a.gt(1).logicalAnd(a.lt(3)).toArray(), [false, true, false]);
  assert.deepEqual(a.gt(1).logicalNot().toArray(), [true, false, false]);
});

test('method chaining', () => {
  const a = t.tensor([
    [1, -2],
    [3, -4],
  ]);
  assert.deepEqual(a.add(a).relu().mul(2).sum(1).toArray(), [4, 12]);
  assert.equal(a.abs().sqrt().pow(2).sum().item(), 10);
  assert.deepEqual(a.neg().exp().log().neg().toArray(), [
    [1, -2],
    [3, -4],
  ]);
  assertClose(a.sigmoid().mul(0).add(0.5).tanh().mean().item(), Math.tanh(0.5));
});

test('reductions with dims and keepdim', () => {
  const x = t.tensor([
    [1, 5, 3],
    [4, 2, 6],
  ]);
  assert.equal(x.sum().item(), 21);
  assert.deepEqual(x.sum(0).toArray(), [5, 7, 9]);
  assert.deepEqual(x.sum(1).toArray(), [9, 12]);
  assert.deepEqual(x.sum(1, true).shape, [2, 1]);
  assert.deepEqual(x.sum(-1, true).toArray(), [[9], [12]]);
  assert.equal(x.sum([0, 1]).item(), 21);
  assert.equal(x.sum({ dtype: 'float64' }).dtype, 'float64');
  assert.equal(t.sum(x).item(), 21);

  assert.equal(x.mean().item(), 3.5);
  assert.deepEqual(x.mean(0).toArray(), [2.5, 3.5, 4.5]);
  assert.deepEqual(x.mean(1, true).toArray(), [[3], [4]]);

  assert.equal(x.max().item(), 6);
  assert.equal(x.min().item(), 1);
  const [values, indices] = x.max(1);
  assert.deepEqual(values.toArray(), [5, 6]);
  assert.deepEqual(indices.toArray(), [1, 2]);
  assert.equal(indices.dtype, 'int64');
  const [vk, ik] = x.max(0, true);
  assert.deepEqual(vk.shape, [1, 3]);
  assert.deepEqual(vk.toArray(), [[4, 5, 6]]);
  assert.deepEqual(ik.toArray(), [[1, 0, 1]]);
  const [mv, mi] = t.min(x, 1);
  assert.deepEqual(mv.toArray(), [1, 2]);
  assert.deepEqual(mi.toArray(), [0, 1]);
  assert.deepEqual(x.max(t.full([2, 3], 4)).toArray(), [
    [4, 5, 4],
    [4, 4, 6],
  ]);

  assert.equal(x.argmax().item(), 5);
  assert.deepEqual(x.argmax(1).toArray(), [1, 2]);
  assert.deepEqual(x.argmax(0, true).toArray(), [[1, 0, 1]]);
  assert.deepEqual(x.argmin(1).toArray(), [0, 1]);

  // std / var: unbiased by default, like PyTorch.
  const v = t.tensor([1, 2, 3, 4]);
  assertClose(v.var().item(), 5 / 3);
  assertClose(t.variance(v).item(), 5 / 3);
  assertClose(v.var(false).item(), 1.25);
  assertClose(v.std().item(), Math.sqrt(5 / 3));
  assertClose(t.std(v, false).item(), Math.sqrt(1.25));
  assertClose(x.var(1).toArray(), [4, 4]);
  assertClose(t.variance(x, 0, true, true).toArray(), [[4.5, 4.5, 4.5]]);
  assertClose(x.std(0, { correction: 0, keepdim: true }).toArray(), [[1.5, 1.5, 1.5]]);
  assertClose(x.std(1).toArray(), [2, 2]);

  assertClose(t.tensor([3, 4]).norm().item(), 5);
  assertClose(t.tensor([3, -4]).norm(1).item(), 7);
  assertClose(t.norm(x).item(), Math.sqrt(91));
  assertClose(x.norm(2, 1).toArray(), [Math.sqrt(35), Math.sqrt(56)]);
  assertClose(x.norm(1, [0, 1]).item(), 21);
  assert.equal(x.norm(2, { dtype: 'float64' }).dtype, 'float64');

  assert.equal(x.prod().item(), 720);
  assert.equal(t.tensor([true, true]).all().item(), 1);
  assert.equal(t.tensor([false, true]).any().item(), 1);
});

test('norm(p, dim, keepdim) without a dtype, like torch.norm(x, 2, 0, True)', () => {
  const x = t.tensor([
    [1, 5, 3],
    [4, 2, 6],
  ]);
  const expected = [[Math.sqrt(17), Math.sqrt(29), Math.sqrt(45)]];
  assertClose(t.norm(x, 2, 0, true).toArray(), expected);
  assertClose(x.norm(2, 0, true).toArray(), expected);
  assertClose(x.norm(2, 1, false).toArray(), [Math.sqrt(35), Math.sqrt(56)]);
});

test('shape ops: reshape/view (arrays and varargs), permute, transpose, flatten, squeeze/unsqueeze, expand', () => {
  const x = t.arange(6);
  assert.deepEqual(x.reshape([2, 3]).toArray(), [
    [0, 1, 2],
    [3, 4, 5],
  ]);
  assert.deepEqual(x.reshape(3, 2).shape, [3, 2]);
  assert.deepEqual(x.reshape(-1, 2).shape, [3, 2]);
  assert.deepEqual(t.reshape(x, [6, 1]).shape, [6, 1]);
  const v = x.view(2, 3);
  assert.deepEqual(v.shape, [2, 3]);
  assert.deepEqual(x.view([3, -1]).shape, [3, 2]);
  v.select(0, 0).select(0, 0).fill_(42);
  assert.equal(x.select(0, 0).item(), 42, 'view shares memory');
  x.select(0, 0).fill_(0);

  const y = t.arange(24).view(2, 3, 4);
  const p = y.permute(2, 0, 1);
  assert.deepEqual(p.shape, [4, 2, 3]);
  assert.deepEqual(y.permute([1, 2, 0]).shape, [3, 4, 2]);
  assert.equal(
    p.select(0, 1).select(0, 1).select(0, 2).item(),
    y.select(0, 1).select(0, 2).select(0, 1).item(),
  );
  assert.deepEqual(y.transpose(0, 2).shape, [4, 3, 2]);
  assert.deepEqual(y.transpose(-1, -2).shape, [2, 4, 3]);
  assert.deepEqual(
    t
      .tensor([
        [1, 2],
        [3, 4],
      ])
      .t()
      .toArray(),
    [
      [1, 3],
      [2, 4],
    ],
  );
  assert.deepEqual(y.flatten().shape, [24]);
  assert.deepEqual(y.flatten(1).shape, [2, 12]);
  assert.deepEqual(y.flatten(0, 1).shape, [6, 4]);

  const s = t.zeros([1, 3, 1, 2]);
  assert.deepEqual(s.squeeze().shape, [3, 2]);
  assert.deepEqual(s.squeeze(0).shape, [3, 1, 2]);
  assert.deepEqual(s.squeeze(1).shape, [1, 3, 1, 2], 'squeezing a non-1 dim is a no-op');
  assert.deepEqual(s.squeeze([0, 2]).shape, [3, 2]);
  assert.deepEqual(s.unsqueeze(0).shape, [1, 1, 3, 1, 2]);
  assert.deepEqual(s.unsqueeze(-1).shape, [1, 3, 1, 2, 1]);

  const e = t.tensor([[1], [2]]).expand(2, 3);
  assert.deepEqual(e.shape, [2, 3]);
  assert.deepEqual(e.strides, [1, 0]);
  assert.deepEqual(e.toArray(), [
    [1, 1, 1],
    [2, 2, 2],
  ]);
  assert.deepEqual(t.tensor([1, 2]).expand([3, -1]).shape, [3, 2]);
  assert.deepEqual(
    t
      .tensor([1, 2])
      .expandAs(t.zeros([2, 2]))
      .toArray(),
    [
      [1, 2],
      [1, 2],
    ],
  );
});

test('cat, stack, split, chunk, narrow, select', () => {
  const a = t.tensor([[1, 2]]);
  const b = t.tensor([[3, 4]]);
  assert.deepEqual(t.cat([a, b]).toArray(), [
    [1, 2],
    [3, 4],
  ]);
  assert.deepEqual(t.cat([a, b], 1).toArray(), [[1, 2, 3, 4]]);
  assert.deepEqual(t.cat([a, b], -1).shape, [1, 4]);
  assert.deepEqual(t.stack([a, b]).shape, [2, 1, 2]);
  assert.deepEqual(t.stack([a, b], 2).toArray(), [
    [
      [1, 3],
      [2, 4],
    ],
  ]);

  const x = t.arange(10);
  const parts = x.split(4);
  assert.equal(parts.length, 3);
  assert.deepEqual(
    parts.map((p) => p.toArray()),
    [
      [0, 1, 2, 3],
      [4, 5, 6, 7],
      [8, 9],
    ],
  );
  assert.deepEqual(
    x.split([2, 8]).map((p) => p.shape[0]),
    [2, 8],
  );
  const chunks = x.chunk(3);
  assert.deepEqual(
    chunks.map((c) => c.numel()),
    [4, 4, 2],
  );
  assert.deepEqual(
    t
      .arange(6)
      .view(2, 3)
      .chunk(3, 1)
      .map((c) => c.toArray()),
    [
      [[0], [3]],
      [[1], [4]],
      [[2], [5]],
    ],
  );

  const m = t.arange(12).view(3, 4);
  assert.deepEqual(m.narrow(1, 1, 2).toArray(), [
    [1, 2],
    [5, 6],
    [9, 10],
  ]);
  assert.deepEqual(m.narrow(0, 2, 1).toArray(), [[8, 9, 10, 11]]);
  assert.deepEqual(m.select(0, 1).toArray(), [4, 5, 6, 7]);
  assert.deepEqual(m.select(1, -1).toArray(), [3, 7, 11]);
  // select/narrow are views.
  m.select(0, 0).fill_(-1);
  assert.deepEqual(m.select(0, 0).toArray(), [-1, -1, -1, -1]);
});

test('indexSelect, gather, scatter, where, maskedFill', () => {
  const m = t.tensor([
    [1, 2, 3],
    [4, 5, 6],
  ]);
  const idx = t.tensor([2, 0], { dtype: 'int64' });
  assert.deepEqual(m.indexSelect(1, idx).toArray(), [
    [3, 1],
    [6, 4],
  ]);
  assert.deepEqual(t.indexSelect(m, 0, t.tensor([1, 1, 0], { dtype: 'int64' })).toArray(), [
    [4, 5, 6],
    [4, 5, 6],
    [1, 2, 3],
  ]);

  const gi = t.tensor(
    [
      [0, 0],
      [2, 1],
    ],
    { dtype: 'int64' },
  );
  assert.deepEqual(m.gather(1, gi).toArray(), [
    [1, 1],
    [6, 5],
  ]);

  const src = t.tensor([
    [10, 20],
    [30, 40],
  ]);
  const si = t.tensor(
    [
      [2, 0],
      [1, 2],
    ],
    { dtype: 'int64' },
  );
  assert.deepEqual(t.zeros([2, 3]).scatter(1, si, src, { reduce: 'add' }).toArray(), [
    [20, 0, 10],
    [0, 30, 40],
  ]);
  const inPlace = t.zeros([2, 3]);
  assert.equal(inPlace.scatter_(1, si, src), inPlace);
  assert.deepEqual(inPlace.toArray(), [
    [20, 0, 10],
    [0, 30, 40],
  ]);
  assert.deepEqual(t.zeros([2, 3]).scatter(1, si, 7).toArray(), [
    [7, 0, 7],
    [0, 7, 7],
  ]);
  assert.deepEqual(t.zeros([2, 3]).scatterAdd(1, si, src).toArray(), [
    [20, 0, 10],
    [0, 30, 40],
  ]);

  const cond = m.gt(3);
  assert.deepEqual(t.where(cond, m, t.zerosLike(m)).toArray(), [
    [0, 0, 0],
    [4, 5, 6],
  ]);
  assert.deepEqual(t.where(cond, m, -1).toArray(), [
    [-1, -1, -1],
    [4, 5, 6],
  ]);
  assert.deepEqual(t.where(cond, 1, 0).toArray(), [
    [0, 0, 0],
    [1, 1, 1],
  ]);
  const nz = t.where(t.tensor([0, 3, 0, 5]).ne(0));
  assert.equal(nz.length, 1);
  assert.deepEqual(nz[0].toArray(), [1, 3]);

  assert.deepEqual(m.maskedFill(m.remainder(2).eq(0), 0).toArray(), [
    [1, 0, 3],
    [0, 5, 0],
  ]);
  assert.deepEqual(m.maskedFill(t.tensor([true, false, false]), -9).toArray(), [
    [-9, 2, 3],
    [-9, 5, 6],
  ]);
});

test('scatter(dim, index, src), scatter_(dim, index, value) and argsort() without options', () => {
  const src = t.tensor([
    [10, 20],
    [30, 40],
  ]);
  const si = t.tensor(
    [
      [2, 0],
      [1, 2],
    ],
    { dtype: 'int64' },
  );
  // torch: torch.zeros(2, 3).scatter(1, si, src)
  assert.deepEqual(t.zeros([2, 3]).scatter(1, si, src).toArray(), [
    [20, 0, 10],
    [0, 30, 40],
  ]);
  assert.deepEqual(t.scatter(t.zeros([2, 3]), 1, si, src).toArray(), [
    [20, 0, 10],
    [0, 30, 40],
  ]);
  // torch: torch.zeros(2, 3).scatter_(1, si, 7)
  const z = t.zeros([2, 3]);
  assert.equal(z.scatter_(1, si, 7), z);
  assert.deepEqual(z.toArray(), [
    [7, 0, 7],
    [0, 7, 7],
  ]);
  // torch: torch.tensor([3, 1, 2]).argsort()
  assert.deepEqual(t.tensor([3, 1, 2]).argsort().toArray(), [1, 2, 0]);
  assert.deepEqual(t.tensor([3, 1, 2]).argsort(0, true).toArray(), [0, 2, 1]);
});

test('matmul, mm, addmm, linear, topk', () => {
  const a = t.tensor([
    [1, 2],
    [3, 4],
  ]);
  const b = t.tensor([
    [5, 6],
    [7, 8],
  ]);
  const ab = [
    [19, 22],
    [43, 50],
  ];
  assert.deepEqual(a.matmul(b).toArray(), ab);
  assert.deepEqual(t.matmul(a, b).toArray(), ab);
  assert.deepEqual(a.mm(b).toArray(), ab);
  // Batched and vector matmul.
  assert.deepEqual(t.ones([3, 2, 4]).matmul(t.ones([4, 5])).shape, [3, 2, 5]);
  assert.deepEqual(a.matmul(t.tensor([1, 1])).toArray(), [3, 7]);
  assert.equal(
    t
      .tensor([1, 2])
      .matmul(t.tensor([3, 4]))
      .item(),
    11,
  );

  const bias = t.tensor([1, -1]);
  assert.deepEqual(bias.addmm(a, b).toArray(), [
    [20, 21],
    [44, 49],
  ]);
  assert.deepEqual(t.addmm(bias, a, b, { beta: 0, alpha: 2 }).toArray(), [
    [38, 44],
    [86, 100],
  ]);

  // linear(x, W, b) = x W^T + b
  const x = t.tensor([[1, 2, 3]]);
  const w = t.tensor([
    [1, 0, 0],
    [0, 1, 1],
  ]);
  assert.deepEqual(t.linear(x, w).toArray(), [[1, 5]]);
  assert.deepEqual(t.linear(x, w, t.tensor([10, 20])).toArray(), [[11, 25]]);

  const v = t.tensor([3, 1, 4, 1, 5, 9, 2, 6]);
  const [vals, idx] = v.topk(3);
  assert.deepEqual(vals.toArray(), [9, 6, 5]);
  assert.deepEqual(idx.toArray(), [5, 7, 4]);
  const [small] = t.topk(v, 2, 0, false);
  assert.deepEqual(small.toArray(), [1, 1]);
  const [rowTop, rowIdx] = t
    .tensor([
      [1, 9, 3],
      [8, 2, 7],
    ])
    .topk(1, 1);
  assert.deepEqual(rowTop.toArray(), [[9], [8]]);
  assert.deepEqual(rowIdx.toArray(), [[1], [0]]);
});

test('in-place ops return the same JS object and mutate it', () => {
  const x = t.tensor([1, 2, 3]);
  const r = x.add_(1);
  assert.equal(r, x);
  assert.deepEqual(x.toArray(), [2, 3, 4]);
  assert.equal(x.mul_(2), x);
  assert.deepEqual(x.toArray(), [4, 6, 8]);
  assert.equal(x.sub_(t.tensor([1, 1, 1])), x);
  assert.deepEqual(x.toArray(), [3, 5, 7]);
  assert.equal(x.div_(2), x);
  assertClose(x.toArray(), [1.5, 2.5, 3.5]);
  assert.equal(x.clamp_(2, 3), x);
  assertClose(x.toArray(), [2, 2.5, 3]);
  assert.equal(x.zero_(), x);
  assert.deepEqual(x.toArray(), [0, 0, 0]);
  assert.equal(x.fill_(5), x);
  assert.equal(t.add_(x, 1), x);
  assert.deepEqual(x.toArray(), [6, 6, 6]);
  const y = t.zeros([3]);
  assert.equal(y.copy_(x), y);
  assert.deepEqual(y.toArray(), [6, 6, 6]);
  // An in-place op on a view writes through to the base.
  const m = t.zeros([2, 2]);
  m.select(1, 0).add_(3);
  assert.deepEqual(m.toArray(), [
    [3, 0],
    [3, 0],
  ]);
});

test('ops.call: the generic dispatcher call with an overload name', () => {
  const a = t.tensor([
    [1, 2],
    [3, 4],
  ]);
  const sq = t.ops.call('aten::mul.Tensor', a, a) as t.Tensor;
  assert.ok(sq instanceof t.Tensor);
  assert.deepEqual(sq.toArray(), [
    [1, 4],
    [9, 16],
  ]);
  // Positional args in schema order, including kwarg-only alpha.
  assert.deepEqual((t.ops.call('aten::add.Tensor', a, a, 10) as t.Tensor).toArray(), [
    [11, 22],
    [33, 44],
  ]);
  assert.deepEqual((t.ops.call('aten::add.Scalar', a, 1) as t.Tensor).toArray(), [
    [2, 3],
    [4, 5],
  ]);
  // No overload name: the default overload.
  assert.deepEqual((t.ops.call('aten::relu', t.tensor([-1, 2])) as t.Tensor).toArray(), [0, 2]);
  // Multiple returns come back as an array of tensors.
  const [vals, idx] = t.ops.call('aten::max.dim', a, 1) as t.Tensor[];
  assert.deepEqual(vals.toArray(), [2, 4]);
  assert.deepEqual(idx.toArray(), [1, 1]);
  // Tensor[] arguments and results.
  assert.deepEqual((t.ops.call('aten::cat', [a, a], 1) as t.Tensor).shape, [2, 4]);
  const parts = t.ops.call('aten::unbind.int', a, 0) as t.Tensor[];
  assert.equal(parts.length, 2);
  assert.deepEqual(parts[1].toArray(), [3, 4]);
  // dtype strings are converted for ScalarType arguments.
  assert.equal((t.ops.call('aten::sum', a, 'float64') as t.Tensor).dtype, 'float64');
  // Non-tensor results.
  assert.equal(t.ops.call('aten::equal', a, a.clone()), true);
  // An in-place op returns the very tensor it mutated.
  const z = t.zeros([2]);
  assert.equal(t.ops.call('aten::add_.Scalar', z, 5), z);
  assert.deepEqual(z.toArray(), [5, 5]);
  // ops.* exposes the typed wrappers too.
  assert.deepEqual(t.ops.relu(t.tensor([-3, 3])).toArray(), [0, 3]);
});

test('cuda is not available here; thread count round-trips', () => {
  assert.equal(t.cuda.isAvailable(), false);
  assert.equal(t.cuda.deviceCount(), 0);
  const info = t.buildInfo();
  assert.match(info.torchVersion, /^\d+\.\d+/);
  const before = t.getNumThreads();
  assert.ok(Number.isInteger(before) && before >= 1, `getNumThreads() = ${before}`);
  try {
    t.setNumThreads(1);
    assert.equal(t.getNumThreads(), 1);
    t.setNumThreads(2);
    assert.equal(t.getNumThreads(), 2);
    // Ops still work with the new pool size.
    assert.equal(
      t
        .ones([64, 64])
        .matmul(t.ones([64, 64]))
        .sum()
        .item(),
      64 ** 3,
    );
  } finally {
    t.setNumThreads(before);
  }
  assert.equal(t.getNumThreads(), before);
});

test('autograd basics through the Tensor API', () => {
  const x = t.tensor([1, 2, 3], { requiresGrad: true });
  const y = x.mul(x).sum();
  assert.equal(y.requiresGrad, true);
  assert.equal(y.gradFn, 'SumBackward0');
  const before = x.grad;
  assert.equal(before, null);
  y.backward();
  assert.deepEqual(x.grad?.toArray(), [2, 4, 6]);
  x.grad = null;
  assert.equal(x.grad, null);
  const z = t.noGrad(() => x.mul(2));
  assert.equal(z.requiresGrad, false);
  assert.equal(t.isGradEnabled(), true);
});

test('a -0 scalar keeps its sign, as Python passes -0.0 (a double, not the integer 0)', () => {
  assert.ok(Object.is(t.full([], -0).item(), -0));
  assert.ok(Object.is(t.full([], 0).item(), 0));
  // 0 * -0 is -0 only when the scalar is a signed double.
  assert.ok(Object.is(t.tensor([0]).mul(-0).item(), -0));
  assert.ok(Object.is(t.tensor([5]).clamp(-0, -0).item(), -0));
});
