// torch.nn for tsddp: Module, layers, losses, `functional` and `init`.
export * as F from './functional.ts';
export * as functional from './functional.ts';
export * as init from './init.ts';
export { Dropout, ReLU } from './layers/activation.ts';
export { BatchNorm2d, type BatchNormOptions } from './layers/batchnorm.ts';
export { ModuleList, Sequential } from './layers/container.ts';
export { Conv2d, type Conv2dOptions } from './layers/conv.ts';
export { Flatten, Identity, Linear } from './layers/linear.ts';
export { CrossEntropyLoss, type CrossEntropyLossOptions } from './layers/loss.ts';
export { AdaptiveAvgPool2d, MaxPool2d } from './layers/pooling.ts';
export {
  type LoadStateDictResult,
  Module,
  type ModuleToOptions,
  type StateDict,
  StateDictError,
} from './module.ts';
export { isParameter, Parameter } from './parameter.ts';
