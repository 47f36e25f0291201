// torch.distributed.optim.ZeroRedundancyOptimizer (ZeRO stage 1): every rank keeps the
// full parameters and gradients, but the optimizer state of only its shard of the
// parameters. step() updates that shard with a local optimizer of the given class, then
// every rank broadcasts its shard, so all ranks end with the same parameters. The shards,
// the broadcasts and the state dict layout are PyTorch's (zero_redundancy_optimizer.py):
// parameters sorted largest first, each to the rank with the fewest elements so far; one
// broadcast per parameter in rank order (or one per rank with parametersAsBucketView).
import { noGrad } from '../../autograd/index.ts';
import { loads } from '../../checkpoint/pt/load.ts';
import { dumps } from '../../checkpoint/pt/save.ts';
import * as t from '../../core/index.ts';
import { camelCase, unknownOption } from '../../core/options.ts';
import type { Tensor } from '../../core/tensor.ts';
import {
  Optimizer,
  type OptimizerStateDict,
  type ParamGroup,
  type ParamGroupInput,
  type ParamsInput,
} from '../../optim/optimizer.ts';
import {
  optimizerStateDictFromPyTorch,
  optimizerStateDictToPyTorch,
  type PyTorchOptimizerStateDict,
} from '../../optim/pytorch-names.ts';
import { broadcast } from '../collectives.ts';
import { DISABLED_JOIN, Join, type Joinable, type JoinConfig, type JoinHook } from '../join.ts';
import { type ProcessGroup, resolveGroup } from '../process-group.ts';

/** An optimizer class: `new (params, options)`, as t.optim.SGD or t.optim.AdamW. */
// biome-ignore lint/suspicious/noExplicitAny: any optimizer's own options type
export type OptimizerClass = new (params: ParamsInput<any>, opts?: any) => Optimizer;

export interface ZeroRedundancyOptimizerOptions {
  /** The local optimizer's class (PyTorch's optimizer_class), e.g. t.optim.AdamW. */
  optimizerClass: OptimizerClass;
  /** Default: the world. */
  processGroup?: ProcessGroup | null;
  /** Keep each rank's shard in one flat tensor and broadcast it in one call. Default false. */
  parametersAsBucketView?: boolean;
  /**
   * PyTorch's overlap of the step with DDP's comm hook (hook_with_zero_step): refused. Over
   * Gloo PyTorch's hook refuses it too; over NCCL it is not offered yet.
   */
  overlapWithDdp?: boolean;
  /** The rest are the local optimizer's options (lr, momentum, weightDecay, ...). */
  [option: string]: unknown;
}

/**
 * Why overlapWithDdp is refused. PyTorch runs the step inside DDP's comm hook
 * (hook_with_zero_step, torch/distributed/algorithms/ddp_comm_hooks/ddp_zero_hook.py), and
 * that hook refuses a Gloo group ("Gloo backend using Overlapping DDP with ZeRO may meet
 * hangs"); over NCCL the step would have to run in the hook's C++ continuation, which
 * needs a GPU to build and test.
 */
function overlapRefusal(pg: ProcessGroup): string {
  const head = 'ZeroRedundancyOptimizer(): overlapWithDdp is not offered';
  const instead = 'call step() after backward instead';
  return pg.backend === 'gloo'
    ? `${head}: over Gloo PyTorch refuses it too (its hook_with_zero_step: "Gloo backend using Overlapping DDP with ZeRO may meet hangs"); ${instead}`
    : `${head} over ${pg.backend} yet; ${instead}`;
}

const OWN_KEYS = new Set(['optimizerClass', 'processGroup', 'parametersAsBucketView', 'overlapWithDdp']);

/**
 * ZeRO-1, as torch.distributed.optim.ZeroRedundancyOptimizer: wraps an optimizer class so
 * that each rank holds the state of its shard only; step() updates the shard and
 * broadcasts it. Call zeroGrad/step as on any optimizer (every rank calls step). A
 * Joinable: in a Join context a rank that ran out of inputs keeps stepping (and
 * broadcasting) for the others.
 */
