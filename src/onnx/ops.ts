// aten ops in ONNX: one converter per op that tsddp's models call in eval mode (ResNets,
// the ViTs, GPT) and a few of their neighbours. Each writes the nodes that compute the
// op's outputs from its inputs, with PyTorch's defaults where an argument was left out.
// An op not here is refused by export.ts, naming it.
import { type GraphBuilder, OnnxExportError, onnxDtype, type Sym } from './graph.ts';

export interface OpContext {
  readonly b: GraphBuilder;
  readonly op: string;
  /** The ONNX name of tensor argument `i`. */
  input(i: number): string;
  /** The same, or null for an omitted optional tensor. */
  optInput(i: number): string | null;
  inputs(i: number): string[];
  /** The traced shape and dtype of tensor argument `i`. */
  shape(i: number): number[];
  dtype(i: number): string;
  /** A literal argument that must not follow a dynamic axis; `fallback` where it was left out. */
  lit<T>(i: number, fallback?: T): T;
  /** An integer argument that may follow a dynamic axis. */
  sym(i: number, fallback?: number): Sym;
  syms(i: number): Sym[];
  readonly outputs: string[];
  outShape(k: number): number[];
  outDtype(k: number): string;
}

type Converter = (c: OpContext) => void;

const list = (v: number | number[], n: number): number[] =>
  Array.isArray(v) ? (v.length === 1 ? new Array(n).fill(v[0]) : v) : new Array(n).fill(v);
const axisOf = (dim: number, rank: number): number => (dim < 0 ? dim + rank : dim);
/** A 0-D constant of tensor argument `i`'s dtype: ONNX does not promote types. */
const scalarLike = (c: OpContext, i: number, value: number): string => c.b.constant([value], c.dtype(i), []);

function refuse(c: OpContext, why: string): never {
  throw new OnnxExportError(`${c.op}: ${why}`);
}

const identity: Converter = (c) => {
  c.b.node('Identity', [c.input(0)], {}, c.outputs);
};

/** add/sub with a tensor: other x alpha first when alpha is not 1. */
function withTensor(onnx: string, alphaArg: number | null): Converter {
  return (c) => {
    let other = c.input(1);
    const alpha = alphaArg === null ? 1 : c.lit(alphaArg, 1);
    if (alpha !== 1) [other] = c.b.node('Mul', [other, scalarLike(c, 1, alpha)]);
    c.b.node(onnx, [c.input(0), other], {}, c.outputs);
  };
}

/** add/sub/mul/div with a number: a constant of the tensor's dtype. */
function withScalar(onnx: string, alphaArg: number | null): Converter {
  return (c) => {
    const alpha = alphaArg === null ? 1 : c.lit(alphaArg, 1);
    c.b.node(onnx, [c.input(0), scalarLike(c, 0, c.lit<number>(1) * alpha)], {}, c.outputs);
  };
}

const unary =
  (onnx: string): Converter =>
  (c) => {
    c.b.node(onnx, [c.input(0)], {}, c.outputs);
  };

const conv2d: Converter = (c) => {
  const kernel = c.shape(1).slice(2);
  const padding = list(c.lit(4, [0, 0]), 2);
  c.b.node(
    'Conv',
    [c.input(0), c.input(1), c.optInput(2)].filter((x, i) => i < 2 || x !== null),
    {
      kernel_shape: kernel,
      strides: list(c.lit(3, [1, 1]), 2),
      pads: [...padding, ...padding],
      dilations: list(c.lit(5, [1, 1]), 2),
      group: c.lit(6, 1),
    },
    c.outputs,
  );
};

const batchNorm: Converter = (c) => {
  if (c.lit(5, false)) refuse(c, 'a BatchNorm in training mode: call model.eval() before exporting');
  const channels = c.shape(0)[1];
  const mean = c.optInput(3);
  const variance = c.optInput(4);
  if (mean === null || variance === null)
    refuse(c, 'a BatchNorm without running statistics (trackRunningStats: false)');
  const scale = c.optInput(1) ?? c.b.constant(new Array(channels).fill(1), c.dtype(0));
  const bias = c.optInput(2) ?? c.b.constant(new Array(channels).fill(0), c.dtype(0));
  c.b.node(
    'BatchNormalization',
    [c.input(0), scale, bias, mean, variance],
    { epsilon: { float: c.lit(7, 1e-5) } },
    c.outputs,
  );
};

