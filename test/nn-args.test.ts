// Every nn module constructor and nn.functional function against PyTorch's signatures
// (test/fixtures/nn-args/signatures.py, read with inspect.signature from torch 2.13.0):
// the same parameters in the same positional order (camelCase), each argument either
// honoured or refused with a TypeError naming it, never ignored (src/nn/args.ts,
// docs/guide/library.md "Arguments").
//
// For each optional parameter, three calls are compared: a baseline without it, the
// call with a probe value by name, and the call with the probe in its PyTorch position
// (earlier parameters given positionally too, as their PyTorch defaults). The positional
// and named calls must agree (the position maps to that name), and the named call must
// differ from the baseline (a different result, module state or error: the value was
// read), unless the parameter is declared unsupported (then the error is a TypeError
// naming it) or inert (no effect in PyTorch either).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { camelCase } from '../src/core/options.ts';
import * as t from '../src/index.ts';
import { type Signature, signatureOf } from '../src/nn/args.ts';
import * as nn from '../src/nn/index.ts';

const F = nn.functional;

interface PyParam {
  name: string;
  kind: 'positional' | 'keyword' | 'var_positional' | 'var_keyword';
  position?: number;
  default?: unknown;
}
interface PyEntry {
  source: string;
  params: PyParam[];
}
const PY = JSON.parse(
  readFileSync(new URL('./fixtures/nn-args/signatures.json', import.meta.url), 'utf8'),
) as { torch: string; modules: Record<string, PyEntry>; functional: Record<string, PyEntry> };

// tsddp's exports that are not PyTorch's: abstract bases (PyTorch's private _BatchNorm,
// _ConvTransposeNd, _InstanceNorm; their constructors are their subclasses'), and
// nn.functional helpers of tsddp's own.
const ABSTRACT_BASES = ['BatchNorm', 'ConvTranspose', 'InstanceNorm'];
const TSDDP_FUNCTIONS = ['implicitSoftmaxDim', 'canonicalMask', 'selfAttentionBatchFirst'];
// Callables whose arguments are their entries, or anything at all, as in PyTorch.
const CONTAINERS = ['Sequential', 'ModuleList', 'ModuleDict', 'ParameterList', 'ParameterDict', 'Container'];
// tsddp's own options beyond PyTorch's signature (by name only).
const EXTRAS: Record<string, string[]> = { upsample: ['recomputeScaleFactor'] };

type Ctor = new (...args: unknown[]) => nn.Module;
type Fn = (...args: unknown[]) => unknown;
const moduleClass = (name: string) => (nn as unknown as Record<string, Ctor>)[name];
const fnOf = (pyName: string) => (F as unknown as Record<string, Fn>)[camelCase(pyName)];

// --- the values the cases are built from ---------------------------------------------------

/** A float32 tensor of `shape`, values evenly spaced in [lo, hi]. */
function seq(shape: number[], lo = -2, hi = 2): t.Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  return t.reshape(t.linspace(lo, hi, n), shape);
}
const ints = (data: number[] | number[][]) => t.tensor(data, { dtype: 'int64' });
const filled = (shape: number[], v: number) => t.full(shape, v);
const bools = (data: boolean[] | boolean[][]) => t.tensor(data, { dtype: 'bool' });

/** Wraps a probe whose call needs other arguments (ctx) or other required ones (req). */
class Probe {
  constructor(
    readonly value: unknown,
    readonly ctx: Record<string, unknown> = {},
    readonly req?: () => unknown[],
  ) {}
}
const probe = (value: unknown, ctx: Record<string, unknown> = {}, req?: () => unknown[]) =>
  new Probe(value, ctx, req);

interface Case {
  /** The required arguments, made fresh for each call (in-place functions change them). */
  req: () => unknown[];
  /** Values of other parameters given in every call of this case. */
  ctx?: Record<string, unknown>;
  /** Probe values by parameter, where the shared PROBES do not fit. */
  probe?: Record<string, unknown>;
  /** Parameters not probed, with the reason. */
  skip?: Record<string, string>;
  /** Indices of required arguments whose gradient is part of the outcome (gradient-only parameters). */
  grads?: number[];
}

// The probe of a parameter by name, where its PyTorch default is not a boolean (booleans
// are probed with their negation).
const PROBES: Record<string, unknown> = {
  p: 0.25,
  negativeSlope: 0.2,
  alpha: 0.5,
  minVal: -0.5,
  maxVal: 0.5,
  minValue: -0.5,
  maxValue: 0.5,
  threshold: 5,
  lower: 0.2,
  upper: 0.25,
  beta: 0.5,
  approximate: 'tanh',
  lambd: 0.3,
  dim: 0,
  numParameters: 3,
  init: 0.5,
  startDim: 0,
  endDim: 2,
  eps: 0.5,
  momentum: 0.3,
  stride: 2,
  padding: 1,
  dilation: 2,
  groups: 2,
  outputPadding: 1,
  paddingMode: 'reflect',
  dtype: 'float64',
  divisorOverride: 2,
  outputSize: 3,
  outputRatio: 0.5,
  normType: 1,
  reduction: 'sum',
  sizeAverage: false,
  reduce: false,
  ignoreIndex: 1,
  labelSmoothing: 0.1,
  margin: 0.5,
  blank: 1,
  delta: 0.5,
  size: [4, 4],
  scaleFactor: 2,
  mode: 'bilinear',
  alignCorners: true,
  recomputeScaleFactor: true,
  numLayers: 2,
  nonlinearity: 'relu',
  dropout: 0.5,
  projSize: 2,
  paddingIdx: 1,
  maxNorm: 1,
  k: 2,
  dimFeedforward: 32,
  activation: 'gelu',
  layerNormEps: 0.01,
  kdim: 3,
  vdim: 5,
  divValue: 2,
  value: 0.5,
  _stacklevel: 5,
  tau: 0.5,
  out: null,
};

