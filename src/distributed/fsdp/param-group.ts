// One fullyShard()ed module's parameters (PyTorch's FSDPParamGroup, _fsdp_param_group.py):
// each parameter sharded on dim 0 over the group's ranks (torch.chunk's split, padded to
// equal chunks for the collectives), gathered whole before the module runs and scattered
// again after. The collectives and their layouts are FSDP2's (_fsdp_collectives.py): one
// all_gather_into_tensor of every parameter's padded shard, one reduce_scatter_tensor
// (AVG) of every gradient cut into world-size chunks.
import { noGrad } from '../../autograd/index.ts';
import type { DType } from '../../core/dtype.ts';
import * as t from '../../core/index.ts';
import { native } from '../../core/native.ts';
import type { Tensor } from '../../core/tensor.ts';
import type { Module } from '../../nn/module.ts';
import { Parameter } from '../../nn/parameter.ts';
import { allGatherIntoTensor, reduceScatterTensor } from '../collectives.ts';
import type { ProcessGroup } from '../process-group.ts';

/** PyTorch's MixedPrecisionPolicy: the dtype the gathered parameters compute in, and the one gradients are reduced in. */
export interface MixedPrecisionPolicy {
  /** Default: the parameters' own. */
  paramDtype?: DType | null;
  /** Default: paramDtype. */
  reduceDtype?: DType | null;
  /** Cast floating-point forward inputs to paramDtype. Default true. */
  castForwardInputs?: boolean;
}

/** Where a parameter is registered: a module and the attribute name (tied parameters have several). */
type Owner = [Module, string];

/** Sets `module`'s parameter `name` to `p`: the attribute its forward reads, and its registry. */
function setParam([module, name]: Owner, p: Tensor): void {
  (module as unknown as Record<string, Tensor>)[name] = p;
  module.registerParameter(name, p);
}

/** One sharded parameter (PyTorch's FSDPParam). */
export class FSDPParam {
  readonly shape: number[];
  readonly dtype: DType;
  /** Elements per dim-0 row. */
  readonly rowNumel: number;
  /** Rows per rank's padded chunk: ceil(dim0 / worldSize), as torch.chunk splits. */
  readonly chunkRows: number;
  /** This rank's rows (the last ranks may hold fewer, or none). */
  readonly localRows: number;
  /** This rank's shard: the leaf the optimizer updates, registered in the module between forwards. */
  readonly sharded: Tensor;
  /** The gathered parameter (a leaf autograd saw), its storage freed while resharded. */
  unsharded: Tensor | null = null;

  constructor(
    readonly fqn: string,
    readonly owners: Owner[],
    original: Tensor,
    readonly group: ProcessGroup,
  ) {
    const { rank, size: worldSize } = group;
    if (original.ndim === 0)
      throw new TypeError(`fullyShard(): parameter '${fqn}' is 0-dimensional; it has no dim 0 to shard`);
    this.shape = [...original.shape];
    this.dtype = original.dtype;
    this.rowNumel = this.shape.slice(1).reduce((a, b) => a * b, 1);
    this.chunkRows = Math.ceil(this.shape[0] / worldSize);
    this.localRows = Math.max(0, Math.min(this.chunkRows, this.shape[0] - rank * this.chunkRows));
    // In a scope: no handle of a view of the whole parameter outlives this.
    const rows = t.tidy(() =>
      noGrad(() =>
        original
          .detach()
          .narrow(0, Math.min(rank * this.chunkRows, this.shape[0]), this.localRows)
          .clone(),
      ),
    );
    this.sharded = Parameter(rows, original.requiresGrad);
    for (const o of owners) setParam(o, this.sharded);
    // The whole parameter goes now, not when the garbage collector finds its handle.
    original.dispose();
  }

  get rank(): number {
    return this.group.rank;
  }

  get worldSize(): number {
    return this.group.size;
  }

  get paddedShardNumel(): number {
    return this.chunkRows * this.rowNumel;
  }

  /** This rank's shard padded to chunkRows rows, flat, in `dtype`. */
  paddedShard(dtype: DType): Tensor {
    const flat = this.sharded.detach().reshape([-1]).to({ dtype });
    const pad = this.paddedShardNumel - flat.numel();
    return pad === 0 ? flat : t.cat([flat, t.zeros([pad], { dtype })]);
  }

  /** Puts the gathered rows (padded, [worldSize * chunkRows, ...]) into the unsharded parameter. */
  fill(gathered: Tensor, dtype: DType, onGrad: (p: FSDPParam, g: Tensor) => void): void {
    const full = gathered.narrow(0, 0, this.shape[0]);
    if (this.unsharded === null) {
      this.unsharded = t.empty(this.shape, { dtype }).requiresGrad_(this.sharded.requiresGrad).keep();
      if (this.sharded.requiresGrad) this.unsharded.registerHook((g) => onGrad(this, g));
    } else {
      native.storageResize(this.unsharded.h, this.unsharded.numel() * this.unsharded.elementSize());
    }
    native.copyKeepingVersion(this.unsharded.h, full.h);
    for (const o of this.owners) setParam(o, this.unsharded);
  }

