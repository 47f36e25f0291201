// Where this process sits in the run: the process group of a launched run (tsrun/torchrun
// set RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; distributed/env.ts reads them), the one
// the caller already initialized, or none (one process alone). Architecture §5, §9.
import * as t from '../core/index.ts';
import * as dist from '../distributed/index.ts';
import { storeUnreachable } from '../distributed/process-group.ts';
import { announceStoreWait, cppStacktracesShown, waitForStore } from '../distributed/store-probe.ts';
import { ConfigError } from './config.ts';
import type { LaunchPlan } from './plan.ts';

/** Where the math runs: the device, and the autocast dtype (null: full precision). */
export interface Placement {
  device: string;
  deviceType: 'cpu' | 'cuda';
  ampDtype: 'bfloat16' | 'float16' | null;
}

export interface RunPlacement {
  group: dist.ProcessGroup | null;
  rank: number;
  worldSize: number;
  localRank: number;
  /** TORCHELASTIC_RESTART_COUNT: how often the launcher restarted the gang. */
  restartCount: number;
  /** Whether this placement created the group (and so destroys it at the end). */
  created: boolean;
}

/**
 * How long a peer may be silent: --timeout, else 5 minutes when every rank is on this
 * node (a stopped or stuck peer is a local fault, no reason to wait PyTorch's half hour)
 * and 30 minutes across nodes, where a slow node or file system is more likely.
 */
export function timeoutSeconds(
  c: Pick<LaunchPlan, 'timeout'>,
  env: { worldSize: number; localWorldSize: number },
): number {
  return c.timeout ?? (env.localWorldSize === env.worldSize ? 300 : 1800);
}

function launched(env: NodeJS.ProcessEnv): boolean {
  return env.RANK !== undefined || env.WORLD_SIZE !== undefined;
}

/** Joins the run's process group (or takes the initialized one, or none). */
export async function joinProcessGroup(
  c: Pick<LaunchPlan, 'timeout' | 'backend'>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<RunPlacement> {
  const denv = launched(env) ? dist.readDistEnv(env) : null;
  const restartCount = denv?.restartCount ?? 0;
  if (dist.isInitialized()) {
    const g = dist.getDefaultGroup();
    const localRank = denv?.localRank ?? g.rank;
    return { group: g, rank: g.rank, worldSize: g.size, localRank, restartCount, created: false };
  }
  if (denv === null) {
    return { group: null, rank: 0, worldSize: 1, localRank: 0, restartCount, created: false };
  }
  // One process per GPU: LOCAL_RANK's device is this process's current one, which NCCL
  // and every CUDA tensor of the run use (PyTorch's torch.cuda.set_device(local_rank)).
  if (t.cuda.isAvailable()) {
    const n = t.cuda.deviceCount();
    if (denv.localRank >= n) {
      const msg = `LOCAL_RANK ${denv.localRank} but this node has ${n} CUDA device(s): start one process per GPU (--nproc-per-node gpu)`;
      throw new ConfigError(msg, [msg]);
    }
    if (t.cuda.isBuilt()) t.cuda.setDevice(denv.localRank);
  }
  const timeoutS = timeoutSeconds(c, denv);
  // A client of the store (every rank but a serving rank 0) says at once when nothing is there.
  if (denv.rank !== 0 || denv.agentStore) await awaitStore(denv, timeoutS);
  const g = dist.initProcessGroup({ backend: c.backend, timeoutMs: timeoutS * 1000 });
  return {
    group: g,
    rank: g.rank,
    worldSize: g.size,
    localRank: denv.localRank,
    restartCount,
    created: true,
  };
}

/**
 * Waits for the store at MASTER_ADDR:MASTER_PORT with plain TCP connects, up to the
 * timeout, and fails with a DistributedError naming it when nothing answers: libtorch's
 * client would log each failed try with its C++ stack on this process's stderr, which no
 * launcher may filter (store-probe.ts). TORCH_SHOW_CPP_STACKTRACES=1 leaves it to libtorch.
 */
async function awaitStore(denv: dist.DistEnv, timeoutS: number): Promise<void> {
  const { masterAddr, masterPort, rank } = denv;
  const deadline = Date.now() + timeoutS * 1000;
  if (await announceStoreWait(masterAddr, masterPort, rank, timeoutS)) return;
  if (cppStacktracesShown()) return;
  const why = await waitForStore(masterAddr, masterPort, deadline - Date.now());
  if (why !== null) throw storeUnreachable(rank, masterAddr, masterPort, timeoutS * 1000, why);
}
