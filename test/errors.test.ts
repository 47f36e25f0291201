// Bad calls give clear errors (architecture §4): libtorch failures are TorchErrors naming the op,
// argument problems are TypeErrors / RangeErrors naming the op and the argument, nothing
// aborts the process, and nothing leaks. Each bad call runs inside tidy() so that the
// final test can check that the live tensor count came back to where it started.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as t from '../src/index.ts';

type ErrorClass = typeof t.TorchError | TypeErrorConstructor | RangeErrorConstructor;

const baseline = t.memory().tensors;

/**
 * Asserts that `fn` throws an instance of `cls` (exactly that class, not a look-alike)
 * whose message matches every pattern; for a TorchError, also that `op` names `opPattern`.
 */
function bad(fn: () => unknown, cls: ErrorClass, patterns: RegExp[], opPattern?: RegExp): void {
  t.tidy(() => {
    assert.throws(fn, (e: unknown) => {
      assert.ok(e instanceof Error, `expected an Error, got ${String(e)}`);
      assert.equal(
        e.constructor,
        cls,
        `expected a ${cls.name}, got a ${e.constructor.name}: ${e.message.slice(0, 300)}`,
      );
      assert.equal(e.name, cls.name);
      for (const p of patterns) assert.match(e.message, p);
      if (cls === t.TorchError) {
        const te = e as t.TorchError;
        assert.equal(typeof te.op, 'string');
        assert.ok(te.detail.length > 0, 'TorchError.detail is empty');
        if (opPattern) assert.match(te.op, opPattern);
        // The message starts with the op, then libtorch's own words, without the C++ backtrace.
        assert.ok(te.message.startsWith(`${te.op}: `), te.message.slice(0, 200));
        assert.doesNotMatch(te.message, /Exception raised from/);
      }
      return true;
    });
  });
}

test('add with mismatched shapes', () => {
  bad(
    () => t.ones([2, 3]).add(t.ones([4])),
    t.TorchError,
    [/aten::add/, /size of tensor a \(3\) must match the size of tensor b \(4\)/],
    /^aten::add\.Tensor$/,
  );
});

test('matmul with mismatched inner dimensions', () => {
  bad(
    () => t.ones([2, 3]).matmul(t.ones([4, 5])),
    t.TorchError,
    [/aten::matmul/, /cannot be multiplied \(2x3 and 4x5\)/],
    /^aten::matmul$/,
  );
  bad(() => t.linear(t.ones([2, 3]), t.ones([4, 5])), t.TorchError, [/aten::linear/, /cannot be multiplied/]);
});

test('conv2d with a weight whose in-channels do not match the input', () => {
  bad(
    () => t.conv2d(t.ones([1, 3, 5, 5]), t.ones([2, 4, 3, 3])),
    t.TorchError,
    [/aten::conv2d/, /weight of size \[2, 4, 3, 3\]/, /to have 4 channels, but got 3 channels/],
    /^aten::conv2d/,
  );
});

test('wrong dtypes: conv2d with mixed dtypes, softmax on int64, cross entropy with a float class-index target', () => {
  bad(() => t.conv2d(t.ones([1, 3, 5, 5]), t.ones([2, 3, 3, 3], { dtype: 'int64' })), t.TorchError, [
    /aten::conv2d/,
    /expected scalar type Float but found Long/,
  ]);
  bad(
    () => t.ones([2, 3], { dtype: 'int64' }).softmax(1),
    t.TorchError,
    [/aten::softmax/, /not implemented for 'Long'/],
    /^aten::softmax/,
  );
  bad(
    () => t.crossEntropy(t.randn([4, 3]), t.tensor([0, 2, 1, 1])), // float32 class indices
    t.TorchError,
    [/aten::cross_entropy_loss/, /target dtype/, /Long/, /Float/],
    /^aten::cross_entropy_loss$/,
  );
  bad(() => t.ones([2, 3]).gather(1, t.zeros([2, 1])), t.TorchError, [
    /aten::gather/,
    /Expected dtype int32\/int64 for index/,
  ]);
});