// Probes that must be made when used (tensors, modules): by parameter name.
const MAKE_PROBES: Record<string, () => unknown> = {
  weight: () => t.tensor([1, 2, 3]),
  posWeight: () => t.tensor([1, 2, 3]),
  _randomSamples: () => filled([1, 2, 2], 0.5),
  _weight: () => seq([5, 3]),
  customEncoder: () => new nn.Identity(),
  customDecoder: () => new nn.Identity(),
  norm: () => new nn.LayerNorm(8),
  distanceFunction: () => (a: t.Tensor, b: t.Tensor) => t.sum(t.abs(t.sub(a, b)), [-1]),
};

// The probe value of `param` in `c`: the case's own, the shared one by name, or the
// negation of a boolean default; a Probe when it brings context.
function probeOf(c: Case, param: string, py: PyParam | undefined): Probe | undefined {
  if (c.probe && param in c.probe) {
    const v = c.probe[param];
    return v instanceof Probe ? v : probe(v);
  }
  if (param in MAKE_PROBES) return probe(MAKE_PROBES[param]());
  if (param in PROBES) return probe(PROBES[param]);
  if (typeof py?.default === 'boolean') return probe(!py.default);
  if (py !== undefined && py.default === null && /^(is|has|use|keep|enable)/.test(param)) return probe(true);
  return undefined;
}

// --- outcomes: what a call did, as a string to compare -------------------------------------

function values(x: t.Tensor): number[] {
  return Array.from(x.detach().contiguous().toTypedArray() as ArrayLike<number | bigint>, Number);
}

/** A JSON-able picture of a value: tensors by dtype, shape, values (or their sums) and requiresGrad. */
function picture(v: unknown, seen = new Set<unknown>()): unknown {
  if (v instanceof t.Tensor) {
    // A lazy module's placeholder holds uninitialized memory: its shape is what it is.
    if (nn.isUninitialized(v)) return { dtype: v.dtype, shape: v.shape, uninitialized: true };
    const xs = values(v);
    const data = xs.length <= 64 ? xs : [xs.reduce((a, b) => a + b, 0), xs.reduce((a, b) => a + b * b, 0)];
    return { dtype: v.dtype, shape: v.shape, data: data.map(String), rg: v.requiresGrad };
  }
  if (v instanceof nn.Module) return `Module ${v.constructor.name}`;
  // A function by its name, or its source (an activation given as a string is kept as one).
  if (typeof v === 'function') return `function ${v.name || String(v)}`;
  if (v === undefined) return 'undefined';
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  if (typeof v !== 'object' || v === null) return v;
  if (seen.has(v)) return 'cycle';
  seen.add(v);
  if (Array.isArray(v)) return v.map((x) => picture(x, seen));
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, picture(x, seen)]));
}

/** A module's own properties (options such as a Dropout's p). */
const ownProperties = (m: nn.Module) =>
  picture(Object.fromEntries(Object.keys(m).map((k) => [k, (m as unknown as Record<string, unknown>)[k]])));

/** A module's class, own properties (its submodules' too), parameters, buffers and repr. */
function moduleState(m: nn.Module): string {
  return JSON.stringify({
    cls: m.constructor.name,
    own: Object.fromEntries(m.namedModules().map(([k, sub]) => [k, ownProperties(sub)])),
    params: picture(Object.fromEntries(m.namedParameters())),
    buffers: picture(Object.fromEntries(m.namedBuffers())),
    repr: m.extraRepr(),
  });
}

/** What `run` did: its result (a module's state) or its error; seeded, so random draws repeat. */
function outcome(run: () => unknown, after: () => unknown = () => null): string {
  return t.tidy(() => {
    t.manualSeed(0);
    try {
      const r = run();
      const result = r instanceof nn.Module ? moduleState(r) : JSON.stringify(picture(r));
      return `ok ${result} ${JSON.stringify(picture(after()))}`;
    } catch (e) {
      // libtorch's parallel kernels name the first bad element a thread finds (max_unpool's
      // "invalid max index: 7" or ": 15"): the numbers in its messages are not compared.
      const message = e instanceof t.TorchError ? e.message.replace(/\d+/g, 'N') : (e as Error).message;
      return `${(e as Error).constructor.name}: ${message}`;
    }
  });
}

/**
 * Runs a functional `fn` on `args`, whose first `nReq` are the required ones: the outcome
 * covers those after the call (in-place changes) and the gradients of those in `grads`.
 */
function callOutcome(fn: Fn, args: unknown[], nReq: number, grads: number[] = []): string {
  for (const i of grads) (args[i] as t.Tensor).requiresGrad_(true);
  return outcome(
    () => {
      const r = fn(...args);
      if (grads.length > 0 && r instanceof t.Tensor) t.sum(r).backward();
      return r;
    },
    () => ({ args: args.slice(0, nReq), grads: grads.map((i) => (args[i] as t.Tensor).grad) }),
  );
}

// --- the module cases: required arguments, and probes where the shared ones do not fit -----

const none = () => [];
const DEVICE = { device: "the tests run on the CPU, PyTorch's default device: a probe shows nothing" };
// A Transformer small enough to build many times.
const SMALL_TRANSFORMER = {
  dModel: 8,
  nhead: 2,
  numEncoderLayers: 1,
  numDecoderLayers: 1,
  dimFeedforward: 16,
};

