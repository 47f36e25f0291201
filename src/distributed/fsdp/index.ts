// torch.distributed.fsdp: fully sharded data parallel (FSDP2's fully_shard).
export { type FSDPModule, type FullyShardOptions, fullyShard } from './fully-shard.ts';
export { CPUOffloadPolicy, OffloadPolicy } from './offload.ts';
export type { MixedPrecisionPolicy } from './param-group.ts';
export {
  clipGradNorm_,
  getModelStateDict,
  getOptimizerStateDict,
  type StateDictOptions,
  setModelStateDict,
  setOptimizerStateDict,
} from './state-dict.ts';
