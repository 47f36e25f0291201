// torch.accelerator for tsddp: the device-generic face of the current accelerator. The
// only accelerator a tsddp libtorch can have is CUDA, so each call is torch.cuda's
// (core/cuda.ts) behind PyTorch's accelerator rules: with no accelerator compiled in,
// currentAccelerator() is null (PyTorch's None) and deviceCount() 0, and what needs a
// device (setDeviceIndex, currentDeviceIndex, synchronize) is a CudaError saying why.
import { CudaError, cuda } from './cuda.ts';
import { native } from './native.ts';

/** The accelerator's device type when libtorch was compiled with one ('cuda'), else null. */
function compiled(): 'cuda' | null {
  return native.buildInfo().cudaCompiled ? 'cuda' : null;
}

/** Refuses a call that needs a device where none is available, naming the call and why. */
function requireDevice(what: string): void {
  if (cuda.isAvailable()) return;
  const why =
    compiled() === null
      ? `this libtorch is not compiled with an accelerator (torch ${native.buildInfo().torchVersion}, CPU only)`
      : 'libtorch has CUDA but sees no GPU (check the driver and CUDA_VISIBLE_DEVICES)';
  throw new CudaError(`${what}: no accelerator is available: ${why}`);
}

/**
 * A device argument as PyTorch's `_get_device_index` reads it: an index, or 'cuda:N'.
 * `optional`: a device without an index (or none) is the current one, as synchronize()
 * takes it; otherwise it is refused.
 */
function deviceIndex(
  device: number | string | undefined,
  what: string,
  optional: boolean,
): number | undefined {
  if (typeof device === 'number') {
    if (!Number.isInteger(device) || device < 0)
      throw new TypeError(`${what}: a device index is an integer >= 0, got ${device}`);
    return device;
  }
  if (device === undefined) {
    if (optional) return undefined;
    throw new TypeError(`${what}: expected a device index or 'cuda:N', got undefined`);
  }
  const m = /^([a-z]+)(?::(\d+))?$/.exec(device);
  if (m === null) throw new TypeError(`${what}: '${device}' is not a device`);
  const acc = compiled();
  if (acc === null)
    throw new CudaError(`${what}: '${device}' is no accelerator device: there is no accelerator`);
  if (m[1] !== acc) throw new TypeError(`${what}: ${m[1]} doesn't match the current accelerator ${acc}`);
  if (m[2] !== undefined) return Number(m[2]);
  if (optional) return undefined;
  throw new TypeError(`${what}: expected a device with an index ('${acc}:N') or an integer, got '${device}'`);
}

/** torch.accelerator: the current accelerator (CUDA where there is one), device-generic. */
export const accelerator = {
  /** Whether an accelerator is compiled in and a device is visible. */
  isAvailable(): boolean {
    return compiled() !== null && cuda.isAvailable();
  },
  /**
   * The accelerator's device type ('cuda', without an index) when libtorch has one, else
   * null (PyTorch's None). `checkAvailable`: null too when no device is visible.
   */
  currentAccelerator(checkAvailable = false): 'cuda' | null {
    const acc = compiled();
    if (acc === null || (checkAvailable && !accelerator.isAvailable())) return null;
    return acc;
  },
  /** The number of accelerator devices (0 without an accelerator). */
  deviceCount(): number {
    return compiled() === null ? 0 : cuda.deviceCount();
  },
  /** Makes device `device` (an index or 'cuda:N') the current one. */
  setDeviceIndex(device: number | string): void {
    const what = `accelerator.setDeviceIndex(${JSON.stringify(device)})`;
    const i = deviceIndex(device, what, false) as number;
    requireDevice(what);
    if (i >= cuda.deviceCount())
      throw new RangeError(`${what}: device ${i} does not exist (${cuda.deviceCount()} devices)`);
    cuda.setDevice(i);
  },
  /** The index of the current device. */
  currentDeviceIndex(): number {
    requireDevice('accelerator.currentDeviceIndex()');
    return cuda.currentDevice();
  },
  /** Waits for all work on the device (default: the current one) to finish. */
  synchronize(device?: number | string): void {
    const what = `accelerator.synchronize(${device === undefined ? '' : JSON.stringify(device)})`;
    const i = deviceIndex(device, what, true);
    requireDevice(what);
    cuda.synchronize(i);
  },
};
