// Muon, as torch.optim.Muon (momentum, then the update orthogonalised by a quintic
// Newton-Schulz iteration in bfloat16): PyTorch's _single_tensor_muon op for op (PyTorch
// has no other implementation). Two-dimensional parameters only, as there; the others
// (biases, embeddings) belong to an optimizer such as AdamW. Weight decay is decoupled
// and applied with the unadjusted learning rate; the update's learning rate is scaled
// by `adjustLrFn` for the matrix's shape. State per parameter: momentum_buffer.

import type { Tensor } from '../core/index.ts';
import * as t from '../core/index.ts';
import { optionNames } from '../core/options.ts';
import {
  flag,
  hyper,
  Optimizer,
  optimizerOptions,
  type ParamGroup,
  type ParamGroupInput,
  type ParamsInput,
} from './optimizer.ts';
import { mulScalar_, pyMax, stateTensor, withGrads } from './per-parameter.ts';

export interface MuonOptions {
  /** Learning rate (default 1e-3). */
  lr?: number;
  /** Decoupled weight decay (PyTorch: weight_decay; default 0.1). */
  weightDecay?: number;
  /** Momentum factor (default 0.95). */
  momentum?: number;
  /** Nesterov momentum (default true). */
  nesterov?: boolean;
  /** Coefficients (a, b, c) of the Newton-Schulz polynomial (PyTorch: ns_coefficients; default [3.4445, -4.775, 2.0315]). */
  nsCoefficients?: [number, number, number];
  /** Lower bound of the norm the iteration divides by (default 1e-7). */
  eps?: number;
  /** Newton-Schulz iterations, below 100 (PyTorch: ns_steps; default 5). */
  nsSteps?: number;
  /**
   * How the learning rate scales with the matrix's shape [A, B] (PyTorch: adjust_lr_fn):
   * 'original' or null (the default), sqrt(max(1, A / B)) (Keller Jordan's Muon);
   * 'match_rms_adamw', 0.2 * sqrt(max(A, B)) (Moonshot's, to reuse AdamW's settings).
   */
  adjustLrFn?: 'original' | 'match_rms_adamw' | null;
}

const OPTIONS = optionNames<MuonOptions>({
  lr: true,
  weightDecay: true,
  momentum: true,
  nesterov: true,
  nsCoefficients: true,
  eps: true,
  nsSteps: true,
  adjustLrFn: true,
});

function coefficientsOf(g: ParamGroup): [number, number, number] {
  const c = g.nsCoefficients;
  if (!Array.isArray(c) || c.length !== 3 || c.some((x) => typeof x !== 'number')) {
    throw new RangeError('Coefficients must be a tuple of exactly 3 values');
  }
  return [c[0], c[1], c[2]];
}

/**
 * PyTorch's _zeropower_via_newtonschulz: approximately orthogonalises `grad` (U S' V^T
 * with S' near 1), in bfloat16, on the wide orientation of the matrix.
 */
function zeropowerViaNewtonSchulz(
  grad: Tensor,
  [a, b, c]: [number, number, number],
  steps: number,
  eps: number,
) {
  if (steps >= 100)
    throw new RangeError('Number of steps must be less than 100 for computational efficiency');
  if (grad.dim() !== 2) throw new RangeError('Input tensor gradient must be a 2D matrix');
  const tall = grad.shape[0] > grad.shape[1];
  let ortho = grad.to({ dtype: 'bfloat16' });
  if (tall) ortho = ortho.t();
  ortho.div_(t.linalgVectorNorm(ortho, 2).clamp({ min: eps }));
  for (let i = 0; i < steps; i++) {
    const gram = ortho.matmul(ortho.t());
    const gramUpdate = t.addmm(gram, gram, gram, { beta: b, alpha: c });
    ortho = t.addmm(ortho, gramUpdate, ortho, { beta: a });
  }
  return tall ? ortho.t() : ortho;
}

