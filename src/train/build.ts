// The run's model and optimizer as the plan says: what setup.ts builds for the run and the
// trials that time settings on the same model (tune.ts, ddp-trial.ts, tune-comm.ts) build too.
import * as t from '../core/index.ts';
import * as dist from '../distributed/index.ts';
import {
  resnet18,
  resnet34,
  resnet50,
  resnet101,
  resnet152,
  vitB16,
  vitB32,
  vitL16,
  vitTiny,
} from '../models/index.ts';
import { type Module, SyncBatchNorm } from '../nn/index.ts';
import { AdamW, type Optimizer, SGD } from '../optim/index.ts';
import type { DataSetup } from './data.ts';
import type { OptimPlan, RunPlan } from './plan.ts';
import type { Placement } from './process-group.ts';
import { shardModel, shardsParameters } from './strategy.ts';
import type { TrainHooks } from './types.ts';

const RESNETS = { resnet18, resnet34, resnet50, resnet101, resnet152 };
const VITS = { vit_b_16: vitB16, vit_b_32: vitB32, vit_l_16: vitL16, vit_tiny: vitTiny };

/**
 * The plan's ResNet or ViT (or the hook's model), seeded the same on every rank, on the
 * device; with --strategy fsdp and a group of several ranks, fully sharded over it.
 */
export function buildModel(
  plan: Pick<RunPlan, 'model' | 'loop' | 'optim'>,
  hooks: TrainHooks,
  setup: Pick<DataSetup, 'numClasses' | 'imageSize'>,
  on: Placement,
  group: dist.ProcessGroup | null = null,
): Module {
  const c = plan.model;
  // The same seed on every rank (DDP also broadcasts rank 0's parameters).
  t.manualSeed(plan.loop.seed);
  const { numClasses, imageSize } = setup;
  const model =
    hooks.model?.(numClasses) ??
    (c.arch in VITS
      ? VITS[c.arch as keyof typeof VITS]({ numClasses, imageSize })
      : RESNETS[c.arch as keyof typeof RESNETS]({
          numClasses,
          stem: c.stem,
          widthMultiplier: c.widthMultiplier,
          zeroInitResidual: c.zeroInitResidual,
        }));
  if (c.activationCheckpointing) {
    if (!('activationCheckpointing' in model))
      throw new TypeError(
        '--activation-checkpointing: the model given by the model hook has no activationCheckpointing property (the ResNets, the ViTs and GPT do)',
      );
    (model as Module & { activationCheckpointing: boolean }).activationCheckpointing = true;
  }
  if (on.deviceType === 'cuda') model.to(on.device);
  if (c.channelsLast) model.to({ memoryFormat: 'channelsLast' });
  // Before DDP wraps it, as PyTorch's recipe converts: the statistics of the global batch.
  const converted = c.syncBn ? (SyncBatchNorm.convertSyncBatchnorm(model) as Module) : model;
  // Every rank built the same parameters (seeded with --seed above): each keeps its rows (no broadcast).
  return group !== null && shardsParameters(plan, group) ? shardModel(converted, group) : converted;
}

/**
 * SGD with momentum (ResNets), or AdamW (transformers); every parameter decays. With
 * --strategy zero1 and a group of several ranks, a ZeroRedundancyOptimizer of that class
 * (on one rank it would hold everything: the plain optimizer is the same).
 */
export function buildOptimizer(
  model: Module,
  c: OptimPlan,
  lr: number,
  group: dist.ProcessGroup | null = null,
): Optimizer {
  // --optimizer-impl: PyTorch's foreach/fused flags; auto leaves both unset (the defaults).
  const impl =
    c.impl === 'loop'
      ? { foreach: false }
      : c.impl === 'foreach'
        ? { foreach: true }
        : c.impl === 'fused'
          ? { fused: true }
          : {};
  const [optimizerClass, opts] =
    c.name === 'adamw'
      ? [AdamW, { lr, betas: c.betas, weightDecay: c.weightDecay, ...impl }]
      : [SGD, { lr, momentum: c.momentum, nesterov: c.nesterov, weightDecay: c.weightDecay, ...impl }];
  if (c.strategy === 'zero1' && group !== null && group.size > 1)
    return new dist.optim.ZeroRedundancyOptimizer(model.parameters(), {
      optimizerClass,
      processGroup: group,
      ...opts,
    });
  return new optimizerClass(model.parameters(), opts);
}