const maxPool2d: Converter = (c) => {
  const kernel = list(c.lit<number | number[]>(1), 2);
  const strideArg = c.lit<number | number[]>(2, []);
  const stride = Array.isArray(strideArg) && strideArg.length === 0 ? kernel : list(strideArg, 2);
  const padding = list(c.lit(3, 0), 2);
  c.b.node(
    'MaxPool',
    [c.input(0)],
    {
      kernel_shape: kernel,
      strides: stride,
      pads: [...padding, ...padding],
      dilations: list(c.lit(4, 1), 2),
      ceil_mode: c.lit(5, false) ? 1 : 0,
    },
    c.outputs,
  );
};

const adaptiveAvgPool2d: Converter = (c) => {
  const size = list(c.lit<number | number[]>(1), 2);
  if (size[0] === 1 && size[1] === 1) c.b.node('GlobalAveragePool', [c.input(0)], {}, c.outputs);
  else if (size.every((s, i) => s === c.shape(0).at(i - 2))) identity(c);
  else
    refuse(
      c,
      `output size [${size}] of an input ${c.shape(0).slice(-2).join('x')} (only 1x1 or the same size)`,
    );
};

const flatten: Converter = (c) => {
  const rank = c.shape(0).length;
  const start = axisOf(c.lit(1, 0), rank);
  const end = axisOf(c.lit(2, -1), rank);
  if (end !== rank - 1) refuse(c, `flattening dims ${start}..${end} of ${rank} (only to the last)`);
  // Reshape's 0 keeps the input's size there: the batch dimension stays whatever it is.
  c.b.node('Reshape', [c.input(0), c.b.constant([...new Array(start).fill(0), -1], 'int64')], {}, c.outputs);
};

const linear: Converter = (c) => {
  const [wT] = c.b.node('Transpose', [c.input(1)], { perm: [1, 0] });
  const bias = c.optInput(2);
  if (bias === null) c.b.node('MatMul', [c.input(0), wT], {}, c.outputs);
  else c.b.node('Add', [c.b.node('MatMul', [c.input(0), wT])[0], bias], {}, c.outputs);
};

const reshape: Converter = (c) => {
  c.b.node('Reshape', [c.input(0), c.b.ints(c.syms(1))], {}, c.outputs);
};

const permute: Converter = (c) => {
  const rank = c.shape(0).length;
  c.b.node('Transpose', [c.input(0)], { perm: c.lit<number[]>(1).map((d) => axisOf(d, rank)) }, c.outputs);
};

const transpose: Converter = (c) => {
  const rank = c.shape(0).length;
  const perm = [...Array(rank).keys()];
  const [a, b] = [axisOf(c.lit(1), rank), axisOf(c.lit(2), rank)];
  [perm[a], perm[b]] = [perm[b], perm[a]];
  c.b.node('Transpose', [c.input(0)], { perm }, c.outputs);
};

const expand: Converter = (c) => {
  // ONNX's Expand broadcasts: 1 keeps the input's size, as PyTorch's -1 does.
  const sizes = c.syms(1).map((s) => (s === -1 ? 1 : s));
  c.b.node('Expand', [c.input(0), c.b.ints(sizes)], {}, c.outputs);
};

const cat: Converter = (c) => {
  const tensors = c.inputs(0);
  const rank = c.outShape(0).length;
  c.b.node('Concat', tensors, { axis: axisOf(c.lit(1, 0), rank) }, c.outputs);
};

const dropout: Converter = (c) => {
  if (c.lit(2, false)) refuse(c, 'dropout in training mode: call model.eval() before exporting');
  identity(c);
};

