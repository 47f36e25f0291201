// Learning-rate schedulers (torch.optim.lr_scheduler).
export { LRScheduler, type SchedulerStateDict } from './base.ts';
export { CosineAnnealingLR, type CosineAnnealingLROptions } from './cosine-annealing-lr.ts';
export { LinearLR, type LinearLROptions } from './linear-lr.ts';
export { OneCycleLR, type OneCycleLROptions } from './one-cycle-lr.ts';
export { SequentialLR } from './sequential-lr.ts';
export { MultiStepLR, StepLR, type StepLROptions } from './step-lr.ts';