const MODULE_CASES: Record<string, Case> = {
  AdaptiveLogSoftmaxWithLoss: { req: () => [8, 10, [3, 6]], skip: DEVICE },
  Bilinear: { req: () => [3, 4, 2], skip: DEVICE },
  ChannelShuffle: { req: () => [2] },
  Embedding: {
    req: () => [5, 3],
    probe: { _freeze: probe(true, { _weight: seq([5, 3]) }) },
    skip: DEVICE,
  },
  EmbeddingBag: { req: () => [5, 3], probe: { mode: 'sum' }, skip: DEVICE },
  Fold: { req: () => [[4, 5], 2] },
  FractionalMaxPool2d: {
    req: () => [2],
    probe: { _randomSamples: probe(filled([1, 2, 2], 0.5), { outputSize: 2 }) },
  },
  FractionalMaxPool3d: {
    req: () => [2],
    probe: { _randomSamples: probe(filled([1, 2, 3], 0.5), { outputSize: 2 }) },
  },
  GroupNorm: { req: () => [2, 4], skip: DEVICE },
  LayerNorm: { req: () => [4], skip: DEVICE },
  LocalResponseNorm: { req: () => [2] },
  MultiheadAttention: { req: () => [4, 2], skip: DEVICE },
  MultiMarginLoss: { req: none, probe: { p: 2 } },
  PairwiseDistance: { req: none, probe: { p: 1 } },
  PixelShuffle: { req: () => [2] },
  PixelUnshuffle: { req: () => [2] },
  PReLU: { req: none, skip: DEVICE },
  RMSNorm: { req: () => [4], skip: DEVICE },
  RNNBase: { req: () => ['LSTM', 3, 4], skip: DEVICE },
  RNNCellBase: { req: () => [3, 4, true, 4], skip: DEVICE },
  SyncBatchNorm: {
    req: () => [3],
    skip: {
      ...DEVICE,
      processGroup: 'needs an initialized process group: test/sync-batchnorm.test.ts normalises over one',
    },
  },
  Threshold: { req: () => [0.1, 2] },
  Transformer: {
    req: none,
    ctx: SMALL_TRANSFORMER,
    probe: { dModel: 16, nhead: 4, numEncoderLayers: 2, numDecoderLayers: 2 },
    skip: DEVICE,
  },
  TransformerDecoder: { req: () => [new nn.TransformerDecoderLayer(8, 2, 16), 1] },
  TransformerDecoderLayer: { req: () => [8, 2], ctx: { dimFeedforward: 16 }, skip: DEVICE },
  TransformerEncoder: { req: () => [new nn.TransformerEncoderLayer(8, 2, 16), 1] },
  TransformerEncoderLayer: { req: () => [8, 2], ctx: { dimFeedforward: 16 }, skip: DEVICE },
  TripletMarginLoss: { req: none, probe: { p: 1 } },
  Unflatten: { req: () => [1, [2, 3]] },
  Unfold: { req: () => [2] },
  Upsample: { req: none },
};

/** The case of module `name`: its own, or one by family (the required arguments are the same). */
function moduleCase(name: string): Case {
  if (name in MODULE_CASES) return MODULE_CASES[name];
  const lazy = name.startsWith('Lazy');
  if (/Conv(Transpose)?[123]d$/.test(name)) return { req: () => (lazy ? [4, 3] : [2, 4, 3]), skip: DEVICE };
  if (/InstanceNorm[123]d$/.test(name) && !lazy) {
    // Without affine parameters or running statistics, dtype and bias have nothing to apply to (as in PyTorch).
    const affine = { affine: true };
    return {
      req: () => [3],
      probe: { dtype: probe('float64', affine), bias: probe(false, affine) },
      skip: DEVICE,
    };
  }
  if (/(Batch|Instance)Norm[123]d$/.test(name)) return { req: () => (lazy ? [] : [3]), skip: DEVICE };
  if (name === 'LazyLinear') return { req: () => [4], skip: DEVICE };
  if (name === 'Linear') return { req: () => [3, 4], skip: DEVICE };
  if (/^(RNN|LSTM|GRU)(Cell)?$/.test(name)) return { req: () => [3, 4], skip: DEVICE };
  if (/Pad[123]d$/.test(name)) return { req: () => [1] };
  if (/^LPPool/.test(name)) return { req: () => [2, 2] };
  // A stride of 3, not the kernel size 2 that is the default stride.
  if (/(Pool|Unpool)[123]d$/.test(name)) return { req: () => [2], probe: { stride: 3 } };
  return { req: none };
}

// --- the functional cases ------------------------------------------------------------------

const x4 = () => seq([2, 4, 3, 3]);
const probs = () => t.sigmoid(seq([2, 3]));
const target01 = () =>
  t.tensor([
    [1, 0, 1],
    [0, 0.5, 1],
  ]);
const classes = () => ints([0, 1, 2, 1]);
// Logits not evenly spaced per row (with even spacing, label smoothing's term equals the loss).
const logits = () => t.pow(seq([4, 3], -2, 2.5), 2);
const img = () => seq([1, 2, 5, 5]);

/** The case of the functions of one tensor (the activations, their in-place forms, the dropouts). */
const ONE_TENSOR: Case = { req: () => [x4()] };

