// What --strategy changes in the recipe (docs/guide/scaling.md). ddp and zero1 keep whole
// parameters on every rank (DDP all-reduces the gradients; zero1 shards only the optimizer
// state, build.ts buildOptimizer). fsdp shards the parameters themselves (FSDP2's
// fully_shard), which changes four things:
//   - the model: each residual or encoder block, then the whole model, fully sharded (PyTorch's
//     recipe wraps per block); no DDP around it;
//   - the step: gradient accumulation turns the reduce-scatter off for all but the last
//     micro-batch, and clipping takes the norm over every rank's shards;
//   - checkpoints: every rank gathers the whole model and optimizer state, rank 0 writes it,
//     so a checkpoint is the same under every strategy and resumes under any other, at any
//     world size; loading keeps each rank's rows;
//   - evaluation: a sharded forward is a collective, so the ranks run as many forwards each.
import type { Stateful } from '../checkpoint/index.ts';
import * as t from '../core/index.ts';
import type { Tensor } from '../core/tensor.ts';
import * as dist from '../distributed/index.ts';
import { ResNet, VisionTransformer } from '../models/index.ts';
import type { Module } from '../nn/index.ts';
import { clipGradNorm_, type Optimizer, type OptimizerStateDict } from '../optim/index.ts';
import type { RunPlan } from './plan.ts';

const fsdp = dist.fsdp;

/** Whether the run shards its parameters: --strategy fsdp over a group of several ranks. */
export function shardsParameters(plan: Pick<RunPlan, 'optim'>, group: dist.ProcessGroup | null): boolean {
  return plan.optim.strategy === 'fsdp' && group !== null && group.size > 1;
}

/** The blocks fullyShard wraps one by one before the whole model: a ResNet's residual blocks, a ViT's encoder layers. */
function blocksOf(model: Module): Module[] {
  if (model instanceof ResNet)
    return [model.layer1, model.layer2, model.layer3, model.layer4].flatMap((l) => l.children());
  if (model instanceof VisionTransformer) return model.encoder.layers.children();
  return []; // a model from the model hook: sharded as one group
}

/** Shards `model` over `group` as PyTorch's FSDP2 recipe does: each block, then the root. */
export function shardModel(model: Module, group: dist.ProcessGroup): Module & dist.fsdp.FSDPModule {
  for (const block of blocksOf(model)) fsdp.fullyShard(block, { mesh: group });
  return fsdp.fullyShard(model, { mesh: group });
}

/** The sharded root (shardModel's), or null when the parameters are whole. */
export function shardedRoot(model: Module): dist.fsdp.FSDPModule | null {
  return 'setRequiresGradientSync' in model ? (model as Module & dist.fsdp.FSDPModule) : null;
}

/**
 * What a checkpoint loads into: the model and optimizer themselves, or under fsdp views
 * that take a whole state dict and keep this rank's rows (the preflight's key and shape
 * check reads the whole state, which every rank gathers: every rank loads).
 */
export function loadTargets(model: Module, optimizer: Optimizer): { model: Stateful; optimizer: Stateful } {
  if (shardedRoot(model) === null) return { model, optimizer };
  return {
    model: {
      stateDict: () => fsdp.getModelStateDict(model, { fullStateDict: true }),
      loadStateDict: (sd: Record<string, Tensor>) => fsdp.setModelStateDict(model, sd),
    },
    optimizer: {
      stateDict: () => fsdp.getOptimizerStateDict(model, optimizer, { fullStateDict: true }),
      loadStateDict: (sd: OptimizerStateDict) => fsdp.setOptimizerStateDict(model, optimizer, sd),
    },
  };
}

/**
 * Gathers what rank 0 writes, on every rank (a collective): the whole model and optimizer
 * state under fsdp, the optimizer shards to rank 0 under zero1; the model and optimizer
 * themselves otherwise.
 */
export function gatherForCheckpoint(model: Module, optimizer: Optimizer): GatheredState {
  if (optimizer instanceof dist.optim.ZeroRedundancyOptimizer) optimizer.consolidateStateDict(0);
  if (shardedRoot(model) === null) return { model, optimizer, [Symbol.dispose]: () => {} };
  const modelState = fsdp.getModelStateDict(model, { fullStateDict: true });
  const optimizerState = fsdp.getOptimizerStateDict(model, optimizer, { fullStateDict: true });
  const copies = new Set([
    ...Object.values(modelState),
    ...Object.values(optimizerState.state).flatMap((s) => Object.values(s)),
  ]);
  return {
    model: written(modelState),
    optimizer: written(optimizerState),
    // Gathered copies and detached handles: none is the model's or the optimizer's own.
    [Symbol.dispose]: () => {
      for (const x of copies) if (x instanceof t.Tensor) x.dispose();
    },
  };
}

/** What rank 0 writes, and the gathered copies freed when it is disposed. */
export interface GatheredState extends Disposable {
  model: Stateful;
  optimizer: Stateful;
}

/** A gathered state dict as saveCheckpoint reads it. */
function written(sd: object): Stateful {
  return {
    stateDict: () => sd,
    loadStateDict: () => {
      throw new Error('a gathered state dict is written, not loaded');
    },
  };
}

/** Clips the gradients' norm: over the whole parameters (one all-reduce of every rank's shards) under fsdp. */
export function clipGradients(model: Module, maxNorm: number): void {
  if (shardedRoot(model) === null) clipGradNorm_(model.parameters(), maxNorm);
  else fsdp.clipGradNorm_(model, maxNorm);
}
