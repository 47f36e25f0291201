// The public API of tsddp (re-exports only).

export * as amp from './amp/index.ts';
export { autocast, autocastAsync, GradScaler } from './amp/index.ts';
export * as autograd from './autograd/index.ts';
export {
  enableGrad,
  enableGradAsync,
  isGradEnabled,
  noGrad,
  noGradAsync,
  setGradEnabled,
} from './autograd/index.ts';
export * from './checkpoint/index.ts';
export * from './core/index.ts';
export * as data from './data/index.ts';
export * as distributed from './distributed/index.ts';
export { DistributedDataParallel } from './distributed/index.ts';
export { TsddpError } from './errors/index.ts';
export { UnsafePathError } from './files/index.ts';
export * as launch from './launch/index.ts';
export * as models from './models/index.ts';
export * as nn from './nn/index.ts';
export * as onnx from './onnx/index.ts';
export * as optim from './optim/index.ts';
export * as recipe from './train/index.ts';
export {
  ConfigError,
  PreflightError,
  PriorRunError,
  type TrainConfig,
  type TrainConfigInput,
  train,
} from './train/index.ts';
export * as utils from './utils/index.ts';