const LOSS_CASES: Record<string, Case> = {
  binary_cross_entropy: { req: () => [probs(), target01()], probe: { weight: seq([2, 3], 0.5, 2) } },
  binary_cross_entropy_with_logits: {
    req: () => [seq([2, 3]), target01()],
    probe: { weight: seq([2, 3], 0.5, 2) },
  },
  cosine_embedding_loss: { req: () => [seq([2, 3]), t.add(seq([2, 3]), 0.1), t.tensor([1, -1])] },
  cross_entropy: { req: () => [logits(), classes()] },
  ctc_loss: {
    req: () => [t.logSoftmax(seq([6, 1, 4]), 2), ints([[1, 2]]), ints([6]), ints([2])],
    probe: {
      blank: 3,
      zeroInfinity: probe(true, {}, () => [
        t.logSoftmax(seq([6, 1, 4]), 2),
        ints([[1, 2]]),
        ints([1]),
        ints([2]),
      ]),
    },
  },
  gaussian_nll_loss: { req: () => [seq([2, 3]), seq([2, 3], 0, 1), filled([2, 3], 0.25)] },
  hinge_embedding_loss: {
    req: () => [
      seq([2, 3]),
      t.tensor([
        [1, -1, 1],
        [-1, -1, 1],
      ]),
    ],
  },
  huber_loss: { req: () => [seq([2, 3]), seq([2, 3], 1, -1)], probe: { weight: seq([2, 3], 0.5, 2) } },
  kl_div: { req: () => [t.logSoftmax(seq([2, 3]), 1), t.softmax(seq([2, 3], 1, 0), 1)] },
  l1_loss: { req: () => [seq([2, 3]), seq([2, 3], 1, -1)], probe: { weight: seq([2, 3], 0.5, 2) } },
  margin_ranking_loss: { req: () => [seq([4]), seq([4], 0.5, -0.5), t.tensor([1, -1, 1, -1])] },
  mse_loss: { req: () => [seq([2, 3]), seq([2, 3], 1, -1)], probe: { weight: seq([2, 3], 0.5, 2) } },
  multi_margin_loss: { req: () => [logits(), classes()], probe: { p: 2 } },
  multilabel_margin_loss: {
    req: () => [
      seq([2, 4]),
      ints([
        [3, 0, -1, 1],
        [1, 2, -1, 0],
      ]),
    ],
  },
  multilabel_soft_margin_loss: {
    req: () => [
      seq([2, 3]),
      t.tensor([
        [1, 0, 1],
        [0, 1, 1],
      ]),
    ],
  },
  nll_loss: { req: () => [t.logSoftmax(logits(), 1), classes()] },
  poisson_nll_loss: {
    req: () => [
      seq([2, 3], 0.1, 2),
      t.tensor([
        [2, 3, 0],
        [1, 4, 2],
      ]),
    ],
    probe: { eps: probe(0.5, { logInput: false }) },
  },
  smooth_l1_loss: { req: () => [seq([2, 3]), seq([2, 3], 1, -1)] },
  soft_margin_loss: {
    req: () => [
      seq([2, 3]),
      t.tensor([
        [1, -1, 1],
        [-1, -1, 1],
      ]),
    ],
  },
  // The negative near the positive, far from the anchor: the distance swap then matters.
  triplet_margin_loss: {
    req: () => [seq([2, 3]), seq([2, 3], 2, -2), seq([2, 3], 2.1, -1.9)],
    probe: { p: 1, eps: 1 },
  },
  triplet_margin_with_distance_loss: { req: () => [seq([2, 3]), seq([2, 3], 2, -2), seq([2, 3], 2.1, -1.9)] },
};

const mha = () => [
  seq([3, 2, 4]),
  seq([3, 2, 4], 1, -1),
  seq([3, 2, 4], -1, 2),
  4,
  2,
  seq([12, 4], -0.5, 0.5),
  seq([12], -0.1, 0.1),
  null,
  null,
  false,
  0.5,
  seq([4, 4], 0.5, -0.5),
  seq([4], 0, 0.1),
];
const qkv = () => [seq([1, 2, 3, 4]), seq([1, 2, 3, 4], 1, -1), seq([1, 2, 3, 4], -1, 2)];