test('out-of-range dims in sum, select and size()', () => {
  const x = () => t.ones([2, 3]);
  bad(() => x().sum(5), t.TorchError, [
    /aten::sum/,
    /Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)/,
  ]);
  bad(() => x().sum([0, -3]), t.TorchError, [/aten::sum/, /Dimension out of range/, /got -3/]);
  bad(() => x().select(4, 0), t.TorchError, [/aten::select/, /Dimension out of range/, /got 4/]);
  bad(() => x().size(3), RangeError, [/size\(\)/, /dim 3 is out of range/, /2 dimensions/]);
  bad(() => x().size(-3), RangeError, [/size\(\)/, /dim -3 is out of range/]);
  bad(() => x().transpose(0, 2), t.TorchError, [/aten::transpose/, /Dimension out of range/]);
});

test('index out of range in select and indexSelect', () => {
  bad(() => t.ones([2, 3]).select(0, 7), t.TorchError, [
    /aten::select/,
    /index 7 out of range for tensor of size \[2, 3\] at dimension 0/,
  ]);
  bad(
    () => t.ones([2, 3]).indexSelect(1, t.tensor([0, 3], { dtype: 'int64' })),
    t.TorchError,
    [/aten::index_select/, /out of (range|DATA bounds)/],
    /^aten::index_select$/,
  );
  bad(() => t.ones([2, 3]).indexSelect(0, t.tensor([5], { dtype: 'int64' })), t.TorchError, [
    /aten::index_select/,
    /index out of range/,
  ]);
  bad(() => t.ones([2, 3]).narrow(1, 2, 5), t.TorchError, [
    /aten::narrow/,
    /start \(2\) \+ length \(5\) exceeds dimension size \(3\)/,
  ]);
});

test("a CUDA device when libtorch has no CUDA: libtorch's error, named by the op", () => {
  bad(() => t.ones([2]).to('cuda:0'), t.TorchError, [/aten::to/, /CUDA/i], /^aten::to/);
  bad(() => t.ones([2]).cuda(), t.TorchError, [/aten::to/, /CUDA/i]);
  bad(() => t.zeros([2], { device: 'cuda:0' }), t.TorchError, [/aten::zeros/, /CUDA/i], /^aten::zeros$/);
  bad(() => t.tensor([1, 2], { device: 'cuda' }), t.TorchError, [/tensor\(\)/, /CUDA/i]);
});

// A malformed device string makes libtorch throw while the arguments are converted. If
// that escaped the addon it would abort the process, so this runs in a child process and
// asserts that the child survived, got TorchErrors and could still compute afterwards.
test('a nonsense device string gives a TorchError and does not abort the process', () => {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const index = fileURLToPath(new URL('../src/index.ts', import.meta.url));
  const child = `
    const t = await import(${JSON.stringify(index)});
    const out = [];
    const attempts = {
      to: () => t.ones([2]).to('nonsense'),
      toOpts: () => t.ones([2]).to({ device: 'nonsense' }),
      zeros: () => t.zeros([2], { device: 'nonsense' }),
      tensor: () => t.tensor([1, 2], { device: 'nonsense' }),
      badIndex: () => t.ones([2]).to('cuda:-5'),
      call: () => t.ops.call('aten::to.device', t.ones([2]), 'nonsense', 'float32'),
    };
    for (const [name, fn] of Object.entries(attempts)) {
      try { fn(); out.push({ name, threw: false }); }
      catch (e) { out.push({ name, threw: true, cls: e.constructor.name, op: e.op ?? null, message: e.message.slice(0, 400) }); }
    }
    const healthy = t.tensor([[1, 2], [3, 4]]).matmul(t.tensor([[1], [1]])).toArray();
    process.stdout.write(JSON.stringify({ out, healthy }));
  `;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', child], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(
    r.status,
    0,
    `the child process died (status ${r.status}, signal ${r.signal}):\n${r.stderr.split('\n').slice(0, 4).join('\n')}`,
  );
  const { out, healthy } = JSON.parse(r.stdout) as {
    out: { name: string; threw: boolean; cls?: string; op?: string | null; message?: string }[];
    healthy: number[][];
  };
  assert.deepEqual(healthy, [[3], [7]]);
  const expectedOp: Record<string, RegExp> = {
    to: /aten::to/,
    toOpts: /aten::to/,
    zeros: /aten::zeros/,
    tensor: /tensor\(\)/,
    badIndex: /aten::to/,
    call: /aten::to\.device/,
  };
  for (const o of out) {
    assert.ok(o.threw, `${o.name}: no error`);
    assert.equal(o.cls, 'TorchError', `${o.name}: ${o.cls}: ${o.message}`);
    assert.match(o.message ?? '', expectedOp[o.name], o.name);
    assert.match(o.message ?? '', o.name === 'badIndex' ? /cuda:-5/ : /nonsense/, o.name);
  }
});