const layerNorm: Converter = (c) => {
  const normalized = c.lit<number[]>(1);
  const scale =
    c.optInput(2) ??
    c.b.constant(new Array(normalized.reduce((a, b) => a * b, 1)).fill(1), c.dtype(0), normalized);
  const bias = c.optInput(3);
  c.b.node(
    'LayerNormalization',
    [c.input(0), scale, bias].filter((x) => x !== null),
    { axis: -normalized.length, epsilon: { float: c.lit(4, 1e-5) } },
    c.outputs,
  );
};

const split: Converter = (c) => {
  const rank = c.shape(0).length;
  const axis = axisOf(c.lit(2, 0), rank);
  const sizes = c.outputs.map((_, k) => c.outShape(k)[axis]);
  c.b.node('Split', [c.input(0), c.b.constant(sizes, 'int64')], { axis }, c.outputs);
};

const sdpa: Converter = (c) => {
  if (c.lit(4, 0) !== 0) refuse(c, 'attention dropout: call model.eval() before exporting');
  if (c.lit(7, false)) refuse(c, 'enable_gqa');
  const b = c.b;
  const rank = c.shape(0).length;
  const e = c.shape(0)[rank - 1];
  const scale = c.lit<number | null>(6, null) ?? 1 / Math.sqrt(e);
  const perm = [...Array(rank).keys()];
  [perm[rank - 1], perm[rank - 2]] = [perm[rank - 2], perm[rank - 1]];
  const [kT] = b.node('Transpose', [c.input(1)], { perm });
  const [raw] = b.node('MatMul', [c.input(0), kT]);
  let [scores] = b.node('Mul', [raw, scalarLike(c, 0, scale)]);
  // 0 where attending is allowed, -inf where not (made only when a mask needs them).
  const maskBias = (allowed: string): string =>
    b.node('Where', [allowed, scalarLike(c, 0, 0), scalarLike(c, 0, Number.NEGATIVE_INFINITY)])[0];
  if (c.lit(5, false)) {
    // Causal: position i sees positions <= i; the mask follows the runtime lengths.
    const [l] = b.node('Shape', [c.input(0)], { start: rank - 2, end: rank - 1 });
    const [s] = b.node('Shape', [c.input(1)], { start: rank - 2, end: rank - 1 });
    const [ls] = b.node('Concat', [l, s], { axis: 0 });
    const one = {
      tensor: { name: 'one', data_type: onnxDtype('bool'), dims: [1], raw_data: Uint8Array.of(1) },
    };
    const [ones] = b.node('ConstantOfShape', [ls], { value: one });
    const [lower] = b.node('Trilu', [ones], { upper: 0 });
    [scores] = b.node('Add', [scores, maskBias(lower)]);
  }
  const mask = c.optInput(3);
  if (mask !== null) {
    [scores] = b.node('Add', [scores, c.dtype(3) === 'bool' ? maskBias(mask) : mask]);
  }
  const [weights] = b.node('Softmax', [scores], { axis: -1 });
  b.node('MatMul', [weights, c.input(2)], {}, c.outputs);
};

const gelu: Converter = (c) => {
  const b = c.b;
  const x = c.input(0);
  const k = (v: number): string => scalarLike(c, 0, v);
  const [half] = b.node('Mul', [x, k(0.5)]);
  let inner: string;
  if (c.lit<string>(1, 'none') === 'tanh') {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    const [cube] = b.node('Pow', [x, k(3)]);
    const [sum] = b.node('Add', [x, b.node('Mul', [cube, k(0.044715)])[0]]);
    [inner] = b.node('Tanh', [b.node('Mul', [sum, k(Math.sqrt(2 / Math.PI))])[0]]);
  } else {
    // 0.5 x (1 + erf(x / sqrt(2)))
    [inner] = b.node('Erf', [b.node('Mul', [x, k(Math.SQRT1_2)])[0]]);
  }
  b.node('Mul', [half, b.node('Add', [inner, k(1)])[0]], {}, c.outputs);
};

const select: Converter = (c) => {
  const rank = c.shape(0).length;
  c.b.node('Gather', [c.input(0), c.b.scalar(c.sym(2))], { axis: axisOf(c.lit(1), rank) }, c.outputs);
};

