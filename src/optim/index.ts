// Optimizers, learning-rate schedulers and gradient clipping (torch.optim,
// torch.optim.lr_scheduler, torch.nn.utils.clip_grad_*).
export { Adadelta, type AdadeltaOptions } from './adadelta.ts';
export { Adafactor, type AdafactorOptions } from './adafactor.ts';
export { Adagrad, type AdagradOptions } from './adagrad.ts';
export { Adam, type AdamOptions, AdamW } from './adam.ts';
export { Adamax, type AdamaxOptions } from './adamax.ts';
export { ASGD, type ASGDOptions } from './asgd.ts';
export {
  type ClipGradNormOptions,
  clipGradNorm_,
  clipGradsWithNorm_,
  clipGradValue_,
  getTotalNorm,
} from './clip-grad.ts';
export { LBFGS, type LBFGSOptions } from './lbfgs.ts';
export * as lrScheduler from './lr-scheduler/index.ts';
export { Muon, type MuonOptions } from './muon.ts';
export { NAdam, type NAdamOptions } from './nadam.ts';
export {
  Optimizer,
  type OptimizerStateDict,
  type ParamGroup,
  type ParamGroupInput,
  type ParamState,
  type ParamsInput,
  type StateValue,
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
export { RAdam, type RAdamOptions } from './radam.ts';
export { RMSprop, type RMSpropOptions } from './rmsprop.ts';
export { Rprop, type RpropOptions } from './rprop.ts';
export { SGD, type SGDOptions } from './sgd.ts';
export { SparseAdam, type SparseAdamOptions } from './sparse-adam.ts';
export * as swaUtils from './swa-utils.ts';
