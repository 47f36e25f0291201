// The training recipe (`tsddp train`): config schema, trainer loop, evaluation, metrics.
export {
  AMP_MODES,
  COMM_HOOKS,
  ConfigError,
  DATASETS,
  flagOf,
  globalBatch,
  imageSizeOf,
  MODELS,
  OPTIONS,
  type OptionName,
  parseConfig,
  resolveLr,
  resolveStem,
  resolveWarmupEpochs,
  SCHEDULES,
  type TrainConfig,
  type TrainConfigInput,
  TrainConfigSchema,
} from './config.ts';
export {
  buildDatasets,
  buildLoaders,
  type DataSetup,
  prepareImages,
  ResumableSampler,
  seedBatchGenerator,
} from './data.ts';
export { type EvalResult, type EvaluateOptions, evaluate } from './evaluate.ts';
export { parseTrainArgs, readConfigFile, type TrainArgs, trainHelp } from './flags.ts';
export {
  type EvalRecord,
  effectiveRecords,
  METRICS_FILE_ENV,
  type MetricRecord,
  MetricsWriter,
  mergeMetrics,
  mergeRankFiles,
  rankFile,
  rankFilesOf,
  readJsonLines,
  type StepRecord,
} from './metrics.ts';
export { checkCheckpointFolder, PreflightError } from './preflight.ts';
export { findPriorRun, guardPriorRun, type PriorRun, PriorRunError } from './prior-run.ts';
export { formatDuration, Progress, type ProgressInfo } from './progress.ts';
export { buildScheduler } from './schedule.ts';
export { type StepInfo, type TrainHooks, type TrainResult, train } from './trainer.ts';
