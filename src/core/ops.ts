// Every op: the generated typed wrappers, the generic dispatcher call and hand-written sugar.
import './tensor-methods.ts';

export { call } from './call.ts';
export {
  type CdistOptions,
  cdist,
  type MeshgridIndexing,
  meshgrid,
  type UniqueOptions,
  unique,
} from './extra-ops.ts';
export { type CrossEntropyOptions, crossEntropy, nll, type Reduction, reductionCode } from './functional.ts';
export * from './ops.generated.ts';
