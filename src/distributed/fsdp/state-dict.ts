// Model state dicts of fully sharded modules (PyTorch's torch.distributed.checkpoint
// .state_dict get_model_state_dict / set_model_state_dict, for FSDP2): sharded — each
// rank's own shards under the parameters' names — or full — every parameter gathered
// whole, as a plain model's state dict (what PyTorch's load_state_dict and any world size
// take).
import { noGrad } from '../../autograd/index.ts';
import * as t from '../../core/index.ts';
import type { Tensor } from '../../core/tensor.ts';
import type { Module } from '../../nn/module.ts';
import { allGatherIntoTensor } from '../collectives.ts';
import { shardOf } from './fully-shard.ts';

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
      full = noGrad(() => {
        const ws = p.worldSize;
        const input = p.paddedShard(p.dtype);
        const output = t.empty([ws * input.numel()], { dtype: p.dtype });
        allGatherIntoTensor(output, input, { group: p.group });
        return output
          .view([ws * p.chunkRows, ...p.shape.slice(1)])
          .narrow(0, 0, p.shape[0])
          .clone();
      });
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
