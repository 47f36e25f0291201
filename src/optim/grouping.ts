// Splitting tensor lists by (device, dtype), as PyTorch's
// Optimizer._group_tensors_by_device_and_dtype does before calling multi-tensor or
// fused kernels, which need one device and one dtype per call.
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
