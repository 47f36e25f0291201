// One fullyShard()ed module's parameters (PyTorch's FSDPParamGroup, _fsdp_param_group.py):
// each parameter sharded on dim 0 over the group's ranks (torch.chunk's split, padded to
// equal chunks for the collectives), gathered whole before the module runs and scattered
// again after. The collectives and their layouts are FSDP2's (_fsdp_collectives.py): one
// all_gather_into_tensor of every parameter's padded shard, one reduce_scatter_tensor
// (AVG) of every gradient cut into world-size chunks. As FSDP2 does, an all-gather can be
// issued ahead (backward prefetch: fully-shard.ts) and a reduce-scatter waited for later
// (when the next group reduces, or at the end of backward), so both run while autograd
// computes; neither can be awaited inside a backward, so they are waited for on this thread.
import { noGrad } from '../../autograd/index.ts';
import type { DType } from '../../core/dtype.ts';
import * as t from '../../core/index.ts';
import { native } from '../../core/native.ts';
import type { Tensor } from '../../core/tensor.ts';
import type { Module } from '../../nn/module.ts';
import { Parameter } from '../../nn/parameter.ts';
import {
  allReduce,
  type PendingCollective,
  startAllGatherIntoTensor,
  startReduceScatterTensor,
} from '../collectives.ts';
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

/** An all-gather in flight: its buffers, kept until the rows are copied out. */
interface Gathering {
  input: Tensor;
  output: Tensor;
  call: PendingCollective;
}

/** A reduce-scatter in flight: its buffers and the parameters whose shards take the result. */
interface Reducing {
  input: Tensor;
  output: Tensor;
  params: FSDPParam[];
  call: PendingCollective;
  /** HSDP: the group the reduced shard is then averaged over (the mesh's other rows). */
  replicate: ProcessGroup | null;
}

/** The reduce-scatter still in flight, of any group: the next one, or the end of backward, waits for it. */
let reducing: Reducing | null = null;

/**
 * A group whose gradients have all come. The last one's hook runs before autograd puts it
 * in .grad, so the group is reduced at the next event of this backward (another gradient,
 * a module's backward starting, the end), when every one is in .grad and can be freed as
 * soon as it is copied in (FSDP2 reduces after the module's backward for the same reason).
 */
let ready: FSDPParamGroup | null = null;

/** Reduces the group whose gradients have all come, if any. */
export function reduceReady(): void {
  const group = ready;
  ready = null;
  group?.reduceGrads();
}

/** Waits for the reduce-scatter in flight, if any, and adds each rank's piece to its shards' .grad. */
export function finishReduceScatter(): void {
  const r = reducing;
  if (r === null) return;
  reducing = null;
  try {
    r.call.wait();
    // HSDP: every row reduced its own batch; the rows' shards are averaged (FSDP2's
    // all_reduce AVG over the replicate group, after the reduce-scatter AVG).
    if (r.replicate !== null && r.replicate.size > 1) allReduce(r.output, 'avg', { group: r.replicate });
    noGrad(() =>
      t.tidy(() => {
        let offset = 0;
        for (const p of r.params) {
          const piece = r.output
            .narrow(0, offset, p.paddedShardNumel)
            .view([p.chunkRows, ...p.shape.slice(1)])
            .narrow(0, 0, p.localRows)
            .to({ dtype: p.dtype });
          const have = p.sharded.grad;
          // .grad is a view of the reduce-scatter's output (FSDP2's as_strided views of its
          // reduce output): no copy. The whole buffer lives while any of the group's shard
          // gradients does (all of them go together with zeroGrad). Views of one buffer
          // never overlap, and a later backward adds into them in place. The handles go
          // with this scope.
          if (have === null) p.sharded.grad = piece;
          else have.add_(piece);
          offset += p.paddedShardNumel;
        }
      }),
    );
  } finally {
    r.input.dispose();
    r.output.dispose();
  }
}

