// torch.optim.swa_utils: stochastic weight averaging and exponential moving averages of a
// model's weights (AveragedModel with the averaging functions), the SWA learning-rate
// schedule (SWALR) and the BatchNorm statistics pass over the data (updateBn). Each runs
// PyTorch's computation op for op (torch/optim/swa_utils.py), so the averages are
// PyTorch's bit for bit; test/swa-utils.test.ts compares them with PyTorch's.
import { noGrad } from '../autograd/index.ts';
import * as t from '../core/index.ts';
import { checkOptions, optionNames } from '../core/options.ts';
import { deepCopyModule } from '../nn/copy.ts';
import { BatchNorm, Module } from '../nn/index.ts';
import { cCos } from './c-math.ts';
import { LRScheduler } from './lr-scheduler/base.ts';
import type { Optimizer } from './optimizer.ts';

/** One average: the new value of `averaged` from it, `current` and the count so far (an int64 0-dim tensor). */
export type AvgFn = (averaged: t.Tensor, current: t.Tensor, numAveraged: t.Tensor) => t.Tensor;
/** Averages lists in place (PyTorch's foreach form): `averaged[i]` from itself and `current[i]`. */
export type MultiAvgFn = (averaged: t.Tensor[], current: t.Tensor[], numAveraged: t.Tensor) => void;

const isFloat = (x: t.Tensor) => x.isFloatingPoint();

/** PyTorch's get_ema_avg_fn: decay x average + (1 - decay) x current. */
export function getEmaAvgFn(decay = 0.999): AvgFn {
  return (ema, current) => ema.mul(decay).add(current.mul(1 - decay));
}

/** PyTorch's get_swa_avg_fn: the running mean, average + (current - average) / (n + 1). */
export function getSwaAvgFn(): AvgFn {
  return (averaged, current, n) => averaged.add(current.sub(averaged).div(n.add(1)));
}

/** PyTorch's get_ema_multi_avg_fn: lerp toward the current weights by 1 - decay (floats), else the EMA formula. */
export function getEmaMultiAvgFn(decay = 0.999): MultiAvgFn {
  return (ema, current) => {
    if (ema.length === 0) return;
    if (isFloat(ema[0]))
      ema.forEach((p, i) => {
        p.lerp_(current[i], 1 - decay);
      });
    else
      ema.forEach((p, i) => {
        p.copy_(p.mul(decay).add(current[i].mul(1 - decay)));
      });
  };
}

/** PyTorch's get_swa_multi_avg_fn: lerp by 1 / (n + 1) (a float32 tensor, read as a scalar), else the running mean. */
export function getSwaMultiAvgFn(): MultiAvgFn {
  return (averaged, current, n) => {
    if (averaged.length === 0) return;
    if (isFloat(averaged[0])) {
      const weight = t.tidy(() => t.full([], 1).div(n.add(1)).item());
      averaged.forEach((p, i) => {
        p.lerp_(current[i], weight);
      });
    } else
      averaged.forEach((p, i) => {
        p.add_(current[i].sub(p).div(n.add(1)));
      });
  };
}

export interface AveragedModelOptions {
  /** How one tensor is averaged (default: SWA's running mean). */
  avgFn?: AvgFn;
  /** How a list is averaged in place; wins over avgFn (e.g. getEmaMultiAvgFn(0.999)). */
  multiAvgFn?: MultiAvgFn;
  /** Average the buffers too (BatchNorm statistics); else they are copied from the model. */
  useBuffers?: boolean;
  /** Where the average lives (default: where the model is). */
  device?: t.DeviceLike;
}

/**
 * torch.optim.swa_utils.AveragedModel: a deep copy of `model` (submodule `module`) whose
 * weights updateParameters() averages, and the count `n_averaged` (an int64 buffer): the
 * state dict has PyTorch's keys.
 */
export class AveragedModel<M extends Module = Module> extends Module {
  readonly module: M;
  readonly avgFn: AvgFn | undefined;
  readonly multiAvgFn: MultiAvgFn | undefined;
  readonly useBuffers: boolean;

