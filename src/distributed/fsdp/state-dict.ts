// Model state dicts of fully sharded modules (PyTorch's torch.distributed.checkpoint
// .state_dict get_model_state_dict / set_model_state_dict, for FSDP2): sharded — each
// rank's own shards under the parameters' names — or full — every parameter gathered
// whole, as a plain model's state dict (what PyTorch's load_state_dict and any world size
// take).
import { noGrad } from '../../autograd/index.ts';
import * as t from '../../core/index.ts';
import type { Tensor } from '../../core/tensor.ts';
import type { Module } from '../../nn/module.ts';
import type { Optimizer, OptimizerStateDict } from '../../optim/optimizer.ts';
import { allGatherIntoTensor, allReduce } from '../collectives.ts';
import { shardOf } from './fully-shard.ts';
import type { FSDPParam } from './param-group.ts';

export interface StateDictOptions {
  /** Gather every parameter whole (every rank calls it). Default false: this rank's shards. */
  fullStateDict?: boolean;
}

/** The model's state dict: parameters whole (fullStateDict) or as this rank's shards; buffers as they are. */
export function getModelStateDict(model: Module, opts: StateDictOptions = {}): Record<string, Tensor> {
  const sd = model.stateDict() as Record<string, Tensor>;
  if (!opts.fullStateDict) return sd;
  const params = paramsByName(model);
  const out: Record<string, Tensor> = {};
  const gathered = new Map<Tensor, Tensor>();
  for (const [k, v] of Object.entries(sd)) {
    const shard = params.get(k);
    const p = shard && shardOf(shard);
    if (p === undefined) {
      out[k] = v;
      continue;
    }
    let full = gathered.get(shard as Tensor);
    if (full === undefined) {
      full = gatherRows(p, p.sharded);
      gathered.set(shard as Tensor, full);
    }
    out[k] = full;
  }
  return out;
}

/** Loads a full state dict into a fully sharded model: each rank keeps its rows of each parameter. */
export function setModelStateDict(model: Module, sd: Record<string, Tensor>): void {
  const current = model.stateDict() as Record<string, Tensor>;
  const missing = Object.keys(current).filter((k) => !(k in sd));
  const unexpected = Object.keys(sd).filter((k) => !(k in current));
  if (missing.length > 0 || unexpected.length > 0)
    throw new RangeError(
      `setModelStateDict(): missing keys [${missing.join(', ')}], unexpected keys [${unexpected.join(', ')}]`,
    );
  const params = paramsByName(model);
  noGrad(() => {
    for (const [k, target] of Object.entries(current)) {
      const value = sd[k];
      const shard = params.get(k);
      const p = shard && shardOf(shard);
      if (p === undefined) {
        if (value.shape.join() !== target.shape.join())
          throw new RangeError(
            `setModelStateDict(): '${k}' is [${value.shape}], the model's [${target.shape}]`,
          );
        target.copy_(value);
        continue;
      }
      if (value.shape.join() !== p.shape.join())
        throw new RangeError(
          `setModelStateDict(): '${k}' is [${value.shape}], the parameter is [${p.shape}]`,
        );
      p.sharded.copy_(value.narrow(0, Math.min(p.rank * p.chunkRows, p.shape[0]), p.localRows));
    }
  });
}

/** The model's registered parameters by state-dict name (tied ones under each name). */
function paramsByName(model: Module): Map<string, Tensor> {
  return new Map(model.namedParameters({ removeDuplicate: false }));
}

/** An optimizer's parameters in its state dict's numbering (groups in order). */
function optimizerParams(optimizer: Optimizer): Tensor[] {
  return optimizer.paramGroups.flatMap((g) => g.params);
}

