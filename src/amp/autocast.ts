// Autocast regions, like torch.autocast. Inside a region, libtorch's autocast dispatch key
// runs the ops on its lower-precision list (matmul, linear, convolutions, ...) in the
// region's dtype, runs the ops on its fp32 list (losses, prod, ...) in float32 and leaves
// the rest alone. The op lists live in libtorch; this file only enters and leaves the
// state exactly as torch.autocast.__enter__/__exit__ do.
import { type DType, dtypeCode, dtypeFromCode, toDType } from '../core/dtype.ts';
import { native } from '../core/native.ts';
import { checkOptions, optionNames } from '../core/options.ts';
import { cuda } from '../core/runtime.ts';

/** Device types libtorch's autocast supports in this build of tsddp. */
export type AutocastDeviceType = 'cpu' | 'cuda';

export interface AutocastOptions {
  /** Which device's autocast state the region sets ('cpu' or 'cuda'). */
  deviceType: AutocastDeviceType;
  /**
   * The lower-precision dtype: 'bfloat16' or 'float16' on both CPU and CUDA. Defaults to
   * the device's current autocast dtype (bfloat16 for CPU, float16 for CUDA unless changed).
   */
  dtype?: DType;
  /** Whether autocast is on in the region (default true); false turns it off inside an enclosing region. */
  enabled?: boolean;
}

const OPTIONS = optionNames<AutocastOptions>({ deviceType: true, dtype: true, enabled: true });

const DEVICE_TYPES: readonly string[] = ['cpu', 'cuda'];
// torch.autocast accepts these two for every device type (device_supported_dtypes).
const SUPPORTED_DTYPES: readonly DType[] = ['bfloat16', 'float16'];

interface Region {
  deviceType: AutocastDeviceType;
  enabled: boolean;
  dtype: number;
}

let warnedNoCuda = false;

function resolve(opts: AutocastOptions): Region {
  if (opts === null || typeof opts !== 'object') {
    throw new TypeError("autocast(): expected options { deviceType: 'cpu' | 'cuda', dtype?, enabled? }");
  }
  checkOptions('autocast', opts, OPTIONS);
  const { deviceType } = opts;
  if (typeof deviceType !== 'string' || !DEVICE_TYPES.includes(deviceType)) {
    throw new TypeError(
      `autocast(): unsupported deviceType '${String(deviceType)}'; expected one of ${DEVICE_TYPES.join(', ')}`,
    );
  }
  let code: number;
  if (opts.dtype === undefined) {
    code = native.getAutocast(deviceType)[1];
  } else {
    // The one alias table (core/dtype.ts): 'half' is float16, as torch.half.
    const name = toDType(opts.dtype, 'autocast(): dtype');
    code = dtypeCode(name);
    // PyTorch warns and silently runs the region without autocast for any other dtype;
    // a region that quietly does nothing is a worse surprise than an error here.
    if (!SUPPORTED_DTYPES.includes(name)) {
      throw new TypeError(
        `autocast(): ${deviceType.toUpperCase()} autocast supports dtypes ${SUPPORTED_DTYPES.join(', ')}; got '${opts.dtype}'`,
      );
    }
  }
  let enabled = opts.enabled ?? true;
  if (typeof enabled !== 'boolean') throw new TypeError('autocast(): enabled must be a boolean');
  if (enabled && deviceType === 'cuda' && !cuda.isAvailable()) {
    // As torch.autocast does: a CUDA region on a machine without CUDA runs without autocast.
    if (!warnedNoCuda) {
      warnedNoCuda = true;
      process.emitWarning('CUDA is not available. Disabling CUDA autocast.', 'TsddpWarning');
    }
    enabled = false;
  }
  return { deviceType, enabled, dtype: code };
}

/** torch.autocast.__enter__: save the device's state, set the region's, count the nesting. */
function enter(r: Region): [boolean, number] {
  const prev = native.getAutocast(r.deviceType);
  native.setAutocast(r.deviceType, r.enabled, r.dtype);
  native.autocastEnter();
  return prev;
}

/** torch.autocast.__exit__: leaving the outermost region clears the cast cache; restore the saved state. */
function exit(r: Region, prev: [boolean, number]): void {
  native.autocastExit();
  native.setAutocast(r.deviceType, prev[0], prev[1]);
}

/**
 * Runs `fn` with autocast set as `opts` says, and restores the previous state afterwards
 * (also when `fn` throws). Regions nest: an inner `{ enabled: false }` turns autocast off.
 *
 * ```ts
 * const out = autocast({ deviceType: 'cpu', dtype: 'bfloat16' }, () => model.forward(x));
 * ```
 */
export function autocast<T>(opts: AutocastOptions, fn: () => T): T {
  const r = resolve(opts);
  const prev = enter(r);
  try {
    const out = fn();
    if (out instanceof Promise) {
      throw new TypeError('autocast() got an async function; use autocastAsync()');
    }
    return out;
  } finally {
    exit(r, prev);
  }
}

/**
 * The async form of autocast(): the state is restored when the promise settles.
 *
 * libtorch keeps autocast state per thread, not per async task. While `fn` is suspended
 * at an `await`, any other task that runs on this thread also sees the region's state,
 * and two regions that interleave restore each other's saved state in completion order.
 * This is exactly what `with torch.autocast(...)` around an `await` does in Python's
 * asyncio. Keep the awaited work inside one task, or use the sync form around the
 * forward pass only.
 */
export async function autocastAsync<T>(opts: AutocastOptions, fn: () => Promise<T>): Promise<T> {
  const r = resolve(opts);
  const prev = enter(r);
  try {
    return await fn();
  } finally {
    exit(r, prev);
  }
}

/** torch.is_autocast_enabled(device_type). */
export function isAutocastEnabled(deviceType: AutocastDeviceType): boolean {
  return native.getAutocast(deviceType)[0];
}

/** torch.get_autocast_dtype(device_type). */
export function getAutocastDtype(deviceType: AutocastDeviceType): DType {
  return dtypeFromCode(native.getAutocast(deviceType)[1]);
}
