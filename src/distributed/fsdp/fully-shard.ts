// torch.distributed.fsdp.fully_shard (FSDP2): a module's parameters sharded over the ranks,
// gathered whole around its forward and its backward, its gradients reduce-scattered back
// to the shards. Call it on each block, then on the whole model, as PyTorch's recipe does:
// each call makes one group of parameters (param-group.ts) — those of the module not
// already in a group below it — and hooks the module's forward:
//   before forward: gather the group (all-gather);
//   after forward:  free it again (reshardAfterForward; never the root's, which backward
//                   needs at once) and hook the outputs, so that backward gathers it first;
//   in backward:    before the module's backward, gather it (and issue the gather of the
//                   module that ran before it in forward: FSDP2's backward prefetch); once
//                   all the group's gradients have come, reduce-scatter them into the
//                   shards' .grad (waited for when the next group reduces);
//   after backward: (a callback at the end of the graph) what is left is reduced, every
//                   group freed.
// The optimizer runs on the shards (the module's registered parameters between forwards).
// Over a 2-D DeviceMesh (HSDP), each row of the mesh shards, and each reduced shard is
// then averaged across the rows (an all-reduce), as FSDP2's foreach_reduce does.
import { isGradEnabled } from '../../autograd/index.ts';
import { isFloatingPoint } from '../../core/dtype.ts';
import { native } from '../../core/native.ts';
import { Tensor } from '../../core/tensor.ts';
import type { Module } from '../../nn/module.ts';
import { checkpointPhase } from '../../utils/checkpoint.ts';
import { DeviceMesh } from '../device-mesh.ts';
import { type ProcessGroup, resolveGroup } from '../process-group.ts';
import { checkOffloadPolicy, type OffloadPolicy } from './offload.ts';
import {
  FSDPParam,
  FSDPParamGroup,
  finishReduceScatter,
  type MixedPrecisionPolicy,
  reduceReady,
} from './param-group.ts';

export interface FullyShardOptions {
  /**
   * The ranks to shard over: a 1-D DeviceMesh or a process group (default: the world); or
   * a 2-D DeviceMesh for hybrid sharding (HSDP): shard along its last dimension, replicate
   * along its first (the gradients are reduce-scattered within a row, then all-reduced
   * across the rows).
   */
  mesh?: DeviceMesh | ProcessGroup | null;
  /** Free the gathered parameters after forward and gather them again for backward. Default true. */
  reshardAfterForward?: boolean;
  mpPolicy?: MixedPrecisionPolicy;
  /**
   * PyTorch's OffloadPolicy (the default: none) or CPUOffloadPolicy({ pinMemory: false }):
   * the shards, gradients and optimizer state on the CPU, where tsddp's FSDP keeps them anyway.
   */
  offloadPolicy?: OffloadPolicy | null;
}

/** What fullyShard adds to a module (PyTorch's FSDPModule). */
export interface FSDPModule {
  /** Gathers the parameters now (they stay gathered until reshard() or the next backward's end). */
  unshard(): void;
  /** Frees the gathered parameters. */
  reshard(): void;
  /** false: backward accumulates unsharded gradients without reducing them (gradient accumulation). */
  setRequiresGradientSync(requiresGradientSync: boolean, opts?: { recurse?: boolean }): void;
}

interface State {
  module: Module;
  group: FSDPParamGroup;
  /**
   * Set at the module's first forward, when no other fully sharded forward is running
   * (FSDP2's lazy init): the root's group is not freed after forward, and the end of
   * backward finishes the groups of the root's subtree.
   */
  isRoot: boolean;
  initialized: boolean;
  /**
   * Its backward has begun (an output's gradient came, FSDP2's PRE_BACKWARD): a forward
   * now is activation checkpointing's recomputation, which finds the parameters gathered
   * and must leave them so, with no hooks of its own.
   */
  inBackward: boolean;
}

const states = new WeakMap<Module, State>();
const shardOwner = new WeakMap<Tensor, FSDPParam>();
const OPTION_KEYS = ['mesh', 'reshardAfterForward', 'mpPolicy', 'offloadPolicy'];

