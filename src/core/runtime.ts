// Threads and build facts; torch.cuda is core/cuda.ts, torch.accelerator core/accelerator.ts.
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

export { accelerator } from './accelerator.ts';
export { backends, CudaError, cuda } from './cuda.ts';

export function buildInfo(): BuildInfo {
  return native.buildInfo();
}