const slice: Converter = (c) => {
  const rank = c.shape(0).length;
  const axis = axisOf(c.lit(1, 0), rank);
  const start = c.sym(2, 0);
  const end = c.sym(3, Number.MAX_SAFE_INTEGER);
  c.b.node(
    'Slice',
    [
      c.input(0),
      c.b.ints([start]),
      c.b.ints([end]),
      c.b.constant([axis], 'int64'),
      c.b.constant([c.lit(4, 1)], 'int64'),
    ],
    {},
    c.outputs,
  );
};

/** arange(end) and arange(start, end): Range with the output's dtype. */
function arange(startArg: number | null, endArg: number): Converter {
  return (c) => {
    const dtype = c.outDtype(0);
    const bound = (i: number | null, fallback: number): string => {
      if (i === null) return c.b.constant([fallback], dtype, []);
      const s = c.sym(i);
      if (dtype === 'int64') return c.b.scalar(s);
      if (typeof s !== 'number') refuse(c, `a ${dtype} range whose bound follows a dynamic axis`);
      return c.b.constant([s], dtype, []);
    };
    c.b.node('Range', [bound(startArg, 0), bound(endArg, 0), c.b.constant([1], dtype, [])], {}, c.outputs);
  };
}

const embedding: Converter = (c) => {
  c.b.node('Gather', [c.input(0), c.input(1)], { axis: 0 }, c.outputs);
};

const softmax: Converter = (c) => {
  c.b.node('Softmax', [c.input(0)], { axis: c.lit(1) }, c.outputs);
};

const unsqueeze: Converter = (c) => {
  c.b.node('Unsqueeze', [c.input(0), c.b.constant([c.lit<number>(1)], 'int64')], {}, c.outputs);
};

const cast: Converter = (c) => {
  c.b.node('Cast', [c.input(0)], { to: onnxDtype(c.outDtype(0)) }, c.outputs);
};

/** Every aten op tsddp exports, by its qualified name. */
export const CONVERTERS: Readonly<Record<string, Converter>> = {
  'aten::conv2d': conv2d,
  'aten::batch_norm': batchNorm,
  'aten::relu': unary('Relu'),
  'aten::relu_': unary('Relu'),
  'aten::max_pool2d': maxPool2d,
  'aten::adaptive_avg_pool2d': adaptiveAvgPool2d,
  'aten::flatten.using_ints': flatten,
  'aten::linear': linear,
  'aten::matmul': withTensor('MatMul', null),
  'aten::reshape': reshape,
  'aten::view': reshape,
  'aten::permute': permute,
  'aten::transpose.int': transpose,
  'aten::expand': expand,
  'aten::cat': cat,
  'aten::dropout': dropout,
  'aten::layer_norm': layerNorm,
  'aten::split.Tensor': split,
  'aten::scaled_dot_product_attention': sdpa,
  'aten::gelu': gelu,
  'aten::select.int': select,
  'aten::slice.Tensor': slice,
  'aten::arange': arange(null, 0),
  'aten::arange.start': arange(0, 1),
  'aten::embedding': embedding,
  'aten::contiguous': identity,
  'aten::clone': identity,
  'aten::detach': identity,
  'aten::add.Tensor': withTensor('Add', 2),
  'aten::add_.Tensor': withTensor('Add', 2),
  'aten::sub.Tensor': withTensor('Sub', 2),
  'aten::mul.Tensor': withTensor('Mul', null),
  'aten::mul_.Tensor': withTensor('Mul', null),
  'aten::div.Tensor': withTensor('Div', null),
  'aten::add.Scalar': withScalar('Add', 2),
  'aten::sub.Scalar': withScalar('Sub', 2),
  'aten::mul.Scalar': withScalar('Mul', null),
  'aten::div.Scalar': withScalar('Div', null),
  'aten::pow.Tensor_Scalar': withScalar('Pow', null),
  'aten::tanh': unary('Tanh'),
  'aten::sigmoid': unary('Sigmoid'),
  'aten::exp': unary('Exp'),
  'aten::softmax.int': softmax,
  'aten::unsqueeze': unsqueeze,
  'aten::_to_copy': cast,
  'aten::to.dtype': cast,
};
