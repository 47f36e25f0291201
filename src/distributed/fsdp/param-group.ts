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

  /**
   * Copies each rank's rows straight from the all-gather's output (`byRank`: [worldSize,
   * total], this parameter's padded chunks at `offset`) into the unsharded parameter: one
   * contiguous copy per rank, no intermediate whole-size tensor (FSDP2's copy-out).
   */
  fill(byRank: Tensor, offset: number, dtype: DType, onGrad: (p: FSDPParam, g: Tensor) => void): void {
    if (this.unsharded === null) {
      this.unsharded = t.empty(this.shape, { dtype }).requiresGrad_(this.sharded.requiresGrad).keep();
      if (this.sharded.requiresGrad) this.unsharded.registerHook((g) => onGrad(this, g));
    } else {
      native.storageResize(this.unsharded.h, this.unsharded.numel() * this.unsharded.elementSize());
    }
    for (let r = 0; r < this.worldSize; r++) {
      const rows = Math.min(this.chunkRows, this.shape[0] - r * this.chunkRows);
      if (rows <= 0) break;
      const n = rows * this.rowNumel;
      const dst = this.unsharded.narrow(0, r * this.chunkRows, rows).view([n]);
      native.copyKeepingVersion(dst.h, byRank.select(0, r).narrow(0, offset, n).h);
    }
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
  /**
   * Parameters whose gradient this backward has produced: autograd accumulated it into the
   * unsharded parameter's .grad (all but the one whose hook runs now).
   */
  private readonly arrived = new Set<FSDPParam>();
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
          p.fill(byRank, offset, dtype, (q, g) => this.onGrad(q, g));
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

  /**
   * A gathered parameter's gradient for this backward (a hook, once per parameter and
   * backward, run just before autograd accumulates it into .grad). No reference to the
   * gradient is kept (one would make autograd copy it into .grad instead of taking it);
   * when the group's last has come, the group is reduced, that last one from the hook's
   * own tensor.
   */
  private onGrad(p: FSDPParam, g: Tensor): void {
    this.onBackward();
    if (this.requiresGradientSync) {
      this.arrived.add(p);
      if (this.arrived.size === this.trainable) this.reduceGrads([p, g]);
    }
    g.dispose(); // the handle only: autograd accumulates the gradient in the unsharded .grad
  }

  /**
   * Reduce-scatters the gradients that came (FSDP2's foreach_reduce): each padded to whole
   * chunks and cut into world-size rows, one reduce_scatter_tensor (AVG) in reduceDtype,
   * then each rank's piece added to its shard's .grad. `current`: the parameter whose hook
   * runs now and its incoming gradient (not yet in its .grad).
   */
  reduceGrads(current: [FSDPParam, Tensor] | null = null): void {
    if (this.arrived.size === 0) return;
    const arrived = this.arrived;
    const ws = this.group.size;
    const dtype = this.mp.reduceDtype ?? this.paramDtype;
    noGrad(() =>
      t.tidy(() => {
        const entries = this.params
          .filter((p) => arrived.has(p))
          .map((p) => {
            const accumulated = p.unsharded?.grad ?? null;
            if (current === null || current[0] !== p) return [p, accumulated as Tensor] as const;
            return [p, accumulated === null ? current[1] : accumulated.add(current[1])] as const;
          });
        arrived.clear();
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
        for (const [p] of entries) {
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
          // Reduced: the whole gradient goes (the current one's .grad, filled after this hook, at the end of backward).
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
    this.arrived.clear();
  }
}
