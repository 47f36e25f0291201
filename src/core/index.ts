// The tensor layer in one import, for the other areas of src/ (nn, optim, data, ...):
// `import * as t from '../core/index.ts'`. Importing src/index.ts from inside src/
// would create import cycles. Grad modes and autograd.grad are a layer above
// (src/autograd, architecture §2): import them from there.

export { fromBuffer, fromBytes, type TensorOptions, tensor } from './creation.ts';
export {
  DTYPES,
  type DType,
  type DTypeName,
  dtypeFromName,
  type MemoryFormat,
  type TypedArray,
  toDType,
} from './dtype.ts';
export { TorchError } from './errors.ts';
export type { RemovableHandle, TensorHook } from './hooks.ts';
export {
  getDefaultDtype,
  getRngState,
  initialSeed,
  isTensor,
  seed,
  setRngState,
} from './introspection.ts';
export * from './ops.ts';
export * as ops from './ops.ts';
export * as profiler from './profiler.ts';
export { defaultGenerator, Generator, manualSeed } from './random.ts';
export {
  accelerator,
  backends,
  buildInfo,
  CudaError,
  cuda,
  getNumThreads,
  setNumThreads,
} from './runtime.ts';
export { keep, memory, Scope, scope, tidy, tidyAsync } from './scope.ts';
export {
  type BackwardOptions,
  type DeviceLike,
  type NestedArray,
  type Scalar,
  Tensor,
  type ToOptions,
} from './tensor.ts';
