export * as algorithms from './algorithms.ts';
export {
  allGather,
  allGatherCoalesced,
  allGatherIntoTensor,
  allGatherSingle,
  allReduce,
  allReduceCoalesced,
  allToAll,
  allToAllSingle,
  barrier,
  batchIsendIrecv,
  broadcast,
  type CollectiveOptions,
  gather,
  irecv,
  isend,
  type MonitoredBarrierOptions,
  monitoredBarrier,
  P2POp,
  type P2POptions,
  type RootOptions,
  recv,
  reduce,
  reduceScatter,
  reduceScatterSingle,
  reduceScatterTensor,
  scatter,
  send,
} from './collectives.ts';
export { type CommHook, type DDPOptions, type DDPStats, DistributedDataParallel } from './ddp.ts';
export * as deviceMesh from './device-mesh.ts';
export { DeviceMesh, type DeviceMeshOptions, initDeviceMesh } from './device-mesh.ts';
export { type DistEnv, readDistEnv } from './env.ts';
export { DistributedError, explainPeerFault } from './errors.ts';
export * as fsdp from './fsdp/index.ts';
export {
  getBackend,
  getBackendConfig,
  getGlobalRank,
  getGroupRank,
  getPgCount,
  getProcessGroupRanks,
  type NewGroupOptions,
  newGroup,
  newSubgroups,
  newSubgroupsByEnumeration,
} from './groups.ts';
export {
  DebugLevel,
  getDebugLevel,
  getDefaultBackendForDevice,
  getNodeLocalRank,
  isAvailable,
  isBackendAvailable,
  isGlooAvailable,
  isMpiAvailable,
  isNcclAvailable,
  isTorchelasticLaunched,
  isUccAvailable,
  isXcclAvailable,
  setDebugLevel,
  setDebugLevelFromEnv,
  supportsComplex,
} from './info.ts';
export {
  allGatherObject,
  broadcastObjectList,
  gatherObject,
  type ObjectOptions,
  type RootObjectOptions,
  recvObjectList,
  scatterObjectList,
  sendObjectList,
} from './object-collectives.ts';
export * as optim from './optim/index.ts';
export type { PowerSGDOptions, PowerSGDStats } from './powersgd.ts';
export {
  type Backend,
  destroyProcessGroup,
  getDefaultGroup,
  getRank,
  getWorldSize,
  type InitOptions,
  initProcessGroup,
  isInitialized,
  ProcessGroup,
  ReduceOp,
  Work,
} from './process-group.ts';
export { Store } from './store.ts';