  constructor(model: M, opts: AveragedModelOptions = {}) {
    super();
    const known = new Set(['avgFn', 'multiAvgFn', 'useBuffers', 'device']);
    for (const k of Object.keys(opts))
      if (!known.has(k)) throw new TypeError(`AveragedModel: unknown option '${k}'`);
    this.module = deepCopyModule(model);
    if (opts.device !== undefined) this.module.to(opts.device);
    this.registerBuffer('n_averaged', t.zeros([], { dtype: 'int64', device: opts.device }));
    this.avgFn = opts.avgFn;
    this.multiAvgFn = opts.multiAvgFn;
    this.useBuffers = opts.useBuffers ?? false;
  }

  /** How many times updateParameters() has averaged. */
  get nAveraged(): t.Tensor {
    return this._buffers.get('n_averaged') as t.Tensor;
  }

  // biome-ignore lint/suspicious/noExplicitAny: the averaged module's own forward signature
  override forward(...args: any[]): any {
    return this.module.forward(...args);
  }

  /** Folds `model`'s current weights into the average (the first call copies them). */
  updateParameters(model: M): void {
    noGrad(() =>
      t.tidy(() => {
        const mine = this.useBuffers
          ? [...this.module.parameters(), ...this.module.buffers()]
          : this.parameters();
        const theirs = this.useBuffers ? [...model.parameters(), ...model.buffers()] : model.parameters();
        if (mine.length !== theirs.length)
          throw new RangeError(`AveragedModel.updateParameters: ${theirs.length} tensors for ${mine.length}`);
        const n = this.nAveraged.item() as number;
        const current = theirs.map((p, i) => p.detach().to(mine[i].device));
        const averaged = mine.map((p) => p.detach());
        if (n === 0)
          averaged.forEach((p, i) => {
            p.copy_(current[i]);
          });
        else this.average(averaged, current);
        if (!this.useBuffers) {
          const own = this.module.buffers();
          model.buffers().forEach((b, i) => {
            own[i].detach().copy_(b.detach().to(own[i].device));
          });
        }
        this.nAveraged.add_(1);
      }),
    );
  }

  /** PyTorch's choice: the list function by device and dtype, else avgFn tensor by tensor. */
  private average(averaged: t.Tensor[], current: t.Tensor[]): void {
    if (this.multiAvgFn === undefined && this.avgFn !== undefined) {
      const avg = this.avgFn;
      averaged.forEach((p, i) => {
        p.copy_(avg(p, current[i], this.nAveraged.to(p.device)));
      });
      return;
    }
    for (const [device, idx] of groupByDeviceAndDtype(averaged)) {
      const n = this.nAveraged.to(device);
      const mine = idx.map((i) => averaged[i]);
      const theirs = idx.map((i) => current[i]);
      // PyTorch's list kernels serve only accelerators; on the CPU it averages tensor by tensor.
      if (this.multiAvgFn !== undefined) this.multiAvgFn(mine, theirs, n);
      else if (device.startsWith('cuda')) getSwaMultiAvgFn()(mine, theirs, n);
      else {
        const avg = getSwaAvgFn();
        mine.forEach((p, i) => {
          p.copy_(avg(p, theirs[i], n));
        });
      }
    }
  }
}

/** Indices of `xs` grouped by device and dtype, groups in order of first appearance. */
function groupByDeviceAndDtype(xs: t.Tensor[]): [string, number[]][] {
  const groups = new Map<string, { device: string; idx: number[] }>();
  xs.forEach((x, i) => {
    const key = `${x.device}|${x.dtype}`;
    const g = groups.get(key) ?? { device: x.device, idx: [] };
    g.idx.push(i);
    groups.set(key, g);
  });
  return [...groups.values()].map((g) => [g.device, g.idx]);
}

export interface SWALROptions {
  /** Epochs of the annealing from each group's lr to its swaLr (default 10). */
  annealEpochs?: number;
  /** 'cos' (default) or 'linear'. */
  annealStrategy?: 'cos' | 'linear';
  lastEpoch?: number;
}

const UPDATE_BN_OPTIONS = ['device', 'input'];
const SWALR_OPTIONS = optionNames<SWALROptions>({
  annealEpochs: true,
  annealStrategy: true,
  lastEpoch: true,
});

/**
 * torch.optim.swa_utils.SWALR: anneals each group's lr to its `swaLr` over `annealEpochs`
 * steps (cosine or linear), then holds it. Each group gets `swaLr` (PyTorch's swa_lr).
 */
