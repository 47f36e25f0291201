// The public API of tsddp (re-exports only).

export * as amp from './amp/index.ts';
export { autocast, autocastAsync, GradScaler } from './amp/index.ts';
export {
  enableGrad,
  enableGradAsync,
  isGradEnabled,
  noGrad,
  noGradAsync,
  setGradEnabled,
} from './autograd/grad-mode.ts';
export * as autograd from './autograd/index.ts';
export { fromBuffer, fromBytes, type TensorOptions, tensor } from './core/creation.ts';
export { DTYPES, type DType, type MemoryFormat, type TypedArray } from './core/dtype.ts';
export { TorchError } from './core/errors.ts';
export * from './core/ops.ts';
export * as ops from './core/ops.ts';
export { defaultGenerator, Generator, manualSeed } from './core/random.ts';
export { buildInfo, cuda, getNumThreads, setNumThreads } from './core/runtime.ts';
export { keep, memory, Scope, scope, tidy, tidyAsync } from './core/scope.ts';
export {
  type BackwardOptions,
  type DeviceLike,
  type NestedArray,
  type Scalar,
  Tensor,
  type ToOptions,
} from './core/tensor.ts';
export * as optim from './optim/index.ts';