test('an unknown dtype string is a TypeError naming the op and the dtype', () => {
  bad(() => t.zeros([2], { dtype: 'float128' as t.DType }), TypeError, [/zeros/, /unknown dtype 'float128'/]);
  bad(() => t.ones([2]).to({ dtype: 'float128' as t.DType }), TypeError, [/to/, /unknown dtype 'float128'/]);
  bad(() => t.tensor([1], { dtype: 'float128' as t.DType }), TypeError, [/tensor\(\)/, /unknown dtype/]);
  bad(() => t.ones([2]).sum({ dtype: 'complex' as t.DType }), TypeError, [/sum/, /unknown dtype 'complex'/]);
  bad(() => t.ones([2]).contiguous('weird' as 'channelsLast'), TypeError, [
    /contiguous/,
    /unknown memory format 'weird'/,
  ]);
});

test('using a disposed tensor, as self and as an argument', () => {
  bad(
    () => {
      const x = t.ones([2]);
      x.dispose();
      return x.add(1);
    },
    TypeError,
    [/aten::add/, /'self'/, /disposed/],
  );
  bad(
    () => {
      const x = t.ones([2]);
      x.dispose();
      return t.ones([2]).add(x);
    },
    TypeError,
    [/aten::add\.Tensor/, /'other'/, /disposed/],
  );
  bad(
    () => {
      const x = t.ones([2]);
      x.dispose();
      return t.cat([t.ones([2]), x]);
    },
    TypeError,
    [/aten::cat/, /'tensors'/, /disposed/],
  );
  const x = t.ones([2]);
  x.dispose();
  assert.equal(x.isDisposed, true);
  bad(() => x.shape, TypeError, [/shape/, /disposed/]);
  bad(() => x.toArray(), TypeError, [/toTypedArray\(\)/, /disposed/]);
  bad(() => x.item(), TypeError, [/item\(\)/, /disposed/]);
  bad(() => x.backward(), TypeError, [/backward/, /disposed/]);
});

test('wrong JS argument types: string for a Tensor, number for a list, objects of the wrong shape', () => {
  bad(() => t.matmul(t.ones([2, 2]), 'abc' as unknown as t.Tensor), TypeError, [
    /aten::matmul/,
    /'other'/,
    /expected a Tensor, got string/,
  ]);
  bad(() => t.ones([2]).add('abc' as unknown as number), TypeError, [
    /add\(\)/,
    /no overload accepts \(Tensor, string\)/,
  ]);
  // t.zeros(3) is PyTorch's varargs size (test/porting-args.test.ts); a string is not.
  bad(() => t.zeros('3' as unknown as number[]), TypeError, [
    /aten::zeros/,
    /'size' \(int\[\]\)/,
    /got a string/,
  ]);
  bad(() => t.ones([2, 3]).reshape(...([6, 'x'] as unknown as number[])), TypeError, [
    /aten::reshape/,
    /'shape'/,
  ]);
  bad(() => t.cat({ length: 2 } as unknown as t.Tensor[]), TypeError, [
    /aten::cat/,
    /'tensors'/,
    /expected Tensor\[\], got object/,
  ]);
  bad(() => t.zeros({ a: 1 } as unknown as number[]), TypeError, [/aten::zeros/, /'size'/, /got an object/]);
  bad(() => t.tensor({ a: 1 } as unknown as number[]), TypeError, [
    /tensor\(\)/,
    /expected numbers or booleans/,
  ]);
  bad(() => t.tensor([1, 'x'] as unknown as number[]), TypeError, [/tensor\(\)/, /got string at \[1\]/]);
  bad(() => t.ones([2, 3]).sum(1.5), TypeError, [/aten::sum/, /'dim'/, /non-integer/]);
  bad(() => t.ops.call('aten::add.Tensor', t.ones([2]), 'x'), TypeError, [
    /aten::add\.Tensor/,
    /'other' \(Tensor\) got a string/,
  ]);
  bad(() => t.ops.call('aten::add.Tensor', t.ones([2]), t.ones([2]), 1, 'extra'), TypeError, [
    /aten::add\.Tensor/,
    /takes 3 arguments, got 4/,
  ]);
  bad(() => t.ops.call('aten::add.Tensor', t.ones([2])), TypeError, [
    /aten::add\.Tensor/,
    /'other'/,
    /required/,
  ]);
});