const NN_CASES: Record<string, Case> = {
  multi_head_attention_forward: {
    req: mha,
    ctx: { qProjWeight: seq([4, 4]), kProjWeight: seq([4, 4], 1, -1), vProjWeight: seq([4, 4], 0, 1) },
    probe: {
      training: false,
      keyPaddingMask: bools([
        [false, true, false],
        [false, false, false],
      ]),
      attnMask: seq([3, 3], 0, -1),
      qProjWeight: probe(seq([4, 4], 2, 1), { useSeparateProjWeight: true }),
      kProjWeight: probe(seq([4, 4], 2, 1), { useSeparateProjWeight: true }),
      vProjWeight: probe(seq([4, 4], 2, 1), { useSeparateProjWeight: true }),
      staticK: seq([4, 3, 2]),
      staticV: seq([4, 3, 2]),
      averageAttnWeights: false,
    },
  },
  scaled_dot_product_attention: {
    req: qkv,
    probe: {
      attnMask: seq([3, 3], 0, -1),
      scale: 0.1,
      dropoutP: 0.5,
      enableGqa: probe(true, {}, () => [
        seq([1, 2, 3, 4]),
        seq([1, 1, 3, 4], 1, -1),
        seq([1, 1, 3, 4], -1, 2),
      ]),
    },
  },
  bilinear: { req: () => [seq([2, 3]), seq([2, 4]), seq([2, 3, 4])], probe: { bias: t.tensor([1, 2]) } },
  conv1d: { req: () => [seq([1, 2, 7]), seq([2, 2, 3])], probe: { bias: t.tensor([1, 2]) } },
  conv2d: { req: () => [img(), seq([2, 2, 3, 3])], probe: { bias: t.tensor([1, 2]) } },
  conv3d: { req: () => [seq([1, 2, 5, 5, 5]), seq([2, 2, 3, 3, 3])], probe: { bias: t.tensor([1, 2]) } },
  conv_tbc: { req: () => [seq([5, 1, 2]), seq([3, 2, 2]), t.tensor([1, 2])], probe: { pad: 1 } },
  conv_transpose1d: { req: () => [seq([1, 2, 5]), seq([2, 2, 3])], probe: { bias: t.tensor([1, 2]) } },
  conv_transpose2d: { req: () => [img(), seq([2, 2, 3, 3])], probe: { bias: t.tensor([1, 2]) } },
  conv_transpose3d: {
    req: () => [seq([1, 2, 3, 3, 3]), seq([2, 2, 3, 3, 3])],
    probe: { bias: t.tensor([1, 2]) },
  },
  linear: { req: () => [seq([2, 3]), seq([4, 3])], probe: { bias: t.tensor([1, 2, 3, 4]) } },
  cosine_similarity: { req: () => [seq([2, 3]), seq([2, 3], 0, 1)], probe: { eps: 10 } },
  pairwise_distance: { req: () => [seq([2, 3]), seq([2, 3], 0, 1)], probe: { p: 1 } },
  pdist: { req: () => [seq([4, 3])], probe: { p: 1 } },
  alpha_dropout: { req: () => [x4()], ctx: { training: true } },
  feature_alpha_dropout: { req: () => [x4()], ctx: { training: true } },
  dropout1d: { req: () => [seq([2, 4, 3])] },
  batch_norm: {
    req: () => [seq([4, 3]), t.zeros([3]), t.ones([3])],
    probe: {
      weight: t.tensor([1, 2, 3]),
      bias: t.tensor([1, 2, 3]),
      momentum: probe(0.5, { training: true }),
    },
  },
  group_norm: { req: () => [seq([2, 4, 3]), 2], probe: { weight: seq([4]), bias: seq([4]), eps: 1 } },
  instance_norm: {
    req: () => [seq([2, 3, 4])],
    probe: {
      runningMean: t.zeros([3]),
      runningVar: t.ones([3]),
      weight: t.tensor([1, 2, 3]),
      bias: t.tensor([1, 2, 3]),
      eps: 1,
    },
    skip: {
      momentum: 'moves only the running statistics given by name; checked in "the representative arguments"',
    },
  },
  layer_norm: { req: () => [seq([2, 3, 4]), [4]], probe: { weight: seq([4]), bias: seq([4]), eps: 1 } },
  local_response_norm: { req: () => [seq([2, 4, 3]), 2] },
  normalize: { req: () => [seq([2, 3])], probe: { p: 1, eps: 10, out: t.zeros([2, 3]) } },
  rms_norm: { req: () => [seq([2, 3, 4]), [4]], probe: { weight: seq([4]), eps: 1 } },
  embedding: {
    req: () => [ints([0, 2, 1, 2]), seq([4, 3])],
    grads: [1],
    probe: { normType: probe(1, { maxNorm: 1 }) },
  },
  // Index 2 twice: scaleGradByFreq then scales its gradient.
  embedding_bag: {
    req: () => [
      ints([
        [0, 2],
        [2, 3],
      ]),
      seq([4, 3]),
    ],
    grads: [1],
    probe: {
      offsets: ints([0, 1]),
      mode: 'sum',
      paddingIdx: 3,
      normType: probe(1, { maxNorm: 1 }),
      perSampleWeights: seq([2, 2]),
      includeLastOffset: probe(true, { offsets: ints([0, 1, 3]) }, () => [ints([0, 2, 1, 3]), seq([4, 3])]),
    },
  },
  one_hot: { req: () => [ints([0, 2, 1])], probe: { numClasses: 5 } },
  channel_shuffle: { req: () => [x4(), 2] },
  native_channel_shuffle: { req: () => [x4(), 2] },
  pixel_shuffle: { req: () => [x4(), 2] },
  pixel_unshuffle: { req: () => [seq([1, 2, 4, 4]), 2] },
  affine_grid: { req: () => [seq([1, 2, 3]), [1, 1, 2, 3]] },
  fold: { req: () => [seq([1, 8, 4]), [3, 3], 2] },
  grid_sample: {
    req: () => [seq([1, 1, 3, 3]), seq([1, 2, 2, 2], -1.5, 1.5)],
    probe: { mode: 'nearest', paddingMode: 'border' },
  },
  interpolate: { req: () => [seq([1, 1, 3, 3])], ctx: { size: [5, 5] }, probe: { size: [4, 4] } },
  upsample: { req: () => [seq([1, 1, 3, 3])], ctx: { size: [5, 5] }, probe: { size: [4, 4] } },
  upsample_bilinear: { req: () => [seq([1, 1, 3, 3])] },
  upsample_nearest: { req: () => [seq([1, 1, 3, 3])] },
  pad: { req: () => [seq([1, 1, 3, 3]), [1, 1, 1, 1]], probe: { mode: 'reflect' } },
  unfold: { req: () => [img(), 2] },
  flatten: { req: () => [x4()], probe: { startDim: 1 } },
  gumbel_softmax: { req: () => [x4()] },
  glu: { req: () => [x4()] },
  prelu: { req: () => [x4(), filled([1], 0.25)] },
  threshold: { req: () => [x4(), 0.1, 2] },
  threshold_: { req: () => [x4(), 0.1, 2] },
  softplus: { req: () => [x4()], probe: { threshold: 1 } },
};

const POOL_INPUT: Record<string, () => t.Tensor> = {
  '1': () => seq([1, 2, 7], 0.1, 2),
  '2': () => seq([1, 2, 7, 7], 0.1, 2),
  '3': () => seq([1, 2, 7, 7, 7], 0.1, 2),
};

