// torch.nn.SyncBatchNorm: batch normalisation whose training statistics are those of the
// whole global batch, over every rank of a process group. Where PyTorch's runs on CUDA only
// (its kernels batch_norm_stats and batch_norm_gather_stats_with_counts are CUDA's), this
// one is composed from autograd ops and one differentiable all-reduce
// (native/src/differentiable_all_reduce.cc), so it runs on CPU and CUDA alike: each rank
// sums its channels (shifted by the running mean, which every rank holds the same, to keep
// the one-pass variance exact) in float64 with its element count; one all-reduce makes the
// global sums, and backward all-reduces their gradient, as PyTorch's backward all-reduces
// its sum_dy and sum_dy_xmu.
import { noGrad } from '../../autograd/index.ts';
import * as t from '../../core/index.ts';
import { native } from '../../core/native.ts';
import { wrap } from '../../core/tensor.ts';
import { isInitialized, type ProcessGroup, resolveGroup } from '../../distributed/process-group.ts';
import { type Args, bind, signature } from '../args.ts';
import type { Module } from '../module.ts';
import { _NormBase, BatchNorm, type BatchNormOptions } from './batchnorm.ts';

export interface SyncBatchNormOptions extends BatchNormOptions {
  /** The ranks whose batches are normalised together; default: the whole world. */
  processGroup?: ProcessGroup | null;
}

const SYNC = signature('SyncBatchNorm', {
  required: ['numFeatures'],
  optional: ['eps', 'momentum', 'affine', 'trackRunningStats', 'processGroup', 'device', 'dtype'],
  keywordOnly: ['bias'],
});

/** Batch normalisation over the global batch of a process group (torch.nn.SyncBatchNorm). */
export class SyncBatchNorm extends _NormBase {
  processGroup: ProcessGroup | null;

  constructor(...args: Args<typeof SYNC, { numFeatures: number } & SyncBatchNormOptions>) {
    super(SYNC, args, 'SyncBatchNorm', true);
    this.processGroup = bind<SyncBatchNormOptions>(SYNC, args, 'SyncBatchNorm').processGroup ?? null;
  }

  get numBatchesTracked(): t.Tensor | null {
    return this._buffers.get('num_batches_tracked') ?? null;
  }

  override forward(input: t.Tensor): t.Tensor {
    if (input.ndim < 2) throw new RangeError(`expected at least 2D input (got ${input.ndim}D input)`);
    if (input.shape[1] === 0)
      throw new RangeError('SyncBatchNorm number of input channels should be non-zero');
    const args = this.batchNormArgs();
    const group =
      args.useBatchStats && this.training && isInitialized() ? resolveGroup(this.processGroup) : null;
    if (group === null || group.size === 1 || !group.isMember) return this.batchNorm(input, args);
    return this.syncForward(input, group, args.runningMean, args.runningVar, args.factor);
  }

  private syncForward(
    input: t.Tensor,
    group: ProcessGroup,
    runningMean: t.Tensor | null,
    runningVar: t.Tensor | null,
    factor: number,
  ): t.Tensor {
    const c = input.shape[1];
    const dims = [0, ...Array.from({ length: input.ndim - 2 }, (_, i) => i + 2)];
    const shape = [1, c, ...Array.from({ length: input.ndim - 2 }, () => 1)];
    const count = input.numel() / c;
    const shift = (runningMean ?? t.zeros([c], { dtype: input.dtype, device: input.device })).detach();
    const x = input.to('float64').sub(shift.to('float64').view(shape));
    const local = t.cat([
      x.sum(dims),
      x.mul(x).sum(dims),
      t.full([1], count, { dtype: 'float64', device: input.device }),
    ]);
    const global = wrap(native.allReduceSumAutograd(group.h, local.h));
    const n = global.narrow(0, 2 * c, 1).item() as number;
    if (n <= 1)
      throw new RangeError(`Expected more than 1 value per channel when training, got input size ${n}`);
    const shiftedMean = global.narrow(0, 0, c).div(n);
    const mean = shiftedMean.add(shift.to('float64'));
    const variance = global.narrow(0, c, c).div(n).sub(shiftedMean.mul(shiftedMean)).clamp({ min: 0 });
    const invstd = variance.add(this.eps).rsqrt();
    let y = input.sub(mean.to(input.dtype).view(shape)).mul(invstd.to(input.dtype).view(shape));
    if (this.weight !== null) y = y.mul(this.weight.view(shape));
    if (this.bias !== null) y = y.add(this.bias.view(shape));
    noGrad(() => {
      runningMean?.mul_(1 - factor).add_(mean.detach().to(runningMean.dtype).mul(factor));
      runningVar?.mul_(1 - factor).add_(
        variance
          .detach()
          .mul(n / (n - 1))
          .to(runningVar.dtype)
          .mul(factor),
      );
    });
    return y;
  }

  /**
   * `module` with every BatchNorm (1d, 2d, 3d) in it replaced by a SyncBatchNorm over
   * `processGroup`, sharing its parameters and running statistics, in the same mode
   * (torch.nn.SyncBatchNorm.convert_sync_batchnorm). Returns the new root when `module`
   * itself is a BatchNorm.
   */
  static convertSyncBatchnorm<M extends Module>(
    module: M,
    processGroup: ProcessGroup | null = null,
  ): M | SyncBatchNorm {
    if (module instanceof BatchNorm) {
      const sync = new SyncBatchNorm(module.numFeatures, {
        eps: module.eps,
        momentum: module.momentum,
        affine: module.affine,
        trackRunningStats: module.trackRunningStats,
        processGroup,
      });
      if (module.affine) {
        sync.weight = sync.registerParameter('weight', module.weight);
        sync.bias = sync.registerParameter('bias', module.bias);
      }
      for (const name of ['running_mean', 'running_var', 'num_batches_tracked'])
        sync.registerBuffer(name, module._buffers.get(name) ?? null);
      sync.train(module.training);
      return sync;
    }
    for (const [name, child] of module.namedChildren()) {
      const converted = SyncBatchNorm.convertSyncBatchnorm(child, processGroup);
      if (converted === child) continue;
      const self = module as unknown as Record<string, unknown>;
      // A child held in a property too: the property follows (Module keeps them in step).
      if (Object.hasOwn(self, name) && self[name] === child) self[name] = converted;
      module.registerModule(name, converted);
    }
    return module;
  }
}
