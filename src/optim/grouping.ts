// Splitting tensor lists by (device, dtype), as PyTorch's
// Optimizer._group_tensors_by_device_and_dtype does before calling multi-tensor or
// fused kernels, which need one device and one dtype per call; and which of those
// kernels a step takes by default.
import type { Tensor } from '../core/index.ts';

/**
 * Indices of `tensors` grouped by device and dtype, groups in order of first
 * appearance and indices ascending within a group.
 */
export function groupIndicesByDeviceAndDtype(tensors: Tensor[]): number[][] {
  const groups = new Map<string, number[]>();
  tensors.forEach((x, i) => {
    const key = `${x.device}|${x.dtype}`;
    const g = groups.get(key);
    if (g) g.push(i);
    else groups.set(key, [i]);
  });
  return [...groups.values()];
}

/** `list` restricted to `indices` (the list itself when it is the whole list). */
export function pick<T>(list: T[], indices: number[]): T[] {
  return indices.length === list.length ? list : indices.map((i) => list[i]);
}

/**
 * Whether a step takes the multi-tensor (`_foreach_*`) kernels when `foreach` is unset.
 * PyTorch's default is the loop on CPU and foreach on CUDA. tsddp also takes foreach on CPU
 * where the results are the same (float32, float64: PyTorch's own two paths agree to the
 * bit there, and test/optim.test.ts checks tsddp's default against PyTorch's loop with zero
 * tolerance), since each loop iteration costs calls from JavaScript.
 */
export function defaultForeach(p: Tensor): boolean {
  return p.device.startsWith('cuda') || p.dtype === 'float32' || p.dtype === 'float64';
}