/** The pooling cases, by rank. */
function poolCase(name: string): Case | undefined {
  const m = /^(adaptive_|lp_|fractional_)?(max|avg|)_?(pool|unpool)(\d)d(_with_indices)?$/.exec(name);
  if (m === null) return undefined;
  const [, kind, op, what, rank] = m;
  const x = POOL_INPUT[rank];
  if (what === 'unpool') {
    const pooled = () => {
      const input = t.reshape(t.linspace(1, 2, 4 ** Number(rank)), [1, 1, ...Array(Number(rank)).fill(4)]);
      const pool = { '1': F.maxPool1dWithIndices, '2': F.maxPool2dWithIndices, '3': F.maxPool3dWithIndices }[
        rank
      ];
      return pool?.(input, 2) as [t.Tensor, t.Tensor];
    };
    return { req: () => [...pooled(), 2], probe: { stride: 3, outputSize: Array(Number(rank)).fill(5) } };
  }
  if (kind === 'adaptive_') return { req: () => [x(), 2] };
  if (kind === 'lp_') return { req: () => [x(), 2, 3], probe: { stride: 1 } };
  if (kind === 'fractional_') {
    return {
      req: () => [seq([1, 2, ...Array(Number(rank)).fill(6)]), 2],
      // 6 to 4: the samples place the regions (6 to 3 would not depend on them).
      ctx: { outputSize: 4 },
      probe: {
        outputSize: 2,
        outputRatio: probe(0.5, { outputSize: null }),
        _randomSamples: filled([1, 2, Number(rank)], 0.5),
      },
    };
  }
  const countIncludePad = probe(false, { padding: 1 });
  return op === 'avg'
    ? { req: () => [x(), 3], probe: { stride: 1, countIncludePad } }
    : { req: () => [x(), 3], probe: { stride: 1 } };
}

/** The case of functional `name` (PyTorch's snake_case name). */
function functionalCase(name: string): Case {
  return LOSS_CASES[name] ?? NN_CASES[name] ?? poolCase(name) ?? ONE_TENSOR;
}

// --- the checks ----------------------------------------------------------------------------

/** PyTorch's parameters, positional ones in order and keyword-only ones, camelCased. */
function pytorchNames(py: PyEntry): { positional: string[]; keyword: string[] } {
  const positional = py.params.filter((p) => p.kind === 'positional').map((p) => camelCase(p.name));
  const keyword = py.params.filter((p) => p.kind === 'keyword').map((p) => camelCase(p.name));
  return { positional, keyword };
}

function checkNames(label: string, sig: Signature, py: PyEntry, extras: string[] = []): void {
  const { positional, keyword } = pytorchNames(py);
  assert.deepEqual(sig.params.slice(0, sig.positional), positional, `${label}: positional parameters`);
  assert.deepEqual([...sig.keywordOnly].sort(), [...keyword].sort(), `${label}: keyword-only parameters`);
  assert.deepEqual([...sig.extra], extras, `${label}: tsddp's own options`);
  const pyRequired = py.params.filter((p) => p.kind === 'positional' && !('default' in p)).length;
  assert.ok(sig.required.length <= pyRequired, `${label}: requires no more than PyTorch`);
  for (const p of Object.keys(sig.unsupported)) {
    const def = py.params.find((q) => camelCase(q.name) === p)?.default;
    assert.deepEqual(sig.unsupported[p], def, `${label}: unsupported ${p} accepts PyTorch's default`);
  }
}

/** The PyTorch default of `param` as an argument (undefined where it is no plain value: a function). */
function defaultOf(py: PyEntry, param: string): unknown {
  const d = py.params.find((p) => camelCase(p.name) === param)?.default;
  return typeof d === 'object' && d !== null && !Array.isArray(d) ? undefined : d;
}

type Call = (args: unknown[], nReq: number) => string;

/**
 * Checks one optional parameter: the probe by name changes the outcome (or is refused by
 * name if unsupported, or changes nothing if inert), and the probe in its PyTorch position
 * gives the same outcome as by name.
 */
function checkParam(label: string, sig: Signature, py: PyEntry, c: Case, param: string, call: Call): void {
  const spec = probeOf(
    c,
    param,
    py.params.find((p) => camelCase(p.name) === param),
  );
  assert.ok(spec, `${label}: no probe for ${param} (add one to the case)`);
  const make = spec.req ?? c.req;
  const ctx: Record<string, unknown> = { ...c.ctx, ...spec.ctx };
  delete ctx[param];
  const withOptions = (r: unknown[], o: Record<string, unknown>) => (Object.keys(o).length ? [...r, o] : r);
  const nReq = sig.required.length;
  const baseline = call(withOptions(make(), ctx), nReq);
  const named = call(withOptions(make(), { ...ctx, [param]: spec.value }), nReq);
  const what = `${label}(${param}=${JSON.stringify(picture(spec.value))})`;
  if (param in sig.unsupported) {
    assert.match(named, new RegExp(`^TypeError: .*${param}=`), `${what}: refused by name`);
  } else if (sig.inert.includes(param)) {
    assert.equal(named, baseline, `${what}: accepted without effect, as in PyTorch`);
  } else {
    assert.notEqual(named, baseline, `${what}: the value changes nothing (ignored?)`);
  }
  const i = sig.params.indexOf(param);
  if (i >= sig.positional) return;
  const before = sig.params.slice(nReq, i).map((p) => (p in ctx ? ctx[p] : defaultOf(py, p)));
  const tail = Object.fromEntries(Object.entries(ctx).filter(([k]) => sig.params.indexOf(k) > i));
  const positional = call(withOptions([...make(), ...before, spec.value], tail), nReq);
  assert.equal(positional, named, `${what}: positional (position ${i}) and by name differ`);
}

/** The checks every callable gets: too many positional arguments and an unknown option are TypeErrors naming them. */
function checkRefusals(label: string, sig: Signature, run: (args: unknown[]) => unknown): void {
  const tooMany = Array.from({ length: sig.positional + 1 }, () => 0);
  assert.throws(
    () => run(tooMany),
    (e: Error) =>
      e instanceof TypeError &&
      e.message.includes(`takes at most ${sig.positional} positional argument`) &&
      sig.params.slice(0, sig.positional).every((p) => e.message.includes(p)),
    `${label}: one positional argument too many`,
  );
  assert.throws(
    () => run([{ bogusOption: 1 }]),
    (e: Error) => e instanceof TypeError && /unknown option 'bogusOption'/.test(e.message),
    `${label}: an unknown option`,
  );
}

