// Attention and Transformer modules against PyTorch (test/fixtures/nn-transformer/cases.json,
// made by test/fixtures/nn-transformer/gen.py): inputs and state dicts are stored in the
// fixture; where a case has a seed (dropout, init), tsddp's generator must draw PyTorch's numbers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { noGrad } from '../src/autograd/index.ts';
import * as t from '../src/index.ts';
import * as nn from '../src/nn/index.ts';
import { assertClose, type FixtureTensor, loadFixture, toTensor, values } from './helpers/fixtures.ts';

const F = nn.functional;

/** As gen.py writes them: bool tensors as 0/1, infinities as strings. */
interface Stored {
  dtype: 'float32' | 'int64' | 'bool';
  shape: number[];
  data: (number | string)[];
}

interface ModuleCase {
  keys: string[];
  state: string;
  train: boolean;
  seed?: number;
  no_grad?: boolean;
  inputs: Record<string, Stored>;
  outputs: (Stored | null)[];
  upstream?: (Stored | null)[];
  grads?: Record<string, Stored>;
}

interface FunctionalCase {
  seed?: number;
  inputs: Record<string, Stored>;
  outputs: Stored[];
  upstream?: Stored;
  grads?: Record<string, Stored>;
}

interface BasicCase {
  x: Stored;
  out: Stored;
  upstream: Stored;
  grad: Stored;
  seed: number | null;
}

const fx = loadFixture('nn-transformer/cases.json') as unknown as {
  functional: Record<string, FunctionalCase>;
  states: Record<string, Record<string, Stored>>;
  modules: Record<string, ModuleCase>;
  basic: Record<string, BasicCase>;
  init: Record<string, { seed: number; state: Record<string, Stored> }>;
};
const RTOL = 1e-5;
const ATOL = 1e-6;

function numbers(s: Stored): number[] {
  return s.data.map((v) => (v === 'inf' ? Infinity : v === '-inf' ? -Infinity : Number(v)));
}

function tensorOf(s: Stored, requiresGrad = false): t.Tensor {
  if (s.dtype === 'bool') return toTensor({ dtype: 'int64', shape: s.shape, data: numbers(s) }).bool();
  return toTensor({ dtype: s.dtype, shape: s.shape, data: numbers(s) } as FixtureTensor, { requiresGrad });
}

function expectClose(actual: t.Tensor, want: Stored, label: string, rtol = RTOL, atol = ATOL): void {
  assert.deepEqual(actual.shape, want.shape, `${label}: shape`);
  assert.equal(actual.dtype, want.dtype, `${label}: dtype`);
  const expected = want.dtype === 'float32' ? numbers(want).map(Math.fround) : numbers(want);
  assertClose(values(actual), expected, rtol, atol, label);
}

type Inputs = Record<string, t.Tensor>;
type Result = t.Tensor | [t.Tensor, t.Tensor | null];

const mha =
  (o: nn.MultiheadAttentionOptions = {}) =>
  () =>
    new nn.MultiheadAttention(8, 2, o);
const selfAttn =
  (o: nn.MultiheadAttentionForwardOptions = {}) =>
  (m: nn.MultiheadAttention, { x }: Inputs) =>
    m.forward(x, x, x, o);
const encLayer =
  (o: nn.TransformerLayerOptions = {}) =>
  () =>
    new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 8, ...o });
const decLayer = (o: nn.TransformerLayerOptions = {}) =>
  new nn.TransformerDecoderLayer(8, 2, { dimFeedforward: 8, ...o });

