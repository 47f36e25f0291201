// Threads, CUDA availability and build facts.
import { type BuildInfo, native } from './native.ts';

/** Size of libtorch's intra-op thread pool (set from OMP_NUM_THREADS at start). */
export function getNumThreads(): number {
  return native.getNumThreads();
}

export function setNumThreads(n: number): void {
  if (!Number.isInteger(n) || n < 1)
    throw new TypeError(`setNumThreads(): expected a positive integer, got ${n}`);
  native.setNumThreads(n);
}

export const cuda = {
  isAvailable(): boolean {
    return native.buildInfo().cudaAvailable;
  },
  deviceCount(): number {
    return native.buildInfo().cudaDeviceCount;
  },
};

export function buildInfo(): BuildInfo {
  return native.buildInfo();
}
