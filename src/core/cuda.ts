// torch.cuda and torch.backends.cudnn for tsddp: device selection, synchronize, the caching
// allocator's statistics and events. The calls live in the addon's CUDA part
// (native/src/cuda, built when libtorch has CUDA: docs/architecture.md §3); on a machine
// without CUDA, the queries answer as PyTorch's do (isAvailable() false, memory 0) and the
// actions throw a CudaError.
import { TsddpError } from '../errors/index.ts';
import { type BuildInfo, native } from './native.ts';

/** CUDA was asked for where there is none (no CUDA libtorch, no GPU, or no CUDA part in the addon). */
export class CudaError extends TsddpError {
  override name = 'CudaError';
  readonly code = 'CUDA';
}

// The addon's CUDA part: present only in CUDA builds (TSDDP_CUDA).
interface CudaNative {
  cudaSetDevice(device: number): void;
  cudaCurrentDevice(): number;
  cudaSynchronize(device?: number): void;
  cudaMemoryStats(device?: number): {
    allocated: number;
    maxAllocated: number;
    reserved: number;
    maxReserved: number;
  };
  cudaResetPeakMemoryStats(device?: number): void;
  cudaEmptyCache(): void;
  cudaEventNew(enableTiming: boolean): number;
  cudaEventRecord(h: number): void;
  cudaEventSynchronize(h: number): void;
  cudaEventQuery(h: number): boolean;
  cudaEventElapsedTime(start: number, end: number): number;
  cudaEventDestroy(h: number): void;
}

let info: BuildInfo | undefined;
const build = (): BuildInfo => {
  info ??= native.buildInfo();
  return info;
};

/** The CUDA calls, or a CudaError naming `what` and why they cannot run here. */
function cudaCalls(what: string): CudaNative {
  const b = build();
  if (!b.cudaAvailable) {
    throw new CudaError(
      b.cudaCompiled
        ? `${what}: no CUDA device is visible (libtorch has CUDA; check the driver and CUDA_VISIBLE_DEVICES)`
        : `${what}: this libtorch is not compiled with CUDA (torch ${b.torchVersion})`,
    );
  }
  if (!b.cudaBuilt) {
    throw new CudaError(
      `${what}: the tsddp addon was built without its CUDA part (no CUDA/NCCL headers at build time); ` +
        'rebuild with `npx tsddp setup` where the nvidia-* wheels or a CUDA toolkit are installed',
    );
  }
  return native as unknown as CudaNative;
}

/**
 * A device as libtorch takes it: PyTorch's integer device N is 'cuda:N'. Anything else is
 * libtorch's to judge (a CUDA device without CUDA is its TorchError, named by the op, as for
 * 'cuda').
 */
export function resolveDevice(device: string | number, what: string): string {
  if (typeof device === 'string') return device;
  if (!Number.isInteger(device) || device < 0)
    throw new TypeError(`${what}: a device index must be an integer >= 0, got ${device}`);
  return `cuda:${device}`;
}

function deviceIndex(device: number | string | undefined, what: string): number | undefined {
  if (device === undefined) return undefined;
  if (typeof device === 'number') return device;
  const m = /^cuda(?::(\d+))?$/.exec(device);
  if (!m) throw new TypeError(`${what}: expected a CUDA device ('cuda', 'cuda:N' or N), got '${device}'`);
  return m[1] === undefined ? undefined : Number(m[1]);
}

/** torch.cuda.Event: marks a point in the current stream, for waiting and timing. */
export class Event {
  readonly enableTiming: boolean;
  private readonly h: number;
  private static readonly registry = new FinalizationRegistry<number>((h) => {
    (native as unknown as CudaNative).cudaEventDestroy(h);
  });