function checkCallable(
  label: string,
  sigName: string,
  py: PyEntry,
  c: Case,
  call: Call,
  run: (a: unknown[]) => unknown,
) {
  const sig = signatureOf(sigName);
  assert.ok(sig, `${label}: no signature declared`);
  checkNames(label, sig, py, EXTRAS[sigName] ?? []);
  assert.equal(c.req().length, sig.required.length, `${label}: the case gives the required arguments`);
  checkRefusals(label, sig, run);
  const optional = sig.params.slice(sig.required.length);
  for (const param of optional) {
    if (c.skip?.[param]) continue;
    checkParam(label, sig, py, c, param, call);
  }
}

test('the fixture lists every module class and nn.functional function tsddp exports', () => {
  assert.equal(
    PY.torch.split('+')[0],
    t.buildInfo().torchVersion,
    'signatures.json is of the torch tsddp builds against',
  );
  const modules = Object.entries(nn)
    .filter(([, v]) => typeof v === 'function' && v.prototype instanceof nn.Module)
    .map(([k]) => k)
    .filter((k) => !ABSTRACT_BASES.includes(k));
  assert.deepEqual(modules.sort(), Object.keys(PY.modules).sort());
  const functions = Object.entries(F)
    .filter(([, v]) => typeof v === 'function')
    .map(([k]) => k)
    .filter((k) => !TSDDP_FUNCTIONS.includes(k));
  assert.deepEqual(functions.sort(), Object.keys(PY.functional).map(camelCase).sort());
});

for (const [name, py] of Object.entries(PY.modules)) {
  if (CONTAINERS.includes(name) || name === 'Identity') continue;
  test(`nn.${name}: PyTorch's parameters, each honoured or refused by name`, () => {
    const Cls = moduleClass(name);
    const run = (args: unknown[]) => new Cls(...args);
    checkCallable(`nn.${name}`, name, py, moduleCase(name), (args) => outcome(() => run(args)), run);
  });
}

for (const [pyName, py] of Object.entries(PY.functional)) {
  const name = camelCase(pyName);
  test(`F.${name}: PyTorch's parameters, each honoured or refused by name`, () => {
    const fn = fnOf(pyName);
    const c = functionalCase(pyName);
    const call: Call = (args, nReq) => callOutcome(fn, args, nReq, c.grads);
    checkCallable(`F.${name}`, name, py, c, call, (args) => fn(...args));
  });
}

// --- the representative arguments, and the messages ---------------------------------------

const close = (a: t.Tensor, b: t.Tensor) => t.allclose(a, b, { rtol: 0, atol: 0 });

test("the representative arguments do what PyTorch's do, positional or by name", () => {
  t.tidy(() => {
    // The calls of the issue, as TypeScript accepts them.
    const conv = new nn.Conv2d(1, 32, 3, 2);
    assert.deepEqual(conv.stride, [2, 2]);
    assert.deepEqual(conv.forward(t.zeros([1, 1, 9, 9])).shape, [1, 32, 4, 4]);
    assert.deepEqual(new nn.Conv2d(1, 32, 3, 1, 1).padding, [1, 1]);
    assert.equal(new nn.Linear(3, 4, false).bias, null);
    const drop = new nn.Dropout(0.3, true);
    assert.equal(drop.p, 0.3);
    assert.equal(drop.inplace, true);
    assert.equal(new nn.BatchNorm2d(3, 0.1).eps, 0.1);
    assert.equal(new nn.BatchNorm2d(3, 1e-5, 0.2).momentum, 0.2);
    const pool = new nn.MaxPool2d(2, 1);
    assert.equal(pool.stride, 1);
    assert.deepEqual(pool.forward(t.zeros([1, 1, 4, 4])).shape, [1, 1, 3, 3]);
    const x = seq([2, 3]);
    assert.ok(close(F.logSoftmax(x, 0), F.logSoftmax(x, { dim: 0 })));
    assert.ok(!close(F.logSoftmax(x, 0), F.logSoftmax(x, 1)));
    assert.equal(F.logSoftmax(x, 1, 3, 'float64').dtype, 'float64');
    const im = seq([1, 1, 3, 3]);
    assert.deepEqual(F.interpolate(im, [4, 5]).shape, [1, 1, 4, 5]);
    assert.deepEqual(F.interpolate(im, null, 2).shape, [1, 1, 6, 6]);
    assert.ok(
      close(
        F.interpolate(im, null, 2, 'bilinear', true),
        F.interpolate(im, { scaleFactor: 2, mode: 'bilinear', alignCorners: true }),
      ),
    );
    const w = t.tensor([1, 2, 3]);
    assert.ok(
      close(F.crossEntropy(logits(), classes(), w), F.crossEntropy(logits(), classes(), { weight: w })),
    );
    assert.ok(!close(F.crossEntropy(logits(), classes(), w), F.crossEntropy(logits(), classes())));
    // instanceNorm's momentum moves the running mean given by name.
    const rm = [t.zeros([3]), t.zeros([3])];
    F.instanceNorm(seq([2, 3, 4], 0, 4), rm[0], t.ones([3]), { momentum: 0.5 });
    F.instanceNorm(seq([2, 3, 4], 0, 4), { runningMean: rm[1], runningVar: t.ones([3]), momentum: 0.25 });
    assert.ok(close(t.mul(rm[0], 0.5), rm[1]), 'momentum 0.25 moves half as far as 0.5');
  });
});

test("PyTorch's deprecated size_average and reduce set the reduction, as there", () => {
  t.tidy(() => {
    assert.equal(new nn.MSELoss(false).reduction, 'sum');
    assert.equal(new nn.CrossEntropyLoss(null, null, -100, false).reduction, 'none');
    assert.equal(new nn.NLLLoss({ sizeAverage: true, reduce: true }).reduction, 'mean');
    const [a, b] = [seq([2, 3]), seq([2, 3], 1, -1)];
    assert.ok(close(F.mseLoss(a, b, false), F.mseLoss(a, b, { reduction: 'sum' })));
    assert.ok(close(F.l1Loss(a, b, null, false), F.l1Loss(a, b, { reduction: 'none' })));
  });
});

