// Tiny models and deterministic data shared by the DDP workers and the single-process
// references in test/ddp.test.ts. Data come from closed-form formulas (not the RNG), so
// every process builds exactly the same batches.
import * as t from '../../src/index.ts';

const { nn } = t;

export const IN = 4;
export const OUT = 3;
export const LR = 0.05;
export const MOMENTUM = 0.9;
/** PyTorch's own DDP equivalence tolerances (test_c10d_common / distributed_test). */
export const RTOL = 1.3e-6;
export const ATOL = 5e-5;

/** Linear-ReLU-Linear. Parameters are drawn from the default generator seeded `seed`. */
export function mlp(seed: number, hidden = 8): t.nn.Module {
  t.manualSeed(seed);
  return new nn.Sequential(new nn.Linear(IN, hidden), new nn.ReLU(), new nn.Linear(hidden, OUT));
}

/** An MLP whose `extra` head is used only when forward's second argument is true. */
export class Branchy extends nn.Module {
  a: t.nn.Linear;
  b: t.nn.Linear;
  extra: t.nn.Linear;
  constructor(seed: number) {
    super();
    t.manualSeed(seed);
    this.a = new nn.Linear(IN, 8);
    this.b = new nn.Linear(8, OUT);
    this.extra = new nn.Linear(8, OUT);
  }
  override forward(x: t.Tensor, useExtra: boolean): t.Tensor {
    const h = this.a.forward(x).relu();
    const out = this.b.forward(h);
    return useExtra ? out.add(this.extra.forward(h)) : out;
  }
}

/**
 * A transformer with LayerDrop (stochastic depth, the usual reason for
 * find_unused_parameters in transformers): its second encoder layer (`extra`) runs only
 * when `useExtra`. Each row of x is one token of a single sequence.
 */
export class LayerDrop extends nn.Module {
  a: t.nn.Linear;
  first: t.nn.TransformerEncoderLayer;
  extra: t.nn.TransformerEncoderLayer;
  b: t.nn.Linear;
  constructor(seed: number) {
    super();
    t.manualSeed(seed);
    this.a = new nn.Linear(IN, 8);
    const layer = () =>
      new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16, dropout: 0, batchFirst: true });
    this.first = layer();
    this.extra = layer();
    this.b = new nn.Linear(8, OUT);
  }
  override forward(x: t.Tensor, useExtra: boolean): t.Tensor {
    let h = this.first.forward(this.a.forward(x).unsqueeze(0));
    if (useExtra) h = this.extra.forward(h);
    return this.b.forward(h.squeeze(0));
  }
}

/** Whether rank `rank` uses Branchy's extra head at `step`: unused everywhere at step 1, on rank 1 at step 2. */
export function usesExtra(step: number, rank: number): boolean {
  if (step === 1) return false;
  if (step === 2) return rank === 0;
  return true;
}

/** Conv-BatchNorm-ReLU-Linear on [n, 1, 4, 4] images: BatchNorm has running-stat buffers. */
export function convBn(seed: number): t.nn.Module {
  t.manualSeed(seed);
  return new nn.Sequential(
    new nn.Conv2d(1, 4, 3, { padding: 1 }),
    new nn.BatchNorm2d(4),
    new nn.ReLU(),
    new nn.Flatten(),
    new nn.Linear(64, OUT),
  );
}

/** Rows `[offset, offset + rows)` of batch `step`'s inputs, shaped [rows, ...inner]. */
export function inputs(step: number, offset: number, rows: number, inner: number[] = [IN]): t.Tensor {
  const width = inner.reduce((a, b) => a * b, 1);
  const data = new Float32Array(rows * width);
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < width; j++) {
      const row = offset + i;
      data[i * width + j] = Math.sin(0.37 * (row + 1) * (j + 2) + 1.3 * step) + 0.1 * ((row * 7 + j) % 5);
    }
  }
  return t.tensor(data, { shape: [rows, ...inner] });
}

/** Regression targets matching inputs(). */
export function targets(step: number, offset: number, rows: number): t.Tensor {
  const data = new Float32Array(rows * OUT);
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < OUT; j++)
      data[i * OUT + j] = Math.cos(0.21 * (offset + i + 1) * (j + 1) - 0.7 * step);
  }
  return t.tensor(data, { shape: [rows, OUT] });
}

/** Mean squared error over the batch: DDP's gradient average then equals the full-batch mean. */
export function mse(out: t.Tensor, target: t.Tensor): t.Tensor {
  return out.sub(target).pow(2).mean();
}

export function sgd(model: t.nn.Module): t.optim.SGD {
  return new t.optim.SGD(model.parameters(), { lr: LR, momentum: MOMENTUM });
}

/** Named float values of parameters (and, with `buffers`, buffers) for JSON transport. */
export function stateValues(model: t.nn.Module, buffers = false): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  const entries = buffers ? model.namedBuffers() : model.namedParameters();
  for (const [name, p] of entries) out[name] = floats(p);
  return out;
}

export function floats(x: t.Tensor): number[] {
  return t.tidy(() => Array.from(x.detach().to('float64').contiguous().toTypedArray() as Float64Array));
}