test('tensor() from a ragged nested array', () => {
  bad(() => t.tensor([[1, 2], [3]]), TypeError, [
    /tensor\(\)/,
    /ragged nested array at \[1\]/,
    /expected length 2/,
  ]);
  bad(() => t.tensor([[1, 2], 3] as unknown as number[][]), TypeError, [/tensor\(\)/, /ragged/]);
  bad(() => t.tensor([1, [2, 3]] as unknown as number[]), TypeError, [/tensor\(\)/, /ragged/]);
  bad(() => t.tensor([1, true]), TypeError, [/tensor\(\)/, /mixed booleans and numbers/]);
});

test('negative shapes', () => {
  bad(() => t.zeros([-1, 2]), t.TorchError, [/aten::zeros/, /non-negative/], /^aten::zeros$/);
  bad(() => t.empty([2, -3]), t.TorchError, [/aten::empty/, /negative dimension -3/]);
  bad(() => t.tensor(new Float32Array(2), { shape: [-1, -2] }), TypeError, [
    /tensor\(\)/,
    /negative dimension/,
  ]);
  bad(() => t.fromBuffer(new Float32Array(4), [-1, 4]), TypeError, [/fromBuffer\(\)/, /negative dimension/]);
});

test('fromBuffer and tensor() with too little data for the shape', () => {
  bad(() => t.fromBuffer(new Float32Array(3), [2, 2]), TypeError, [
    /fromBuffer\(\)/,
    /buffer has 12 bytes, shape needs 16/,
  ]);
  bad(() => t.fromBuffer(new ArrayBuffer(4), [2], 'float32'), TypeError, [
    /fromBuffer\(\)/,
    /buffer has 4 bytes, shape needs 8/,
  ]);
  bad(() => t.fromBuffer(new ArrayBuffer(16), [4]), TypeError, [/fromBuffer\(\)/, /dtype/]);
  bad(() => t.tensor(new Float32Array(3), { shape: [2, 2] }), TypeError, [
    /tensor\(\)/,
    /data has 12 bytes, shape needs 16/,
  ]);
});

test('ops.call with an unknown op and with a malformed name', () => {
  bad(() => t.ops.call('aten::frobnicate'), TypeError, [/ops\.call\(\)/, /no operator 'aten::frobnicate'/]);
  bad(() => t.ops.call('aten::add.NoSuchOverload', t.ones([1]), t.ones([1])), TypeError, [
    /ops\.call\(\)/,
    /no operator 'aten::add\.NoSuchOverload'/,
  ]);
  bad(() => t.ops.call('add tensor'), TypeError, [/ops\.call\(\)/, /'add tensor' is not an op name/]);
  bad(() => t.ops.call('aten::'), TypeError, [/ops\.call\(\)/, /not an op name/]);
});

