// Every op: the generated typed wrappers, the generic dispatcher call and hand-written sugar.

export { call } from './call.ts';
export { type CrossEntropyOptions, crossEntropy, nll, type Reduction, reductionCode } from './functional.ts';
export * from './ops.generated.ts';