export class ZeroRedundancyOptimizer extends Optimizer implements Joinable {
  /** The local optimizer: this rank's shard of every parameter group. */
  readonly optim: Optimizer;
  readonly processGroup: ProcessGroup;
  /** This rank's and the group's size, as in PyTorch (rank within the group). */
  readonly rank: number;
  readonly worldSize: number;
  readonly parametersAsBucketView: boolean;
  joinConfig: JoinConfig = DISABLED_JOIN;
  /** Per rank, its parameter groups (PyTorch's _partition_parameters()). */
  private readonly partition: ParamGroup[][];
  /** Per rank, the flat tensor its parameters view (parametersAsBucketView). */
  private readonly buckets: Tensor[] = [];
  /** Each rank's local state dict, after consolidateStateDict on this rank. */
  private allStateDicts: OptimizerStateDict[] = [];

  constructor(params: ParamsInput<object>, opts: ZeroRedundancyOptimizerOptions) {
    const { optimizerClass, processGroup, parametersAsBucketView = false, overlapWithDdp = false } = opts;
    if (typeof optimizerClass !== 'function' || !(optimizerClass.prototype instanceof Optimizer))
      throw new TypeError(
        'ZeroRedundancyOptimizer(): optimizerClass must be an optimizer class, such as t.optim.SGD',
      );
    const defaults = Object.fromEntries(Object.entries(opts).filter(([k]) => !OWN_KEYS.has(k)));
    // The other keys are the local optimizer's, which refuses what it does not take; a
    // snake_case spelling of ZeRO's own option is named here instead.
    for (const k of Object.keys(defaults))
      if (OWN_KEYS.has(camelCase(k))) throw unknownOption('ZeroRedundancyOptimizer', k, [...OWN_KEYS]);
    super(params, defaults);
    const all = this.paramGroups.flatMap((g) => g.params);
    const dtype = all[0].dtype;
    if (all.some((p) => p.dtype !== dtype || p.device !== all[0].device))
      throw new TypeError(
        'ZeroRedundancyOptimizer(): every parameter must have the same dtype and device, as in PyTorch',
      );
    this.processGroup = resolveGroup(processGroup);
    if (!this.processGroup.isMember)
      throw new TypeError('ZeroRedundancyOptimizer(): this rank is not in the process group');
    if (overlapWithDdp) throw new TypeError(overlapRefusal(this.processGroup));
    this.rank = this.processGroup.rank;
    this.worldSize = this.processGroup.size;
    this.parametersAsBucketView = parametersAsBucketView;
    this.partition = partitionParameters(this.paramGroups, this.worldSize);
    const local = this.partition[this.rank].map((g) => ({ ...g, params: [...g.params] }));
    this.optim = new optimizerClass(local as ParamGroupInput<object>[], defaults);
    syncParamGroups(this.optim.paramGroups, this.paramGroups);
    if (parametersAsBucketView) this.buildBuckets();
  }

  /** The rank (of the group) whose shard holds `param` and its optimizer state. */
  paramToRank(param: Tensor): number {
    const r = this.partition.findIndex((groups) => groups.some((g) => g.params.includes(param)));
    if (r < 0) throw new RangeError('paramToRank(): the tensor is not a parameter of this optimizer');
    return r;
  }

  /** Never called: step() runs the local optimizer instead. */
  protected stepGroup(_group: ParamGroup): void {
    throw new Error('ZeroRedundancyOptimizer.stepGroup: not used');
  }

  /**
   * Updates this rank's shard with the local optimizer (running `closure` first, as any
   * optimizer's step), then broadcasts every rank's shard. Every rank must call it.
   */
  override step<L = unknown>(closure?: () => L): L | undefined {
    Join.notifyJoinContext(this);
    syncParamGroups(this.paramGroups, this.optim.paramGroups);
    this.optim.gradScale = this.gradScale;
    this.optim.foundInf = this.foundInf;
    const loss = this.optim.step(closure);
    syncParamGroups(this.optim.paramGroups, this.paramGroups);
    this.syncParams();
    return loss;
  }

  override get stepSupportsAmpScaling(): boolean {
    return this.optim.stepSupportsAmpScaling;
  }