/** PyTorch's _adjust_lr. */
function adjustLr(lr: number, fn: unknown, [rows, cols]: number[]): number {
  let ratio: number;
  if (fn === null || fn === undefined || fn === 'original') ratio = Math.sqrt(pyMax(1, rows / cols));
  else if (fn === 'match_rms_adamw') ratio = 0.2 * Math.sqrt(Math.max(rows, cols));
  else ratio = 1.0;
  return lr * ratio;
}

export class Muon extends Optimizer {
  constructor(params: ParamsInput<MuonOptions>, options?: MuonOptions) {
    const opts = optimizerOptions('Muon', options, OPTIONS);
    super(params, {
      lr: opts.lr ?? 1e-3,
      weightDecay: opts.weightDecay ?? 0.1,
      momentum: opts.momentum ?? 0.95,
      nesterov: opts.nesterov ?? true,
      nsCoefficients: opts.nsCoefficients ? [...opts.nsCoefficients] : [3.4445, -4.775, 2.0315],
      eps: opts.eps ?? 1e-7,
      nsSteps: opts.nsSteps ?? 5,
      adjustLrFn: opts.adjustLrFn ?? null,
    });
  }

  protected override validateGroup(g: ParamGroup): void {
    const lr = hyper(g, 'lr');
    const momentum = hyper(g, 'momentum');
    const wd = hyper(g, 'weightDecay');
    hyper(g, 'eps');
    hyper(g, 'nsSteps');
    coefficientsOf(g);
    if (!(lr >= 0)) throw new RangeError(`Learning rate should be >= 0 but is: ${lr}`);
    if (!(momentum >= 0)) throw new RangeError(`momentum should be >= 0 but is: ${momentum}`);
    if (!(wd >= 0)) throw new RangeError(`weight decay should be >= 0 but is: ${wd}`);
    const fn = g.adjustLrFn;
    if (fn !== null && fn !== undefined && fn !== 'original' && fn !== 'match_rms_adamw') {
      throw new RangeError(`Adjust learning rate function ${String(fn)} is not supported`);
    }
  }

  /** Muon takes two-dimensional parameters only, in every group (PyTorch checks at construction). */
  override addParamGroup(group: ParamGroupInput<object>): void {
    for (const p of Array.isArray(group?.params) ? group.params : []) {
      if (p instanceof t.Tensor && p.dim() !== 2) {
        throw new RangeError(
          `Muon only supports 2D parameters whereas we found a parameter with size: [${p.shape.join(', ')}]`,
        );
      }
    }
    super.addParamGroup(group);
  }

  protected stepGroup(group: ParamGroup): void {
    const { params, grads } = withGrads(group);
    const lr = hyper(group, 'lr');
    const weightDecay = hyper(group, 'weightDecay');
    const momentum = hyper(group, 'momentum');
    const nesterov = flag(group, 'nesterov');
    const coefficients = coefficientsOf(group);
    const nsSteps = hyper(group, 'nsSteps');
    const eps = hyper(group, 'eps');
    params.forEach((param, i) => {
      const grad = grads[i];
      if (grad.dim() !== 2) throw new RangeError('Param gradient must be a 2D matrix');
      const s = this.stateOf(param);
      if (!('momentum_buffer' in s)) s.momentum_buffer = t.zerosLike(grad).keep();
      const buf = stateTensor(s, 'momentum_buffer', 'Muon');
      t.tidy(() => {
        buf.lerp_(grad, 1 - momentum);
        const update = zeropowerViaNewtonSchulz(
          nesterov ? grad.lerp(buf, momentum) : buf,
          coefficients,
          nsSteps,
          eps,
        );
        const adjustedLr = adjustLr(lr, group.adjustLrFn, param.shape);
        mulScalar_(param, 1 - lr * weightDecay);
        param.add_(update, { alpha: -adjustedLr });
      });
    });
  }
}
