export { type CommHook, type DDPOptions, type DDPStats, DistributedDataParallel } from './ddp.ts';
export { type DistEnv, readDistEnv } from './env.ts';
export { DistributedError, explainPeerFault } from './errors.ts';
export type { PowerSGDOptions, PowerSGDStats } from './powersgd.ts';
export {
  allGather,
  allReduce,
  type Backend,
  barrier,
  broadcast,
  type CollectiveOptions,
  destroyProcessGroup,
  getDefaultGroup,
  getRank,
  getWorldSize,
  type InitOptions,
  initProcessGroup,
  isInitialized,
  ProcessGroup,
  ReduceOp,
  reduceScatter,
  Work,
} from './process-group.ts';
export { Store } from './store.ts';
