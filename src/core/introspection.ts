// torch functions and Tensor members that no one aten op gives as PyTorch spells them:
// type checks, the default dtype, the default generator's seed and state, Tensor's size
// and device queries, the properties PyTorch has where the generator would make methods
// (x.mH, x.real), and methods whose tensor is not the op's first argument (x.where,
// x.polygamma). Each does what PyTorch's does (test/tensor-surface-more.test.ts compares
// them with PyTorch). Tensor members are attached to the prototype, as tensor-methods.ts
// attaches its own.
import { call } from './call.ts';
import type { DType } from './dtype.ts';
import { mH, polygamma, real, where } from './ops.generated.ts';
import { defaultGenerator, type Generator, manualSeed } from './random.ts';
import { type Scalar, Tensor } from './tensor.ts';

/** torch.is_tensor: whether `obj` is a Tensor. */
export function isTensor(obj: unknown): obj is Tensor {
  return obj instanceof Tensor;
}

/**
 * torch.get_default_dtype: the floating-point dtype factories give without a `dtype`.
 * tsddp never changes libtorch's default (it has no set_default_dtype), so it is
 * PyTorch's own default.
 */
export function getDefaultDtype(): DType {
  return 'float32';
}

// One handle for the default CPU generator: each defaultGenerator() call takes another
// slot in the addon's generator table (native/src/random.cc), which is never compacted.
let cpuGenerator: Generator | undefined;
const generator = () => {
  cpuGenerator ??= defaultGenerator();
  return cpuGenerator;
};

/** torch.initial_seed: the seed of the default CPU generator (a 64-bit value, so a bigint). */
export function initialSeed(): bigint {
  return generator().initialSeed();
}

/**
 * torch.seed: seeds the default generators (CPU and CUDA, as manualSeed) with a
 * non-deterministic 64-bit number, as PyTorch's CPU generator draws one, and returns it.
 */
export function seed(): bigint {
  const s = globalThis.crypto.getRandomValues(new BigUint64Array(1))[0];
  manualSeed(s);
  return s;
}

/** torch.get_rng_state: the default CPU generator's state, a uint8 tensor. */
export function getRngState(): Tensor {
  return generator().getState();
}

/** torch.set_rng_state: restores the default CPU generator's state from getRngState(). */
export function setRngState(state: Tensor): void {
  generator().setState(state);
}

declare module './tensor.ts' {
  interface Tensor {
    /** torch.Tensor.ndimension: dim(). */
    ndimension(): number;
    /** torch.Tensor.nelement: numel(). */
    nelement(): number;
    /** torch.Tensor.itemsize: the bytes of one element (elementSize()). */
    readonly itemsize: number;
    /** torch.Tensor.nbytes: numel() * itemsize, whatever the strides. */
    readonly nbytes: number;
    /** torch.Tensor.is_cpu: whether the tensor is on the CPU. */
    readonly isCpu: boolean;
    /** torch.Tensor.is_meta: whether the tensor is on the meta device (shapes, no data). */
    readonly isMeta: boolean;
    /** torch.Tensor.retains_grad: whether a non-leaf keeps its .grad (retainGrad()). */
    readonly retainsGrad: boolean;
    /** torch.Tensor.mH: the conjugate transpose of the last two dimensions (a view). */
    readonly mH: Tensor;
    /** torch.Tensor.real: the real part, a view (the values themselves for a real dtype). */
    readonly real: Tensor;
    /** torch.Tensor.where: where(condition, this, other). */
    where(condition: Tensor, other: Tensor | Scalar): Tensor;
    /** torch.Tensor.polygamma: polygamma(n, this). */
    polygamma(n: number): Tensor;
  }
}

const proto = Tensor.prototype as unknown as Record<string, unknown>;
const deviceType = (x: Tensor) => x.device.split(':')[0];

proto.ndimension = function (this: Tensor) {
  return this.dim();
};
proto.nelement = function (this: Tensor) {
  return this.numel();
};
proto.where = function (this: Tensor, condition: Tensor, other: Tensor | Scalar) {
  return (where as (c: Tensor, x: Tensor, y: Tensor | Scalar) => Tensor)(condition, this, other);
};
proto.polygamma = function (this: Tensor, n: number) {
  return polygamma(n, this);
};
Object.defineProperties(Tensor.prototype, {
  itemsize: {
    get(this: Tensor) {
      return this.elementSize();
    },
    configurable: true,
  },
  nbytes: {
    get(this: Tensor) {
      return this.numel() * this.elementSize();
    },
    configurable: true,
  },
  isCpu: {
    get(this: Tensor) {
      return deviceType(this) === 'cpu';
    },
    configurable: true,
  },
  isMeta: {
    get(this: Tensor) {
      return deviceType(this) === 'meta';
    },
    configurable: true,
  },
  mH: {
    get(this: Tensor) {
      return mH(this);
    },
    configurable: true,
  },
  real: {
    get(this: Tensor) {
      return real(this);
    },
    configurable: true,
  },
  retainsGrad: {
    get(this: Tensor) {
      return call('aten::retains_grad', this) as boolean;
    },
    configurable: true,
  },
});
