// The worker environment that torchrun (and tsrun) sets, parsed and validated by src/env's
// one rule.
import { envInt } from '../env/index.ts';

export interface DistEnv {
  rank: number;
  worldSize: number;
  localRank: number;
  localWorldSize: number;
  masterAddr: string;
  masterPort: number;
  restartCount: number;
  /**
   * The launcher hosts the TCPStore, so rank 0 connects as a client too: torchrun's
   * TORCHELASTIC_USE_AGENT_STORE=True (which tsrun also sets).
   */
  agentStore: boolean;
  /** Set by tsrun (TSDDP_USE_AGENT_STORE=1): its store outlives a restart, so keys carry the attempt. */
  tsrunStore: boolean;
}

function intVar(env: NodeJS.ProcessEnv, name: string, fallback?: number): number {
  return envInt(name, {
    env,
    fallback,
    missing: `env:// rendezvous needs the environment variable ${name} (set by tsrun/torchrun)`,
  });
}

export function readDistEnv(env: NodeJS.ProcessEnv = process.env): DistEnv {
  const rank = intVar(env, 'RANK');
  const worldSize = intVar(env, 'WORLD_SIZE');
  if (worldSize < 1) throw new TypeError('WORLD_SIZE must be at least 1');
  if (rank >= worldSize) throw new TypeError(`RANK=${rank} is out of range for WORLD_SIZE=${worldSize}`);
  const masterPort = intVar(env, 'MASTER_PORT');
  if (masterPort < 1 || masterPort > 65535)
    throw new TypeError(`MASTER_PORT=${masterPort} is not a valid port`);
  return {
    rank,
    worldSize,
    localRank: intVar(env, 'LOCAL_RANK', rank),
    localWorldSize: intVar(env, 'LOCAL_WORLD_SIZE', worldSize),
    masterAddr: env.MASTER_ADDR || '127.0.0.1',
    masterPort,
    restartCount: intVar(env, 'TORCHELASTIC_RESTART_COUNT', 0),
    agentStore: env.TORCHELASTIC_USE_AGENT_STORE === 'True' || env.TSDDP_USE_AGENT_STORE === '1',
    tsrunStore: env.TSDDP_USE_AGENT_STORE === '1',
  };
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host.startsWith('127.') || host === '::1';
}