  constructor(opts: { enableTiming?: boolean } = {}) {
    this.enableTiming = opts.enableTiming ?? false;
    this.h = cudaCalls('cuda.Event').cudaEventNew(this.enableTiming);
    Event.registry.register(this, this.h);
  }
  /** Records the event on the current stream of the current device. */
  record(): void {
    cudaCalls('cuda.Event.record').cudaEventRecord(this.h);
  }
  /** Blocks until the work recorded before this event has finished. */
  synchronize(): void {
    cudaCalls('cuda.Event.synchronize').cudaEventSynchronize(this.h);
  }
  /** Whether the work recorded before this event has finished. */
  query(): boolean {
    return cudaCalls('cuda.Event.query').cudaEventQuery(this.h);
  }
  /** Milliseconds from this event to `end`; both recorded with enableTiming and completed. */
  elapsedTime(end: Event): number {
    if (!this.enableTiming || !end.enableTiming)
      throw new CudaError('cuda.Event.elapsedTime: both events need { enableTiming: true }');
    return cudaCalls('cuda.Event.elapsedTime').cudaEventElapsedTime(this.h, end.h);
  }
}

// The device argument is checked on every machine, so a bad one fails here as on a GPU.
function stats(device: number | string | undefined, what: string) {
  const index = deviceIndex(device, what);
  return build().cudaAvailable && build().cudaBuilt
    ? cudaCalls(what).cudaMemoryStats(index)
    : { allocated: 0, maxAllocated: 0, reserved: 0, maxReserved: 0 };
}

/** torch.cuda: what a training script needs of it. */
export const cuda = {
  /** True when libtorch has CUDA and sees a GPU. */
  isAvailable(): boolean {
    return build().cudaAvailable;
  },
  deviceCount(): number {
    return build().cudaDeviceCount;
  },
  /** Whether this addon has its CUDA part (NCCL, these calls) compiled in. */
  isBuilt(): boolean {
    return build().cudaBuilt;
  },
  setDevice(device: number | string): void {
    const i = deviceIndex(device, 'cuda.setDevice');
    cudaCalls('cuda.setDevice').cudaSetDevice(i ?? 0);
  },
  currentDevice(): number {
    return cudaCalls('cuda.currentDevice').cudaCurrentDevice();
  },
  /** Waits for all work on the device (default: the current one) to finish. */
  synchronize(device?: number | string): void {
    cudaCalls('cuda.synchronize').cudaSynchronize(deviceIndex(device, 'cuda.synchronize'));
  },
  /** Bytes held by tensors on the device, as torch.cuda.memory_allocated (0 without CUDA). */
  memoryAllocated(device?: number | string): number {
    return stats(device, 'cuda.memoryAllocated').allocated;
  },
  maxMemoryAllocated(device?: number | string): number {
    return stats(device, 'cuda.maxMemoryAllocated').maxAllocated;
  },
  /** Bytes the caching allocator holds from the driver, as torch.cuda.memory_reserved. */
  memoryReserved(device?: number | string): number {
    return stats(device, 'cuda.memoryReserved').reserved;
  },
  maxMemoryReserved(device?: number | string): number {
    return stats(device, 'cuda.maxMemoryReserved').maxReserved;
  },
  resetPeakMemoryStats(device?: number | string): void {
    cudaCalls('cuda.resetPeakMemoryStats').cudaResetPeakMemoryStats(
      deviceIndex(device, 'cuda.resetPeakMemoryStats'),
    );
  },
  /** Returns the allocator's unused cached blocks to the driver. */
  emptyCache(): void {
    if (build().cudaAvailable && build().cudaBuilt) cudaCalls('cuda.emptyCache').cudaEmptyCache();
  },
  Event,
};

/** torch.backends: the cuDNN autotuner switch (it picks the fastest convolution kernels). */
export const backends = {
  cudnn: {
    get benchmark(): boolean {
      return native.cudnnBenchmark();
    },
    set benchmark(on: boolean) {
      if (typeof on !== 'boolean')
        throw new TypeError(`backends.cudnn.benchmark: expected a boolean, got ${on}`);
      native.cudnnBenchmark(on);
    },
  },
};