test('refusals name the argument: position, unknown name, twice, unsupported value, keyword-only, missing', () => {
  t.tidy(() => {
    const x = seq([2, 3]);
    const anyConv = nn.Conv2d as unknown as Ctor;
    assert.throws(
      () => new anyConv(1, 2, 3, 1, 0, 1, 1, true, 'zeros', 'cpu', 'float32', 9),
      /^TypeError: Conv2d\(\) takes at most 11 positional arguments \(inChannels, outChannels, kernelSize, stride, padding, dilation, groups, bias, paddingMode, device, dtype\) but 12 were given$/,
    );
    assert.throws(
      () => new nn.Conv2d(1, 2, 3, { strides: 2 } as never),
      /unknown option 'strides' \(did you mean 'stride'\?\)/,
    );
    assert.throws(
      () => new nn.Conv2d(1, 2, 3, { padding_mode: 'zeros' } as never),
      /did you mean 'paddingMode'\?/,
    );
    assert.throws(
      () => F.logSoftmax(x, { dimm: 1 } as never),
      /^TypeError: logSoftmax\(\): unknown option 'dimm' \(did you mean 'dim'\?\); logSoftmax takes dim, _stacklevel, dtype$/,
    );
    assert.throws(
      () => new nn.Conv2d(1, 2, 3, 2, { stride: 2 }),
      /Conv2d\(\) got multiple values for argument 'stride'/,
    );
    assert.throws(
      () => new nn.Conv2d(1, 2, 3, { paddingMode: 'reflect' as never }),
      /^TypeError: Conv2d\(\): paddingMode='reflect' is not supported by tsddp \(only 'zeros', PyTorch's default\)/,
    );
    assert.throws(
      () => F.maxPool2d(seq([1, 1, 4, 4]), 2, { returnIndices: true }),
      /returnIndices=true is not supported.*maxPool2dWithIndices/,
    );
    assert.throws(
      () => (F.gelu as Fn)(x, 'tanh'),
      /gelu\(\) takes at most 1 positional argument \(input\) but 2 were given; approximate is keyword-only/,
    );
    assert.throws(
      () => new (nn.Linear as unknown as Ctor)(3),
      /^TypeError: Linear\(\) missing required argument 'outFeatures'$/,
    );
    assert.throws(
      () => new (nn.Sigmoid as unknown as Ctor)(1),
      /Sigmoid\(\) takes at most 0 positional arguments/,
    );
    assert.throws(
      () => new (nn.ZeroPad2d as unknown as Ctor)(1, 5),
      /ZeroPad2d\(\) takes at most 1 positional argument \(padding\)/,
    );
    class Custom extends nn.Module {}
    assert.throws(() => new (Custom as unknown as Ctor)(1), /^TypeError: Custom\(\) takes no arguments/);
  });
});

test("the containers take their entries (and refuse more); Identity takes anything, as PyTorch's", () => {
  t.tidy(() => {
    const lin = () => new nn.Linear(2, 2);
    assert.equal(new nn.Sequential(lin(), lin()).length, 2);
    assert.throws(() => new nn.Sequential(lin(), 5 as never), TypeError);
    assert.throws(
      () => new (nn.ModuleList as unknown as Ctor)([lin()], 5),
      /ModuleList\(\) takes at most 1 positional argument \(modules\)/,
    );
    assert.throws(() => new (nn.ModuleDict as unknown as Ctor)({}, 5), /ModuleDict\(\) takes at most 1/);
    assert.throws(
      () => new (nn.ParameterList as unknown as Ctor)([], 5),
      /ParameterList\(\) takes at most 1/,
    );
    assert.throws(
      () => new (nn.ParameterDict as unknown as Ctor)({}, 5),
      /ParameterDict\(\) takes at most 1/,
    );
    assert.throws(() => new (nn.Container as unknown as Ctor)({}, 5), /Container\(\) takes at most 1/);
    assert.deepEqual(
      new nn.ModuleDict({ a: lin() }).keys(),
      ['a'],
      'a plain object is the entries, not options',
    );
    for (const name of CONTAINERS) assert.ok(PY.modules[name], name);
    assert.ok(new nn.Identity(54, { unusedArgument1: 0.1 }) instanceof nn.Identity);
  });
});

test('forward() options are taken by name: a positional mask is refused by name, never read as no options', () => {
  const mha = new nn.MultiheadAttention(4, 2);
  const q = t.ones([3, 1, 4]);
  const mask = t.zeros([1, 3], { dtype: 'bool' });
  assert.throws(
    () => mha.forward(q, q, q, mask as never),
    /MultiheadAttention\.forward: its optional arguments are given by name .*keyPaddingMask.*got Tensor/,
  );
  assert.throws(
    () => mha.forward(q, q, q, { keyPaddingMsk: mask } as never),
    /unknown option 'keyPaddingMsk'/,
  );
  assert.deepEqual(mha.forward(q, q, q, { keyPaddingMask: mask })[0].shape, [3, 1, 4]);
  const layer = new nn.TransformerEncoderLayer(4, 2, { dimFeedforward: 8 });
  const stack = new nn.TransformerEncoder(layer, 1);
  assert.throws(() => layer.forward(q, mask as never), /TransformerEncoderLayer\.forward: .*srcMask/);
  assert.throws(() => stack.forward(q, mask as never), /TransformerEncoder\.forward: .*mask/);
  const model = new nn.Transformer({
    dModel: 4,
    nhead: 2,
    numEncoderLayers: 1,
    numDecoderLayers: 1,
    dimFeedforward: 8,
  });
  assert.throws(() => model.forward(q, q, mask as never), /Transformer\.forward: .*srcMask/);
});