/** Every rank's rows of a state tensor shaped like `p`'s shard, gathered into `p`'s whole shape. */
function gatherRows(p: FSDPParam, x: Tensor): Tensor {
  return t.tidy(() =>
    noGrad(() => {
      const ws = p.worldSize;
      const flat = x.detach().reshape([-1]);
      const pad = p.paddedShardNumel - flat.numel();
      const input = pad === 0 ? flat : t.cat([flat, t.zeros([pad], { dtype: x.dtype })]);
      const output = t.empty([ws * input.numel()], { dtype: x.dtype });
      allGatherIntoTensor(output, input, { group: p.group });
      return output
        .view([ws * p.chunkRows, ...p.shape.slice(1)])
        .narrow(0, 0, p.shape[0])
        .clone();
    }),
  );
}

/**
 * The optimizer state of a fully sharded model (PyTorch's get_optimizer_state_dict): with
 * fullStateDict, each per-parameter state tensor shaped like a shard (exp_avg,
 * momentum_buffer, ...) gathered whole — the state dict a plain optimizer of the plain model
 * has, which any world size (or no sharding) loads; its tensors are copies. Every rank calls it.
 */
export function getOptimizerStateDict(
  _model: Module,
  optimizer: Optimizer,
  opts: StateDictOptions = {},
): OptimizerStateDict {
  const sd = optimizer.stateDict();
  if (!opts.fullStateDict) return sd;
  const params = optimizerParams(optimizer);
  const state: OptimizerStateDict['state'] = {};
  // In index order on every rank, so that the ranks' all-gathers pair up.
  for (const i of Object.keys(sd.state)
    .map(Number)
    .sort((a, b) => a - b)) {
    const p = shardOf(params[i]);
    const s = sd.state[i];
    state[i] = Object.fromEntries(
      Object.entries(s).map(([k, v]) => [
        k,
        !(v instanceof t.Tensor)
          ? v
          : p !== undefined && v.shape.join() === p.sharded.shape.join() && v.ndim > 0
            ? gatherRows(p, v)
            : v.clone(), // a copy: the optimizer goes on updating its own
      ]),
    );
  }
  return { state, paramGroups: sd.paramGroups };
}

/** Loads a full optimizer state dict (getOptimizerStateDict's, or a plain optimizer's): each rank keeps its rows. */
export function setOptimizerStateDict(_model: Module, optimizer: Optimizer, sd: OptimizerStateDict): void {
  const params = optimizerParams(optimizer);
  const state: OptimizerStateDict['state'] = {};
  for (const [i, s] of Object.entries(sd.state)) {
    const p = shardOf(params[Number(i)]);
    state[Number(i)] = Object.fromEntries(
      Object.entries(s).map(([k, v]) => [
        k,
        p !== undefined && v instanceof t.Tensor && v.shape.join() === p.shape.join() && v.ndim > 0
          ? v.narrow(0, Math.min(p.rank * p.chunkRows, p.shape[0]), p.localRows)
          : v,
      ]),
    );
  }
  optimizer.loadStateDict({ state, paramGroups: sd.paramGroups });
}

/**
 * Clips the gradient norm of a fully sharded model's parameters to `maxNorm`, the norm
 * taken over the whole parameters (every rank's shards: one all-reduce of the squares), as
 * PyTorch's clip_grad_norm_ does on FSDP2's DTensors. Returns the total norm. Every rank calls it.
 */
export function clipGradNorm_(model: Module, maxNorm: number): number {
  const grads = model
    .parameters()
    .map((p) => p.grad)
    .filter((g): g is Tensor => g !== null);
  const group = model
    .parameters()
    .map((p) => shardOf(p)?.group)
    .find((g) => g !== undefined);
  return noGrad(() =>
    t.tidy(() => {
      const sq = grads.reduce((acc, g) => acc.add(g.to({ dtype: 'float32' }).pow(2).sum()), t.zeros([]));
      if (group !== undefined) allReduce(sq, 'sum', { group });
      const total = Math.sqrt(sq.item() as number);
      const coef = maxNorm / (total + 1e-6);
      if (coef < 1) for (const g of grads) g.mul_(coef);
      return total;
    }),
  );
}
