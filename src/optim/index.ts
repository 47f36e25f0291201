// Optimizers, learning-rate schedulers and gradient clipping (torch.optim,
// torch.optim.lr_scheduler, torch.nn.utils.clip_grad_*).
export { Adam, type AdamOptions, AdamW } from './adam.ts';
export {
  type ClipGradNormOptions,
  clipGradNorm_,
  clipGradsWithNorm_,
  clipGradValue_,
  getTotalNorm,
} from './clip-grad.ts';
export * as lrScheduler from './lr-scheduler/index.ts';
export {
  Optimizer,
  type OptimizerStateDict,
  type ParamGroup,
  type ParamGroupInput,
  type ParamState,
  type ParamsInput,
} from './optimizer.ts';
export {
  fromPyTorchName,
  optimizerStateDictFromPyTorch,
  optimizerStateDictToPyTorch,
  type PyTorchOptimizerStateDict,
  schedulerStateDictFromPyTorch,
  schedulerStateDictToPyTorch,
  toPyTorchName,
} from './pytorch-names.ts';
export { SGD, type SGDOptions } from './sgd.ts';
