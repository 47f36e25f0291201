// MultiheadAttention's batch-first self-attention (F.selfAttentionBatchFirst) against the
// general, sequence-first computation PyTorch runs (F.multiHeadAttentionForward on the
// transposed input): the same outputs and gradients up to float rounding (the
// in-projection's weight gradient sums its rows batch-major instead of sequence-major),
// with and without dropout, and the output in the same (sequence-first) memory layout. The
// PyTorch fixtures (nn-transformer.test.ts: mha_batch_first_*, enc_layer_batch_first) check
// the same path against PyTorch itself.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';
import * as nn from '../src/nn/index.ts';
import { assertClose, values } from './helpers/fixtures.ts';

const [N, L, E, H] = [3, 17, 32, 4];

/** Output, input gradient and parameter gradients of (out · up).sum(), and the output's strides. */
function run(
  m: nn.MultiheadAttention,
  x: t.Tensor,
  up: t.Tensor,
  general: boolean,
): { tensors: number[][]; strides: number[] } {
  for (const p of m.parameters()) p.grad = null;
  const xi = x.detach().requiresGrad_(true);
  t.manualSeed(5);
  // One transposed tensor as query, key and value: the packed self-attention projection.
  const seqFirst = t.transpose(xi, 0, 1);
  const out = general
    ? t.transpose(
        nn.functional.multiHeadAttentionForward(
          seqFirst,
          seqFirst,
          seqFirst,
          E,
          H,
          m.inProjWeight,
          m.inProjBias,
          null,
          null,
          false,
          m.dropout,
          m.outProj.weight,
          m.outProj.bias,
          { training: m.training, needWeights: false },
        )[0],
        0,
        1,
      )
    : (m.forward(xi, xi, xi, { needWeights: false })[0] as t.Tensor);
  t.sum(t.mul(out, up)).backward();
  const tensors = [out, xi.grad as t.Tensor, ...m.parameters().map((p) => p.grad as t.Tensor)];
  return { tensors: tensors.map(values), strides: out.strides };
}

for (const dropout of [0, 0.25]) {
  test(`MultiheadAttention batch-first self-attention matches the sequence-first computation (dropout ${dropout})`, () => {
    t.tidy(() => {
      t.manualSeed(0);
      const m = new nn.MultiheadAttention(E, H, { batchFirst: true, dropout });
      m.train();
      const x = t.randn([N, L, E]);
      const up = t.randn([N, L, E]);
      const fast = run(m, x, up, false);
      const general = run(m, x, up, true);
      // PyTorch's layout: a [N, L, E] view of sequence-first memory.
      assert.deepEqual(general.strides, [E, N * E, 1]);
      assert.deepEqual(fast.strides, general.strides);
      assert.equal(fast.tensors.length, 2 + m.parameters().length);
      for (const [i, v] of fast.tensors.entries())
        assertClose(v, general.tensors[i], 1e-5, 1e-6, `tensor ${i}`);
      // With dropout, both drew the same masks, and the masks did something (eval differs).
      if (dropout > 0) {
        m.eval();
        assert.notDeepEqual(run(m, x, up, false).tensors[0], fast.tensors[0]);
      }
    });
  });
}

test('selfAttentionBatchFirst refuses an input that is not [N, L, E] and heads that do not divide E', () => {
  t.tidy(() => {
    const w = t.zeros([3 * E, E]);
    const o = t.zeros([E, E]);
    assert.throws(
      () => nn.functional.selfAttentionBatchFirst(t.zeros([L, E]), H, w, null, o, null, 0),
      /selfAttentionBatchFirst: expected x as \[N, L, E\], got \[17,32\]/,
    );
    assert.throws(
      () => nn.functional.selfAttentionBatchFirst(t.zeros([N, L, E]), 5, w, null, o, null, 0),
      /embed_dim 32 not divisible by num_heads 5/,
    );
  });
});