// Each module case as gen.py builds and calls it.
// biome-ignore lint/suspicious/noExplicitAny: each case calls its own module's forward
const MODULES: Record<string, [() => nn.Module, (m: any, x: Inputs) => Result]> = {
  mha_self: [mha(), selfAttn()],
  mha_self_no_weights: [mha(), selfAttn({ needWeights: false })],
  mha_batch_first_per_head: [mha({ batchFirst: true }), selfAttn({ averageAttnWeights: false })],
  mha_cross_kv_same_kpm: [mha(), (m, { q, kv, kpm }) => m.forward(q, kv, kv, { keyPaddingMask: kpm })],
  mha_cross_float_masks_no_weights: [
    mha(),
    (m, { q, k, v, kpm, am }) =>
      m.forward(q, k, v, { keyPaddingMask: kpm, attnMask: am, needWeights: false }),
  ],
  mha_bool_mask_3d: [mha(), (m, { x, am }) => m.forward(x, x, x, { attnMask: am })],
  mha_causal_no_weights: [
    mha(),
    (m, { x, am }) => m.forward(x, x, x, { attnMask: am, isCausal: true, needWeights: false }),
  ],
  mha_causal_weights_kpm: [
    mha(),
    (m, { x, am, kpm }) => m.forward(x, x, x, { attnMask: am, keyPaddingMask: kpm, isCausal: true }),
  ],
  mha_kdim_vdim: [mha({ kdim: 6, vdim: 3, batchFirst: true }), (m, { q, k, v }) => m.forward(q, k, v)],
  mha_kdim_vdim_no_weights: [
    mha({ kdim: 6, vdim: 3 }),
    (m, { q, k, v, kpm }) => m.forward(q, k, v, { keyPaddingMask: kpm, needWeights: false }),
  ],
  mha_bias_kv_zero_attn: [
    mha({ addBiasKV: true, addZeroAttn: true, bias: false }),
    (m, { x, am, kpm }) => m.forward(x, x, x, { attnMask: am, keyPaddingMask: kpm }),
  ],
  mha_eval: [mha({ dropout: 0.5 }), selfAttn({ needWeights: false })],
  mha_unbatched: [mha(), (m, { x, kpm }) => m.forward(x, x, x, { keyPaddingMask: kpm })],
  mha_dropout_weights: [mha({ dropout: 0.3 }), selfAttn()],
  mha_dropout_sdpa: [mha({ dropout: 0.3 }), selfAttn({ needWeights: false })],
  mha_fast_path: [mha({ batchFirst: true }), (m, { x, kpm }) => m.forward(x, x, x, { keyPaddingMask: kpm })],
  mha_batch_first_no_weights: [mha({ batchFirst: true }), selfAttn({ needWeights: false })],
  mha_batch_first_dropout_sdpa: [mha({ batchFirst: true, dropout: 0.3 }), selfAttn({ needWeights: false })],
  enc_layer_batch_first: [encLayer({ dropout: 0, batchFirst: true }), (m, { x }) => m.forward(x)],
  enc_layer: [encLayer({ dropout: 0 }), (m, { x, mask }) => m.forward(x, { srcMask: mask })],
  enc_layer_norm_first_gelu: [
    encLayer({ dropout: 0, activation: 'gelu', normFirst: true, batchFirst: true }),
    (m, { x, kpm }) => m.forward(x, { srcKeyPaddingMask: kpm }),
  ],
  enc_layer_eval_masks: [
    encLayer(),
    (m, { x, mask, kpm }) => m.forward(x, { srcMask: mask, srcKeyPaddingMask: kpm }),
  ],
  enc_layer_module_activation: [
    encLayer({ dropout: 0, activation: new nn.GELU({ approximate: 'tanh' }), bias: false }),
    (m, { x }) => m.forward(x),
  ],
  enc_layer_causal: [
    encLayer({ dropout: 0, layerNormEps: 1e-3 }),
    (m, { x, mask }) => m.forward(x, { srcMask: mask, isCausal: true }),
  ],
  enc_layer_dropout: [encLayer({ dropout: 0.2 }), (m, { x }) => m.forward(x)],
  enc_layer_unbatched: [encLayer({ dropout: 0 }), (m, { x }) => m.forward(x)],
  encoder_causal_kpm: [
    () => new nn.TransformerEncoder(encLayer({ dropout: 0 })(), 2, { norm: new nn.LayerNorm(8) }),
    (m, { x, mask, kpm }) => m.forward(x, { mask, srcKeyPaddingMask: kpm }),
  ],
  encoder_eval_batch_first: [
    () => new nn.TransformerEncoder(encLayer({ batchFirst: true, normFirst: true })(), 2),
    (m, { x, mask }) => m.forward(x, { mask }),
  ],
  dec_layer: [
    () => decLayer({ dropout: 0 }),
    (m, { t: tgt, mem, tm, mkpm }) => m.forward(tgt, mem, { tgtMask: tm, memoryKeyPaddingMask: mkpm }),
  ],
  dec_layer_norm_first_dropout: [
    () => decLayer({ dropout: 0.1, normFirst: true, activation: 'gelu', batchFirst: true }),
    (m, { t: tgt, mem, tkpm, mm }) => m.forward(tgt, mem, { tgtKeyPaddingMask: tkpm, memoryMask: mm }),
  ],
  decoder: [
    () => new nn.TransformerDecoder(decLayer({ dropout: 0 }), 2, { norm: new nn.LayerNorm(8) }),
    (m, { t: tgt, mem, tm }) => m.forward(tgt, mem, { tgtMask: tm }),
  ],
  transformer: [
    () =>
      new nn.Transformer({
        dModel: 8,
        nhead: 2,
        numEncoderLayers: 1,
        numDecoderLayers: 1,
        dimFeedforward: 8,
        dropout: 0,
        batchFirst: true,
      }),
    (m, { src, tgt, tm, skpm }) =>
      m.forward(src, tgt, { tgtMask: tm, srcKeyPaddingMask: skpm, memoryKeyPaddingMask: skpm }),
  ],
};

