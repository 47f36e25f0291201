// Random number generation: the global CPU generator (manualSeed) and Generator objects.
// Same seeds give the same numbers as PyTorch's CPU generator: the kernels are the same.
import { native } from './native.ts';
import { type Tensor, wrap } from './tensor.ts';

/** A random number generator, like torch.Generator. */
export class Generator {
  /** Native generator handle. */
  readonly h: number;

  constructor(opts: { device?: string } = {}) {
    this.h = native.generatorNew(opts.device ?? 'cpu');
  }

  manualSeed(seed: number | bigint): this {
    native.generatorManualSeed(this.h, seed);
    return this;
  }
  initialSeed(): bigint {
    return native.generatorInitialSeed(this.h);
  }
  /** The generator state as a uint8 tensor (like torch.Generator.get_state()). */
  getState(): Tensor {
    return wrap(native.generatorGetState(this.h));
  }
  setState(state: Tensor): this {
    native.generatorSetState(this.h, state.h);
    return this;
  }
}

/** Seeds the default generators (CPU and CUDA), like torch.manual_seed. */
export function manualSeed(seed: number | bigint): void {
  native.manualSeed(seed);
}

/** The default CPU generator, like torch.default_generator. */
export function defaultGenerator(): Generator {
  const g = Object.create(Generator.prototype) as Generator;
  (g as { h: number }).h = native.generatorDefault();
  return g;
}