export class SWALR extends LRScheduler {
  annealEpochs: number;
  _annealStrategy: 'cos' | 'linear';

  constructor(optimizer: Optimizer, swaLr: number | number[], options?: SWALROptions) {
    const opts = checkOptions('SWALR', options, SWALR_OPTIONS);
    super(optimizer, opts.lastEpoch ?? -1);
    const groups = optimizer.paramGroups;
    const lrs = Array.isArray(swaLr) ? swaLr : groups.map(() => swaLr);
    if (lrs.length !== groups.length)
      throw new RangeError(
        `SWALR: ${lrs.length} values for swaLr, but the optimizer has ${groups.length} groups`,
      );
    groups.forEach((g, i) => {
      g.swaLr = lrs[i];
    });
    const strategy = opts.annealStrategy ?? 'cos';
    if (strategy !== 'cos' && strategy !== 'linear')
      throw new RangeError(`anneal_strategy must be one of 'cos' or 'linear', instead got ${strategy}`);
    const epochs = opts.annealEpochs ?? 10;
    if (!Number.isInteger(epochs) || epochs < 0)
      throw new RangeError(`anneal_epochs must be equal or greater than 0, got ${epochs}`);
    this._annealStrategy = strategy;
    this.annealEpochs = epochs;
    this.initialStep();
  }

  private anneal(x: number): number {
    return this._annealStrategy === 'cos' ? (1 - cCos(Math.PI * x)) / 2 : x;
  }

  getLr(): number[] {
    let step = this._stepCount - 1;
    if (this.annealEpochs === 0) step = Math.max(1, step);
    const span = Math.max(1, this.annealEpochs);
    const prevAlpha = this.anneal(Math.max(0, Math.min(1, (step - 1) / span)));
    const alpha = this.anneal(Math.max(0, Math.min(1, step / span)));
    return this.optimizer.paramGroups.map((g) => {
      const swa = g.swaLr as number;
      const prev = prevAlpha === 1 ? swa : (g.lr - prevAlpha * swa) / (1 - prevAlpha);
      return swa * alpha + prev * (1 - alpha);
    });
  }

  protected override stateKeys(): string[] {
    return ['_annealStrategy', 'annealEpochs'];
  }
}

export interface UpdateBnOptions {
  /** Where the inputs go before the forward (default: where they are). */
  device?: t.DeviceLike;
  /** The model's input in a batch (default: the batch itself if a Tensor, else its first element). */
  input?: (batch: unknown) => t.Tensor;
}

/**
 * torch.optim.swa_utils.update_bn: recomputes every BatchNorm's running statistics as the
 * plain average over one pass of `loader` (momentum None), e.g. for the weights an
 * AveragedModel made. The model's training mode and the momenta are restored after.
 */
export async function updateBn(
  loader: AsyncIterable<unknown> | Iterable<unknown>,
  model: Module,
  options?: UpdateBnOptions,
): Promise<void> {
  const opts = checkOptions('updateBn', options, UPDATE_BN_OPTIONS);
  const momenta = new Map<BatchNorm, number | null>();
  for (const m of model.modules()) {
    if (m instanceof BatchNorm) {
      m.resetRunningStats();
      momenta.set(m, m.momentum);
    }
  }
  if (momenta.size === 0) return;
  const wasTraining = model.training;
  model.train();
  for (const m of momenta.keys()) m.momentum = null;
  try {
    for await (const batch of loader) {
      noGrad(() =>
        t.tidy(() => {
          let x = opts.input?.(batch) ?? firstInput(batch);
          if (opts.device !== undefined) x = x.to(opts.device);
          model.forward(x);
        }),
      );
    }
  } finally {
    for (const [m, momentum] of momenta) m.momentum = momentum;
    model.train(wasTraining);
  }
}

/** PyTorch's rule: a list or tuple gives its first element, anything else is the input. */
function firstInput(batch: unknown): t.Tensor {
  const x = Array.isArray(batch) ? batch[0] : batch;
  if (x instanceof t.Tensor) return x;
  throw new TypeError(
    'updateBn: a batch is neither a Tensor nor a list whose first element is one; pass { input: (batch) => tensor }',
  );
}