function loadState(m: nn.Module, id: string): void {
  const sd: Record<string, t.Tensor> = {};
  for (const [k, v] of Object.entries(fx.states[id])) sd[k] = tensorOf(v);
  m.loadStateDict(sd);
}

function outputsOf(r: Result): (t.Tensor | null)[] {
  return r instanceof t.Tensor ? [r] : r;
}

test('every module case of the fixture has a tsddp counterpart, and no more', () => {
  assert.deepEqual(Object.keys(MODULES).sort(), Object.keys(fx.modules).sort());
});

for (const [name, c] of Object.entries(fx.modules)) {
  const mode = `${c.train ? 'train' : 'eval'}${c.seed !== undefined ? ', seeded dropout' : ''}`;
  test(`nn: ${name} (${mode}) matches PyTorch: keys, outputs, gradients`, () => {
    t.tidy(() => {
      const [build, run] = MODULES[name];
      const m = build();
      assert.deepEqual(Object.keys(m.stateDict()), c.keys, `${name}: state-dict keys`);
      loadState(m, c.state);
      m.train(c.train);
      const inputs: Inputs = {};
      for (const [k, v] of Object.entries(c.inputs))
        inputs[k] = tensorOf(v, c.grads?.[`input:${k}`] !== undefined);
      if (c.seed !== undefined) t.manualSeed(c.seed);
      const outs = outputsOf(c.no_grad ? noGrad(() => run(m, inputs)) : run(m, inputs));
      assert.equal(outs.length, c.outputs.length, `${name}: number of outputs`);
      c.outputs.forEach((want, i) => {
        const got = outs[i];
        if (want === null) assert.equal(got, null, `${name}: output ${i} is null`);
        // PyTorch's eval fast path is a different (fused) kernel: equal up to rounding.
        else expectClose(got as t.Tensor, want, `${name}: output ${i}`, RTOL, c.no_grad ? 1e-5 : ATOL);
      });
      if (c.upstream === undefined || c.grads === undefined) return;
      let loss: t.Tensor | null = null;
      c.upstream.forEach((up, i) => {
        if (up === null) return;
        const term = t.sum(t.mul(outs[i] as t.Tensor, tensorOf(up)));
        loss = loss === null ? term : t.add(loss, term);
      });
      (loss as unknown as t.Tensor).backward();
      const params = Object.fromEntries(m.namedParameters());
      for (const [key, want] of Object.entries(c.grads)) {
        const [kind, n] = [key.slice(0, key.indexOf(':')), key.slice(key.indexOf(':') + 1)];
        const g = kind === 'param' ? params[n]?.grad : inputs[n].grad;
        assert.ok(g, `${name}: no gradient for ${key}`);
        expectClose(g, want, `${name}: grad ${key}`, RTOL, 1e-5);
      }
    });
  });
}