  /** Every rank's shard broadcast from its owner: blocking calls, in PyTorch's order. */
  private syncParams(): void {
    const pg = this.processGroup;
    noGrad(() => {
      for (let r = 0; r < this.worldSize; r++) {
        const src = pg.ranks[r];
        if (this.parametersAsBucketView) broadcast(this.buckets[r], src, { group: pg });
        else for (const g of this.partition[r]) for (const p of g.params) broadcast(p, src, { group: pg });
      }
    });
  }

  /**
   * Each rank's shard in one flat tensor that its parameters view (PyTorch's
   * _build_param_buckets): a frozen parameter keeps a copy of its own.
   */
  private buildBuckets(): void {
    noGrad(() => {
      for (const groups of this.partition) {
        const params = groups.flatMap((g) => g.params);
        const trainable = params.filter((p) => p.requiresGrad);
        for (const p of params)
          if (!p.requiresGrad) t.ops.call('aten::set_data', p, t.ops.call('aten::clone', p.detach()));
        const size = trainable.reduce((n, p) => n + p.numel(), 0);
        const first = params[0] ?? this.paramGroups[0].params[0];
        const bucket =
          size === 0
            ? t.zeros([1], { device: first.device })
            : t.empty([size], { dtype: first.dtype, device: first.device });
        let offset = 0;
        for (const p of trainable) {
          const n = p.numel();
          const view = bucket.narrow(0, offset, n);
          view.copy_(p.detach().flatten());
          t.ops.call('aten::set_data', p, view.viewAs(p));
          offset += n;
        }
        this.buckets.push(bucket);
      }
    });
  }

  /**
   * Gathers every rank's shard of the optimizer state on rank `to` (of the group), so
   * that stateDict() there returns the whole state. Every rank must call it. As PyTorch's,
   * each rank's local state dict goes to `to` by broadcast (its torch.save bytes).
   */
  consolidateStateDict(to = 0): void {
    syncParamGroups(this.paramGroups, this.optim.paramGroups);
    const pg = this.processGroup;
    this.allStateDicts = [];
    for (let r = 0; r < this.worldSize; r++) {
      const src = pg.ranks[r];
      if (this.rank === to) {
        if (r === this.rank) this.allStateDicts.push(snapshot(this.optim.stateDict()));
        else this.allStateDicts.push(receiveStateDict(src, pg));
      } else if (r === this.rank) {
        sendStateDict(this.optim.stateDict(), src, pg);
      } else if (r !== to) {
        receiveBytes(src, pg); // broadcast reaches every rank; the bystanders drop it
      }
    }
  }

  /**
   * The whole optimizer state, in PyTorch's layout (parameters numbered over all groups),
   * as of the last consolidateStateDict on this rank; an Error elsewhere.
   */
  override stateDict(): OptimizerStateDict {
    if (this.allStateDicts.length === 0)
      throw new Error(
        `Optimizer state has not been consolidated on this rank. Please call consolidateStateDict(${this.rank}) on all ranks beforehand if you meant to save the global state.`,
      );
    const sd = super.stateDict();
    const index = new Map<Tensor, number>();
    for (const p of this.paramGroups.flatMap((g) => g.params)) index.set(p, index.size);
    this.allStateDicts.forEach((local, r) => {
      const globalGroups = this.partition[r];
      if (local.paramGroups.length !== globalGroups.length)
        throw new Error('ZeroRedundancyOptimizer: the local and global parameter groups differ');
      local.paramGroups.forEach((lg, gi) => {
        lg.params.forEach((li, k) => {
          const s = local.state[li];
          if (s !== undefined) sd.state[index.get(globalGroups[gi].params[k]) as number] = s;
        });
      });
    });
    const sorted = Object.keys(sd.state)
      .map(Number)
      .sort((a, b) => a - b);
    sd.state = Object.fromEntries(sorted.map((i) => [i, sd.state[i]]));
    return sd;
  }

