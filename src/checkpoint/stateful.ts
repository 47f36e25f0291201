// The structural view checkpointing has of models, optimizers, schedulers and scalers:
// anything with stateDict()/loadStateDict() like PyTorch's objects. Kept structural so
// this folder depends on no concrete nn/optim/amp class.
import { envInt } from '../env/index.ts';

export interface Stateful {
  stateDict(): unknown;
  /** Must apply synchronously; tensors it keeps beyond the call must be keep()-ed (or copied). */
  // biome-ignore lint/suspicious/noExplicitAny: each implementation narrows its own state type.
  loadStateDict(sd: any, opts?: any): unknown;
}

/** What a sampler needs for resume: DistributedSampler.setEpoch. */
export interface EpochSetter {
  setEpoch(epoch: number): void;
}

/** WORLD_SIZE from the environment (set by the launcher), or 1. */
export function envWorldSize(): number {
  return envInt('WORLD_SIZE', { fallback: 1, min: 1 });
}