// Each functional case as gen.py's functional() calls it.
const FUNCTIONAL: Record<string, (x: Inputs) => Result> = {
  sdpa: ({ q, k, v }) => F.scaledDotProductAttention(q, k, v),
  sdpa_bool_mask: ({ q, k, v, m }) => F.scaledDotProductAttention(q, k, v, { attnMask: m }),
  sdpa_float_mask_scale: ({ q, k, v, m }) =>
    F.scaledDotProductAttention(q, k, v, { attnMask: m, scale: 0.3 }),
  sdpa_causal: ({ q, k, v }) => F.scaledDotProductAttention(q, k, v, { isCausal: true }),
  sdpa_gqa: ({ q, k, v }) => F.scaledDotProductAttention(q, k, v, { enableGqa: true }),
  sdpa_dropout: ({ q, k, v }) => F.scaledDotProductAttention(q, k, v, { dropoutP: 0.3 }),
  mha_forward_unbatched: ({ x, w, b, ow, ob, kpm }) =>
    F.multiHeadAttentionForward(x, x, x, 8, 2, w, b, null, null, false, 0, ow, ob, {
      keyPaddingMask: kpm,
      averageAttnWeights: false,
    }),
};

test('every functional case of the fixture has a tsddp counterpart, and no more', () => {
  assert.deepEqual(Object.keys(FUNCTIONAL).sort(), Object.keys(fx.functional).sort());
});

for (const [name, c] of Object.entries(fx.functional)) {
  test(`F: ${name} matches torch.nn.functional`, () => {
    t.tidy(() => {
      const inputs: Inputs = {};
      for (const [k, v] of Object.entries(c.inputs)) inputs[k] = tensorOf(v, c.grads?.[k] !== undefined);
      if (c.seed !== undefined) t.manualSeed(c.seed);
      const outs = outputsOf(FUNCTIONAL[name](inputs));
      for (const [i, want] of c.outputs.entries())
        expectClose(outs[i] as t.Tensor, want, `${name}: output ${i}`);
      if (c.upstream === undefined || c.grads === undefined) return;
      t.sum(t.mul(outs[0] as t.Tensor, tensorOf(c.upstream))).backward();
      for (const [k, want] of Object.entries(c.grads)) {
        assert.ok(inputs[k].grad, `${name}: no gradient for ${k}`);
        expectClose(inputs[k].grad as t.Tensor, want, `${name}: grad ${k}`, RTOL, 1e-5);
      }
    });
  });
}

const BASIC: Record<string, () => nn.Module> = {
  Identity: () => new nn.Identity(),
  Flatten: () => new nn.Flatten(),
  Flatten_0_1: () => new nn.Flatten(0, 1),
  Dropout_train: () => new nn.Dropout(0.4),
  Dropout_eval: () => new nn.Dropout(0.4).eval(),
  GELU: () => new nn.GELU(),
  GELU_tanh: () => new nn.GELU({ approximate: 'tanh' }),
  SiLU: () => new nn.SiLU(),
};

for (const [name, c] of Object.entries(fx.basic)) {
  test(`nn: ${name} output and input gradient match PyTorch`, () => {
    t.tidy(() => {
      const x = tensorOf(c.x, true);
      if (c.seed !== null) t.manualSeed(c.seed);
      const y = BASIC[name]().forward(x) as t.Tensor;
      expectClose(y, c.out, `${name}: output`);
      t.sum(t.mul(y, tensorOf(c.upstream))).backward();
      expectClose(x.grad as t.Tensor, c.grad, `${name}: grad`);
    });
  });
}

const INIT: Record<string, () => nn.Module> = {
  MultiheadAttention: () => new nn.MultiheadAttention(8, 2),
  MultiheadAttention_kdim_bias_kv: () =>
    new nn.MultiheadAttention(8, 2, { kdim: 6, vdim: 3, addBiasKV: true }),
  TransformerEncoder: () =>
    new nn.TransformerEncoder(new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 8 }), 2),
  Transformer: () =>
    new nn.Transformer({ dModel: 8, nhead: 2, numEncoderLayers: 1, numDecoderLayers: 1, dimFeedforward: 8 }),
};