  /** The shard back in the module, the gathered parameter's storage freed. */
  free(): void {
    for (const o of this.owners) setParam(o, this.sharded);
    if (this.unsharded !== null) native.storageResize(this.unsharded.h, 0);
  }
}

/** The parameters one fullyShard() call manages, and their state through a step. */
export class FSDPParamGroup {
  unsharded = false;
  /** false: gradients accumulate unsharded, not reduced (setRequiresGradientSync). */
  requiresGradientSync = true;
  /** Called when a gradient of this group comes: fully-shard.ts queues the end-of-backward work. */
  onBackward: () => void = () => {};
  /** Gradients of this backward, waiting until every parameter's has come. */
  private readonly pending = new Map<FSDPParam, Tensor>();
  private readonly trainable: number;

  constructor(
    readonly params: FSDPParam[],
    readonly group: ProcessGroup,
    readonly reshardAfterForward: boolean,
    readonly mp: MixedPrecisionPolicy,
  ) {
    this.trainable = params.filter((p) => p.sharded.requiresGrad).length;
  }

  private get paramDtype(): DType {
    return this.mp.paramDtype ?? this.params[0].dtype;
  }

  /** All-gathers every parameter (one all_gather_into_tensor) and puts the whole ones in the modules. */
  unshard(): void {
    if (this.unsharded || this.params.length === 0) return;
    const dtype = this.paramDtype;
    const ws = this.group.size;
    noGrad(() =>
      t.tidy(() => {
        const input = t.cat(this.params.map((p) => p.paddedShard(dtype)));
        const total = input.numel();
        const output = t.empty([ws * total], { dtype });
        allGatherIntoTensor(output, input, { group: this.group });
        const byRank = output.view([ws, total]);
        let offset = 0;
        for (const p of this.params) {
          const rows = byRank
            .narrow(1, offset, p.paddedShardNumel)
            .reshape([ws * p.chunkRows, ...p.shape.slice(1)]);
          p.fill(rows, dtype, (q, g) => this.onGrad(q, g));
          offset += p.paddedShardNumel;
        }
      }),
    );
    this.unsharded = true;
  }

  /** The shards back in the modules; the gathered parameters' storage freed. */
  reshard(): void {
    if (!this.unsharded) return;
    for (const p of this.params) p.free();
    this.unsharded = false;
  }

  /** A gathered parameter's gradient for this backward (a hook, once per parameter and backward). */
  private onGrad(p: FSDPParam, g: Tensor): void {
    this.onBackward();
    if (!this.requiresGradientSync) {
      g.dispose(); // the handle only: autograd accumulates the gradient in the unsharded .grad
      return;
    }
    const earlier = p.unsharded?.grad ?? null;
    if (earlier === null) this.pending.set(p, g.keep());
    else {
      this.pending.set(p, earlier.add(g).keep());
      earlier.dispose();
      g.dispose();
    }
    if (this.pending.size === this.trainable) this.reduceGrads();
  }

  /**
   * Reduce-scatters the gradients that came (FSDP2's foreach_reduce): each padded to whole
   * chunks and cut into world-size rows, one reduce_scatter_tensor (AVG) in reduceDtype,
   * then each rank's piece added to its shard's .grad.
   */
  reduceGrads(): void {
    if (this.pending.size === 0) return;
    const entries = this.params
      .filter((p) => this.pending.has(p))
      .map((p) => [p, this.pending.get(p) as Tensor] as const);
    this.pending.clear();
    const ws = this.group.size;
    const dtype = this.mp.reduceDtype ?? this.paramDtype;
    noGrad(() =>
      t.tidy(() => {
        const rows = entries.map(([p, g]) => {
          const flat = g.to({ dtype }).reshape([-1]);
          const pad = ws * p.paddedShardNumel - flat.numel();
          const padded = pad === 0 ? flat : t.cat([flat, t.zeros([pad], { dtype })]);
          return padded.view([ws, p.paddedShardNumel]);
        });
        const input = t.cat(rows, 1).reshape([-1]);
        const output = t.empty([input.numel() / ws], { dtype });
        reduceScatterTensor(output, input, 'avg', { group: this.group });
        let offset = 0;
        for (const [p, g] of entries) {
          const piece = output
            .narrow(0, offset, p.paddedShardNumel)
            .view([p.chunkRows, ...p.shape.slice(1)])
            .narrow(0, 0, p.localRows)
            .to({ dtype: p.dtype });
          const have = p.sharded.grad;
          // .grad holds the tensor itself; the handles go with this scope.
          if (have === null) p.sharded.grad = piece.clone();
          else have.add_(piece);
          offset += p.paddedShardNumel;
          g.dispose();
          if (p.unsharded) p.unsharded.grad = null;
        }
      }),
    );
  }

  /** After backward: what no hook reduced (unused parameters' groups), then the unsharded gradients go. */
  finishBackward(): void {
    if (this.requiresGradientSync) {
      this.reduceGrads();
      for (const p of this.params) if (p.unsharded) p.unsharded.grad = null;
    }
    this.pending.clear();
  }
}
