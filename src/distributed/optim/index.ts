// torch.distributed.optim: ZeroRedundancyOptimizer (ZeRO-1).
export {
  type OptimizerClass,
  ZeroRedundancyOptimizer,
  type ZeroRedundancyOptimizerOptions,
} from './zero-redundancy-optimizer.ts';