test('view on an incompatible shape, reshape to a wrong numel', () => {
  bad(
    () => t.ones([2, 3]).transpose(0, 1).view(6),
    t.TorchError,
    [/aten::view/, /view size is not compatible with input tensor's size and stride/],
    /^aten::view$/,
  );
  bad(() => t.ones([2, 3]).view(4, 2), t.TorchError, [
    /aten::view/,
    /shape '\[4, 2\]' is invalid for input of size 6/,
  ]);
  bad(
    () => t.ones([2, 3]).reshape(7),
    t.TorchError,
    [/aten::reshape/, /shape '\[7\]' is invalid for input of size 6/],
    /^aten::reshape$/,
  );
  bad(() => t.ones([2, 3]).view(-1, -1), t.TorchError, [/aten::view/, /only one dimension can be inferred/]);
  bad(() => t.ones([2, 3]).expand(4, 3), t.TorchError, [/aten::expand/, /expanded size of the tensor \(4\)/]);
});

test('backward on a non-scalar without a gradient; backward twice without retainGraph', () => {
  bad(() => t.ones([2], { requiresGrad: true }).mul(2).backward(), t.TorchError, [
    /backward/,
    /grad can be implicitly created only for scalar outputs/,
  ]);
  bad(() => t.ones([2]).sum().backward(), t.TorchError, [
    /backward/,
    /does not require grad and does not have a grad_fn/,
  ]);
  bad(
    () => {
      const x = t.ones([2], { requiresGrad: true });
      const y = x.exp().sum();
      y.backward();
      y.backward();
    },
    t.TorchError,
    [/backward/, /backward through the graph a second time/],
  );
  // With retainGraph the second call works and accumulates.
  t.tidy(() => {
    const x = t.ones([2], { requiresGrad: true });
    const y = x.mul(3).sum();
    y.backward(undefined, { retainGraph: true });
    y.backward();
    assert.deepEqual(x.grad?.toArray(), [6, 6]);
  });
});

test('setNumThreads(0) and other bad numbers', () => {
  const before = t.getNumThreads();
  bad(() => t.setNumThreads(0), TypeError, [/setNumThreads\(\)/, /positive integer, got 0/]);
  bad(() => t.setNumThreads(-2), TypeError, [/setNumThreads\(\)/, /positive integer/]);
  bad(() => t.setNumThreads(1.5), TypeError, [/setNumThreads\(\)/, /positive integer/]);
  assert.equal(t.getNumThreads(), before);
  bad(
    () => t.crossEntropy(t.randn([2, 3]), t.tensor([0, 1], { dtype: 'int64' }), { labelSmoothing: 2 }),
    RangeError,
    [/crossEntropy\(\)/, /labelSmoothing must be in \[0, 1\], got 2/],
  );
  bad(
    () =>
      t.crossEntropy(t.randn([2, 3]), t.tensor([0, 1], { dtype: 'int64' }), { reduction: 'avg' as 'mean' }),
    TypeError,
    [/reduction/, /'avg'/],
  );
});

test('requiresGrad on an integer tensor', () => {
  bad(() => t.tensor([1, 2], { dtype: 'int64', requiresGrad: true }), TypeError, [
    /tensor\(\)/,
    /only floating point and complex tensors can require gradients/,
    /int64/,
  ]);
  bad(() => t.zeros([2], { dtype: 'int32' }).requiresGrad_(), t.TorchError, [
    /requiresGrad_\(\)/,
    /Only Tensors of floating point and complex dtype can require gradients/,
  ]);
  bad(() => t.zeros([2], { dtype: 'int64', requiresGrad: true }), t.TorchError, [
    /requiresGrad/,
    /floating point/,
  ]);
});

test('other misuse: item() on many elements, an async function in tidy()', () => {
  bad(() => t.ones([2]).item(), t.TorchError, [
    /item\(\)/,
    /a Tensor with 2 elements cannot be converted to Scalar/,
  ]);
  bad(() => t.stack([t.ones([2]), t.ones([3])]), t.TorchError, [
    /aten::stack/,
    /stack expects each tensor to be equal size/,
  ]);
  const before = t.memory().tensors;
  assert.throws(
    () => t.tidy((async () => t.ones([2])) as unknown as () => t.Tensor),
    (e: unknown) => e instanceof TypeError && /tidy\(\)/.test(e.message) && /tidyAsync/.test(e.message),
  );
  assert.equal(t.memory().tensors, before, 'the tensor made by the async fn was freed');
});

// Runs last (node:test runs a file's top-level tests in order).
test('after all the bad calls the process is healthy and nothing leaked', () => {
  const result = t.tidy(() => {
    const a = t.tensor([
      [1, 2],
      [3, 4],
    ]);
    const w = t.tensor([[0.5], [-1]], { requiresGrad: true });
    const loss = a.matmul(w).pow(2).sum();
    loss.backward();
    return { loss: loss.item(), grad: w.grad?.toArray(), sum: a.add(a).relu().mul(2).sum(1).toArray() };
  });
  // a @ w = [-1.5, -2.5]; loss = 2.25 + 6.25; dloss/dw = a^T (2 a w) = [[-18], [-26]]
  assert.equal(result.loss, 8.5);
  assert.deepEqual(result.grad, [[-18], [-26]]);
  assert.deepEqual(result.sum, [12, 28]);
  assert.equal(t.isGradEnabled(), true);
  // Every bad call ran inside tidy() and the test keeps no tensor alive.
  assert.equal(t.memory().tensors, baseline, `live tensors: ${t.memory().tensors}, at start: ${baseline}`);
});
