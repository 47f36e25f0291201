// Learning-rate schedulers (torch.optim.lr_scheduler). Every constructor takes PyTorch's
// positional arguments or an options object, in either spelling (args.ts).
export type { LastEpochOption, RequiredOption, TorchSpelled } from './args.ts';
export { LRScheduler, type SchedulerStateDict } from './base.ts';
export { ChainedScheduler } from './chained-scheduler.ts';
export { ConstantLR, type ConstantLROptions } from './constant-lr.ts';
export { CosineAnnealingLR, type CosineAnnealingLROptions } from './cosine-annealing-lr.ts';
export {
  CosineAnnealingWarmRestarts,
  type CosineAnnealingWarmRestartsOptions,
} from './cosine-annealing-warm-restarts.ts';
export {
  CyclicLR,
  type CyclicLRAllOptions,
  type CyclicLRMode,
  type CyclicLROptions,
  type CyclicOptions,
} from './cyclic-lr.ts';
export { ExponentialLR } from './exponential-lr.ts';
export { LambdaLR, type LambdaLROptions, type LrLambda, MultiplicativeLR } from './lambda-lr.ts';
export { LinearLR, type LinearLROptions } from './linear-lr.ts';
export {
  OneCycleLR,
  type OneCycleLROptions,
  type OneCycleOptions,
  type OneCyclePhase,
} from './one-cycle-lr.ts';
export { PolynomialLR, type PolynomialLROptions } from './polynomial-lr.ts';
export {
  type PlateauOptions,
  ReduceLROnPlateau,
  type ReduceLROnPlateauOptions,
} from './reduce-lr-on-plateau.ts';
export { SequentialLR } from './sequential-lr.ts';
export { MultiStepLR, StepLR, type StepLROptions } from './step-lr.ts';