/** The FSDP parameter a tensor is the shard of, if any (for state dicts). */
export function shardOf(x: Tensor): FSDPParam | undefined {
  return shardOwner.get(x);
}

/** The states of `module`'s subtree, outermost first. */
function subtree(module: Module): State[] {
  return module
    .modules()
    .map((m) => states.get(m))
    .filter((s): s is State => s !== undefined);
}

// The backward in flight: the root whose groups its end-of-graph callback finishes.
let forwardDepth = 0;
/** The modules in the order their forwards finished (FSDP2's post_forward_order): backward prefetches by it. */
let postForwardOrder: State[] = [];
let lastRoot: State | null = null;
let callbackQueued = false;
let callbackInstalled = false;

function finishBackward(): void {
  callbackQueued = false;
  if (lastRoot === null) return;
  const all = subtree(lastRoot.module);
  try {
    reduceReady();
    for (const s of all) s.group.finishBackward();
    finishReduceScatter();
  } finally {
    for (const s of all) {
      s.group.reshard();
      s.inBackward = false;
    }
  }
}

/** Queues finishBackward at the end of the backward now running (once per backward). */
function inBackward(): void {
  if (callbackQueued) return;
  if (!callbackInstalled) {
    native.setBackwardCallback(() => finishBackward());
    callbackInstalled = true;
  }
  callbackQueued = true;
  native.queueBackwardCallback(0);
}

function castInputs(args: unknown[], mp: MixedPrecisionPolicy): unknown[] {
  const dtype = mp.paramDtype;
  if (!dtype || mp.castForwardInputs === false) return args;
  return args.map((a) => (a instanceof Tensor && isFloatingPoint(a.dtype) ? a.to({ dtype }) : a));
}

/** The tensors of a forward's output (a tensor, or arrays and plain objects of them). */
function tensorsOf(out: unknown, found: Tensor[] = []): Tensor[] {
  if (out instanceof Tensor) found.push(out);
  else if (Array.isArray(out)) for (const x of out) tensorsOf(x, found);
  else if (out !== null && typeof out === 'object' && Object.getPrototypeOf(out) === Object.prototype)
    for (const x of Object.values(out)) tensorsOf(x, found);
  return found;
}

/**
 * Where `state`'s module's backward begins (an output's gradient came, or activation
 * checkpointing recomputes it): the group reduced last is finished, this one gathered, and
 * the one whose forward finished before this one's prefetched (FSDP2's backward prefetch).
 */
function beginBackward(state: State): void {
  inBackward();
  state.inBackward = true;
  reduceReady(); // the module after it in forward has finished its backward
  state.group.unshard();
  const i = postForwardOrder.indexOf(state);
  if (i > 0) postForwardOrder[i - 1].group.prefetch();
}

function forwardOf(state: State, original: (...args: unknown[]) => unknown) {
  return (...args: unknown[]): unknown => {
    if (!state.initialized) {
      state.initialized = true;
      state.isRoot = forwardDepth === 0;
    }
    // A checkpointed region's forward runs without grad but is a training forward; its
    // recomputation in backward (utils/checkpoint.ts) is where this module's backward begins.
    const phase = checkpointPhase();
    const recomputing = state.inBackward || phase === 'recompute';
    if (state.isRoot && forwardDepth === 0 && !recomputing) {
      lastRoot = state;
      postForwardOrder = [];
    }
    if (recomputing && !state.inBackward) beginBackward(state);
    state.group.unshard();
    forwardDepth++;
    let out: unknown;
    try {
      out = original.apply(state.module, castInputs(args, state.group.mp));
    } finally {
      forwardDepth--;
    }
    // Recomputed: the gathered parameters stay for the backward that follows at once.
    if (recomputing) return out;
    const grad = isGradEnabled();
    const training = grad || phase === 'forward';
    if (grad)
      for (const o of tensorsOf(out))
        if (o.requiresGrad)
          o.registerHook((g) => {
            g.dispose(); // the handle only: the gradient flows on
            if (!state.inBackward) beginBackward(state);
          });
    if (!training || (!state.isRoot && state.group.reshardAfterForward)) state.group.reshard();
    if (training) postForwardOrder.push(state);
    return out;
  };
}