for (const [name, c] of Object.entries(fx.init)) {
  test(`nn: ${name} is initialised as PyTorch's after the same manualSeed`, () => {
    t.tidy(() => {
      t.manualSeed(c.seed);
      const sd = INIT[name]().stateDict();
      assert.deepEqual(Object.keys(sd), Object.keys(c.state));
      for (const [k, want] of Object.entries(c.state)) expectClose(sd[k], want, `${name}: ${k}`);
    });
  });
}

test('a function activation computes what the named one does', () => {
  t.tidy(() => {
    const c = fx.modules.enc_layer_norm_first_gelu;
    const opts = { dimFeedforward: 8, dropout: 0, normFirst: true, batchFirst: true };
    const named = new nn.TransformerEncoderLayer(8, 2, { ...opts, activation: 'gelu' });
    const fn = new nn.TransformerEncoderLayer(8, 2, { ...opts, activation: (x) => F.gelu(x) });
    loadState(named, c.state);
    loadState(fn, c.state);
    const x = tensorOf(c.inputs.x);
    assert.ok(named.forward(x).equal(fn.forward(x)));
    assert.deepEqual(Object.keys(fn.stateDict()), c.keys, 'a function adds no state');
  });
});

test('TransformerEncoder layers are independent copies of the given layer', () => {
  t.tidy(() => {
    const layer = new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 8 });
    layer.eval();
    const enc = new nn.TransformerEncoder(layer, 2);
    const [a, b] = [enc.layers.get(0), enc.layers.get(1)] as nn.TransformerEncoderLayer[];
    assert.notEqual(a, layer);
    assert.equal(a.training, false, 'the mode is copied');
    assert.ok(a.selfAttn.inProjWeight?.equal(layer.selfAttn.inProjWeight as t.Tensor));
    noGrad(() => a.selfAttn.inProjWeight?.fill_(1));
    assert.ok(!b.selfAttn.inProjWeight?.equal(a.selfAttn.inProjWeight as t.Tensor), 'no shared storage');
    assert.ok(nn.isParameter(a.selfAttn.inProjWeight));
    assert.equal(enc.parameters().length, 2 * layer.parameters().length);
  });
});

test('generateSquareSubsequentMask is -inf above the diagonal', () => {
  t.tidy(() => {
    const m = nn.Transformer.generateSquareSubsequentMask(3);
    assert.deepEqual(values(m), [0, -Infinity, -Infinity, 0, 0, -Infinity, 0, 0, 0]);
    assert.equal(nn.generateSquareSubsequentMask(2, { dtype: 'float64' }).dtype, 'float64');
  });
});

test('bad arguments give errors naming them', () => {
  t.tidy(() => {
    assert.throws(() => new nn.MultiheadAttention(6, 4), /divisible by num_heads/);
    assert.throws(() => new nn.MultiheadAttention(0, 1), /greater than 0/);
    const m = new nn.MultiheadAttention(4, 2);
    const x = t.zeros([3, 1, 4]);
    assert.throws(() => m.forward(x, x, x, { isCausal: true }), /Need attn_mask/);
    assert.throws(
      () => m.forward(x, x, x, { attnMask: t.zeros([3, 3], { dtype: 'int64' }) }),
      /bool and floating/,
    );
    assert.throws(() => m.forward(x, x, x, { attnMask: t.zeros([2, 3]) }), /2D attn_mask/);
    assert.throws(() => m.forward(t.zeros([1, 3, 1, 4]), x, x), /unbatched 2D or batched 3D/);
    assert.throws(() => new nn.TransformerEncoderLayer(4, 2, { activation: 'tanh' as never }), /relu\/gelu/);
    assert.throws(() => F.scaledDotProductAttention(x, x, x, { dropoutP: 2 }), /between 0 and 1/);
  });
});
