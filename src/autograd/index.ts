// Autograd over the tensor layer: grad modes (noGrad, enableGrad, ...), autograd.grad and
// backward, gradcheck.

export { backward, type GradOptions, grad } from './grad.ts';
export {
  enableGrad,
  enableGradAsync,
  isGradEnabled,
  noGrad,
  noGradAsync,
  setGradEnabled,
} from './grad-mode.ts';
export { type GradcheckOptions, gradcheck } from './gradcheck.ts';