  /** Loads a whole state dict (from stateDict()): this rank keeps its shard's state. */
  override loadStateDict(sd: OptimizerStateDict): void {
    const all = this.paramGroups.flatMap((g) => g.params);
    const mine = new Set(this.partition[this.rank].flatMap((g) => g.params));
    const local = new Map<Tensor, number>();
    for (const p of this.optim.paramGroups.flatMap((g) => g.params)) local.set(p, local.size);
    const state: OptimizerStateDict['state'] = {};
    for (const [i, s] of Object.entries(sd.state)) {
      const p = all[Number(i)];
      if (p === undefined)
        throw new RangeError(`loadStateDict(): state for parameter ${i}, which does not exist`);
      if (mine.has(p)) state[local.get(p) as number] = s;
    }
    const paramGroups = sd.paramGroups.map((g, gi) => ({
      ...g,
      params: this.optim.paramGroups[gi]?.params.map((p) => local.get(p) as number) ?? [],
    }));
    if (sd.paramGroups.length !== this.paramGroups.length)
      throw new RangeError('loaded state dict has a different number of parameter groups');
    this.optim.loadStateDict({ state, paramGroups });
    syncParamGroups(sd.paramGroups, this.paramGroups);
    syncParamGroups(this.paramGroups, this.optim.paramGroups);
  }

  // Joinable
  joinHook(): JoinHook {
    return {
      mainHook: () => {
        this.step();
      },
      postHook: () => {},
    };
  }

  get joinDevice(): string {
    return this.paramGroups[0].params[0].device;
  }

  get joinProcessGroup(): ProcessGroup {
    return this.processGroup;
  }
}

/** PyTorch's partition: per group, parameters largest first, each to the rank holding the fewest elements. */
function partitionParameters(groups: ParamGroup[], worldSize: number): ParamGroup[][] {
  const out: ParamGroup[][] = Array.from({ length: worldSize }, () => []);
  const sizes = new Array<number>(worldSize).fill(0);
  for (const group of groups) {
    const perRank: Tensor[][] = Array.from({ length: worldSize }, () => []);
    // A stable sort, as Python's sorted(..., reverse=True) keeps equal sizes in order.
    const sorted = group.params
      .map((p, i) => ({ p, i }))
      .sort((a, b) => b.p.numel() - a.p.numel() || a.i - b.i);
    for (const { p } of sorted) {
      const r = sizes.indexOf(Math.min(...sizes));
      perRank[r].push(p);
      sizes[r] += p.numel();
    }
    perRank.forEach((params, r) => {
      out[r].push({ ...group, params });
    });
  }
  return out;
}

/** Copies the hyperparameters (not the parameters) of `src`'s groups onto `dst`'s. */
function syncParamGroups(src: Array<Record<string, unknown>>, dst: Array<Record<string, unknown>>): void {
  if (src.length !== dst.length)
    throw new Error('ZeroRedundancyOptimizer: the parameter groups differ in number');
  src.forEach((g, i) => {
    for (const [k, v] of Object.entries(g)) if (k !== 'params') dst[i][k] = Array.isArray(v) ? [...v] : v;
  });
}

/** A state dict whose tensors are copies (the local optimizer goes on updating its own). */
function snapshot(sd: OptimizerStateDict): OptimizerStateDict {
  return loadsStateDict(dumps(optimizerStateDictToPyTorch(sd)));
}

function loadsStateDict(bytes: Uint8Array): OptimizerStateDict {
  return optimizerStateDictFromPyTorch(loads<PyTorchOptimizerStateDict>(bytes, { name: 'optimizer state' }));
}

/** PyTorch's _broadcast_object, sending: the length (int64), then the torch.save bytes (uint8). */
function sendStateDict(sd: OptimizerStateDict, src: number, pg: ProcessGroup): void {
  const bytes = dumps(optimizerStateDictToPyTorch(sd));
  const length = t.tensor(BigInt64Array.of(BigInt(bytes.length)));
  broadcast(length, src, { group: pg });
  const data = t.tensor(bytes, { dtype: 'uint8' });
  broadcast(data, src, { group: pg });
  length.dispose();
  data.dispose();
}

/** The receiving side of _broadcast_object: the bytes. */
function receiveBytes(src: number, pg: ProcessGroup): Uint8Array {
  const length = t.zeros([1], { dtype: 'int64' });
  broadcast(length, src, { group: pg });
  const data = t.empty([Number(length.item())], { dtype: 'uint8' });
  broadcast(data, src, { group: pg });
  const bytes = new Uint8Array(data.toTypedArray() as Uint8Array);
  length.dispose();
  data.dispose();
  return bytes;
}

function receiveStateDict(src: number, pg: ProcessGroup): OptimizerStateDict {
  return loadsStateDict(receiveBytes(src, pg));
}
