export { backward, type GradOptions, grad } from './grad.ts';
export { type GradcheckOptions, gradcheck } from './gradcheck.ts';