/** The parameters one fullyShard() call manages, and their state through a step. */
export class FSDPParamGroup {
  unsharded = false;
  /** The all-gather issued ahead (prefetch), not yet copied out. */
  private gathering: Gathering | null = null;
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
    /** HSDP: the ranks holding the same shards (a 2-D mesh's first dimension), or null. */
    readonly replicate: ProcessGroup | null = null,
  ) {
    this.trainable = params.filter((p) => p.sharded.requiresGrad).length;
  }

  private get paramDtype(): DType {
    return this.mp.paramDtype ?? this.params[0].dtype;
  }

  /** Issues the all-gather of every parameter (one all_gather_into_tensor) without waiting for it. */
  prefetch(): void {
    if (this.unsharded || this.gathering !== null || this.params.length === 0) return;
    const dtype = this.paramDtype;
    this.gathering = noGrad(() =>
      t.tidy(() => {
        const input = t.cat(this.params.map((p) => p.paddedShard(dtype))).keep();
        const output = t.empty([this.group.size * input.numel()], { dtype }).keep();
        return { input, output, call: startAllGatherIntoTensor(output, input, this.group) };
      }),
    );
  }

  /** All-gathers every parameter (or waits for the prefetched all-gather) and puts the whole ones in the modules. */
  unshard(): void {
    if (this.unsharded || this.params.length === 0) return;
    this.prefetch();
    const g = this.gathering as Gathering;
    this.gathering = null;
    try {
      g.call.wait();
      const dtype = this.paramDtype;
      noGrad(() =>
        t.tidy(() => {
          const byRank = g.output.view([this.group.size, g.input.numel()]);
          let offset = 0;
          for (const p of this.params) {
            p.fill(byRank, offset, dtype, (q, grad) => this.onGrad(q, grad));
            offset += p.paddedShardNumel;
          }
        }),
      );
    } finally {
      g.input.dispose();
      g.output.dispose();
    }
    this.unsharded = true;
  }

  /** The shards back in the modules; the gathered parameters' storage freed. */
  reshard(): void {
    if (this.gathering !== null) {
      // Prefetched for a backward that did not need it: finished (the peers sent it), dropped.
      const g = this.gathering;
      this.gathering = null;
      try {
        g.call.wait();
      } finally {
        g.input.dispose();
        g.output.dispose();
      }
    }
    if (!this.unsharded) return;
    for (const p of this.params) p.free();
    this.unsharded = false;
  }

  /**
   * A gathered parameter's gradient for this backward (a hook, once per parameter and
   * backward, run just before autograd accumulates it into .grad). No reference to the
   * gradient is kept (one would make autograd copy it into .grad instead of taking it);
   * when the group's last has come, the group is ready to reduce (reduceReady).
   */
  private onGrad(p: FSDPParam, g: Tensor): void {
    reduceReady(); // a group whose last gradient autograd has accumulated since
    this.onBackward();
    if (this.requiresGradientSync) {
      this.arrived.add(p);
      if (this.arrived.size === this.trainable) ready = this;
    }
    g.dispose(); // the handle only: autograd accumulates the gradient in the unsharded .grad
  }

  /**
   * Reduce-scatters the gradients that came (FSDP2's foreach_reduce): each padded to whole
   * chunks and cut into world-size rows, one reduce_scatter_tensor (AVG) in reduceDtype,
   * issued after the one in flight is finished; each rank's piece goes to its shard's .grad
   * when this one is finished in turn (finishReduceScatter). The whole gradients go as soon
   * as they are copied in, and the gathered parameters after.
   */
  reduceGrads(): void {
    if (this.arrived.size === 0) return;
    const params = this.params.filter((p) => this.arrived.has(p));
    this.arrived.clear();
    const ws = this.group.size;
    const dtype = this.mp.reduceDtype ?? this.paramDtype;
    noGrad(() => {
      // Copy-in, in a scope of its own: no handle of a whole gradient outlives it.
      const input = t
        .tidy(() => {
          const rows = params.map((p) => {
            const g = (p.unsharded?.grad ?? null) as Tensor | null;
            const flat =
              g === null
                ? t.zeros([p.shape.reduce((a, b) => a * b, 1)], { dtype })
                : g.to({ dtype }).reshape([-1]);
            const pad = ws * p.paddedShardNumel - flat.numel();
            const padded = pad === 0 ? flat : t.cat([flat, t.zeros([pad], { dtype })]);
            return padded.view([ws, p.paddedShardNumel]);
          });
          return t.cat(rows, 1).reshape([-1]);
        })
        .keep();
      for (const p of params) if (p.unsharded) p.unsharded.grad = null;
      const output = t.empty([input.numel() / ws], { dtype }).keep();
      // At most one in flight, as FSDP2 keeps it: the gradients' buffers go one group at a time.
      finishReduceScatter();
      const call = startReduceScatterTensor(output, input, 'avg', this.group);
      reducing = { input, output, params, call, replicate: this.replicate };
    });
    // Its backward is done (every gradient came): the gathered parameters go now, as FSDP2's
    // post-backward reshard, not at the end of the whole backward.
    this.reshard();
  }

  /**
   * After backward: what no hook reduced (unused parameters' groups), then the unsharded
   * gradients go. The caller finishes the last reduce-scatter (finishReduceScatter) after
   * every group's.
   */
  finishBackward(): void {
    if (this.requiresGradientSync) {
      this.reduceGrads();
      for (const p of this.params) if (p.unsharded) p.unsharded.grad = null;
    }
    this.arrived.clear();
  }
}
