// What torch.distributed says about itself: which backends this build has, the launcher,
// and c10d's debug level (TORCH_DISTRIBUTED_DEBUG).
import { native } from '../core/native.ts';
import { cuda } from '../core/runtime.ts';
import { envInt } from '../env/index.ts';

/** torch.distributed is always built into tsddp (the Gloo backend is). */
export function isAvailable(): boolean {
  return true;
}

export function isGlooAvailable(): boolean {
  return true;
}

/** NCCL is built in when the addon has its CUDA part (a CUDA libtorch and NCCL headers at build time). */
export function isNcclAvailable(): boolean {
  return cuda.isBuilt();
}

/** tsddp has no MPI backend. */
export function isMpiAvailable(): boolean {
  return false;
}

/** tsddp has no UCC backend. */
export function isUccAvailable(): boolean {
  return false;
}

/** tsddp has no XCCL (Intel GPU) backend. */
export function isXcclAvailable(): boolean {
  return false;
}

/** Whether `backend` ('gloo', 'nccl', 'mpi', 'ucc', 'xccl') is built in. */
export function isBackendAvailable(backend: string): boolean {
  const has: Record<string, () => boolean> = {
    gloo: isGlooAvailable,
    nccl: isNcclAvailable,
    mpi: isMpiAvailable,
    ucc: isUccAvailable,
    xccl: isXcclAvailable,
  };
  return has[backend.toLowerCase()]?.() ?? false;
}

/** The backend PyTorch picks for a device type: 'gloo' for 'cpu', 'nccl' for 'cuda'. */
export function getDefaultBackendForDevice(device: string): 'gloo' | 'nccl' {
  const type = device.split(':')[0];
  if (type === 'cpu') return 'gloo';
  if (type === 'cuda') return 'nccl';
  throw new TypeError(
    `getDefaultBackendForDevice(): no default backend for device '${device}' (cpu or cuda)`,
  );
}

/** Whether collectives take complex tensors with `op` (all but MAX, MIN, PRODUCT, BAND, BOR, BXOR). */
export function supportsComplex(op: string): boolean {
  return !['max', 'min', 'product', 'band', 'bor', 'bxor'].includes(op);
}

/** Whether this process was started by torchrun or tsrun (TORCHELASTIC_RUN_ID is set). */
export function isTorchelasticLaunched(): boolean {
  return process.env.TORCHELASTIC_RUN_ID !== undefined;
}

/** LOCAL_RANK, as the launcher sets it (torch.distributed.get_node_local_rank). */
export function getNodeLocalRank(fallbackRank?: number): number {
  if (process.env.LOCAL_RANK !== undefined) return envInt('LOCAL_RANK');
  if (fallbackRank !== undefined) return fallbackRank;
  throw new TypeError(
    'getNodeLocalRank(): LOCAL_RANK is not set (the launcher sets it); pass fallbackRank to use another value',
  );
}

/** c10d's debug levels (TORCH_DISTRIBUTED_DEBUG=OFF|INFO|DETAIL). */
export const DebugLevel = Object.freeze({ OFF: 'OFF', INFO: 'INFO', DETAIL: 'DETAIL' } as const);
export type DebugLevel = (typeof DebugLevel)[keyof typeof DebugLevel];
const LEVELS: DebugLevel[] = ['OFF', 'INFO', 'DETAIL'];

export function getDebugLevel(): DebugLevel {
  return LEVELS[native.debugLevel()];
}

export function setDebugLevel(level: DebugLevel): void {
  const i = LEVELS.indexOf(level);
  if (i < 0)
    throw new TypeError(`setDebugLevel(): level must be one of ${LEVELS.join(', ')}, got '${level}'`);
  native.setDebugLevel(i);
}

/** Reads TORCH_DISTRIBUTED_DEBUG again, as torch.distributed.set_debug_level_from_env. */
export function setDebugLevelFromEnv(): void {
  const v = process.env.TORCH_DISTRIBUTED_DEBUG;
  if (v !== undefined && !LEVELS.includes(v.toUpperCase() as DebugLevel))
    throw new TypeError(`TORCH_DISTRIBUTED_DEBUG must be one of ${LEVELS.join(', ')}, got '${v}'`);
  native.setDebugLevel(-1);
}