/** The group to shard over, and (a 2-D mesh: HSDP) the one to replicate over. */
function meshGroups(mesh: FullyShardOptions['mesh']): {
  shard: ProcessGroup;
  replicate: ProcessGroup | null;
} {
  if (!(mesh instanceof DeviceMesh)) return { shard: resolveGroup(mesh), replicate: null };
  if (mesh.ndim === 1) return { shard: mesh.getGroup(0), replicate: null };
  return { shard: mesh.getGroup(1), replicate: mesh.getGroup(0) };
}

/**
 * Shards `module`'s parameters over the ranks of `mesh` (torch.distributed.fsdp.fully_shard):
 * those not already sharded by a fullyShard() on a module inside it. Returns the module,
 * with FSDPModule's methods; its parameters are now this rank's shards (build the
 * optimizer after). CPU tensors only for now.
 */
export function fullyShard<M extends Module>(module: M, opts: FullyShardOptions = {}): M & FSDPModule {
  const unknown = Object.keys(opts).filter((k) => !OPTION_KEYS.includes(k));
  if (unknown.length > 0)
    throw new TypeError(
      `fullyShard(): unknown option ${unknown.join(', ')}; it takes ${OPTION_KEYS.join(', ')}`,
    );
  checkOffloadPolicy(opts.offloadPolicy);
  const reshardAfterForward = opts.reshardAfterForward ?? true;
  if (typeof reshardAfterForward !== 'boolean')
    throw new TypeError(
      'fullyShard(): reshardAfterForward must be true or false (a world size to reshard to is not offered)',
    );
  if (states.has(module)) throw new TypeError('fullyShard(): this module is already fully sharded');
  const { shard: pg, replicate } = meshGroups(opts.mesh);
  if (!pg.isMember) throw new TypeError('fullyShard(): this rank is not in the mesh');

  // Its parameters, except those of modules sharded already (tied ones once, with every owner).
  const inner = new Set<Module>();
  for (const m of module.modules())
    if (m !== module && states.has(m)) for (const d of m.modules()) inner.add(d);
  const owners = new Map<Tensor, { fqn: string; owners: [Module, string][] }>();
  for (const [path, m] of module.namedModules({ removeDuplicate: false })) {
    if (inner.has(m)) continue;
    for (const [name, p] of m.namedParameters({ recurse: false })) {
      if (shardOwner.has(p)) continue;
      const entry = owners.get(p);
      if (entry) {
        if (!entry.owners.some(([o, n]) => o === m && n === name)) entry.owners.push([m, name]);
      } else owners.set(p, { fqn: path === '' ? name : `${path}.${name}`, owners: [[m, name]] });
    }
  }
  const params = [...owners.entries()].map(([p, { fqn, owners: o }]) => {
    if (!p.isCpu)
      throw new TypeError(
        `fullyShard(): '${fqn}' is on ${p.device}; only CPU parameters can be sharded for now`,
      );
    const f = new FSDPParam(fqn, o, p, pg);
    shardOwner.set(f.sharded, f);
    return f;
  });
  const dtypes = new Set(params.map((p) => p.dtype));
  if (dtypes.size > 1)
    throw new TypeError(`fullyShard(): the parameters have several dtypes (${[...dtypes].join(', ')})`);
  const state: State = {
    module,
    group: new FSDPParamGroup(params, pg, reshardAfterForward, opts.mpPolicy ?? {}, replicate),
    isRoot: false,
    initialized: false,
    inBackward: false,
  };
  state.group.onBackward = inBackward;
  states.set(module, state);
  const original = module.forward as (...args: unknown[]) => unknown;
  module.forward = forwardOf(state, original) as M['forward'];
  const fsdp: FSDPModule = {
    unshard: () => state.group.unshard(),
    reshard: () => state.group.reshard(),
    setRequiresGradientSync: (requires, o = {}) => {
      for (const s of o.recurse === false ? [state] : subtree(module))
        s.group.requiresGradientSync = requires;
    },
  };
  return Object.assign(module, fsdp);
}
