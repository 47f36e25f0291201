// The training recipe (`tsddp train` as a library): the config schema, the Trainer and
// its parts. The command line's own pieces (flags, --help) live in src/cli.

// The metrics a run writes (the report and dashboard read them).
export {
  type EvalRecord,
  METRICS_FILE_ENV,
  type MetricRecord,
  MetricsWriter,
  type StepRecord,
} from '../metrics/index.ts';
export {
  AMP_MODES,
  COMM_HOOKS,
  ConfigError,
  DATASETS,
  imageSizeOf,
  MODELS,
  type OptionName,
  parseConfig,
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
  epochBatches,
  type Loaders,
  prepareImages,
  ResumableSampler,
  seedBatchGenerator,
} from './data.ts';
export { type EvalResult, type EvaluateOptions, evaluate } from './evaluate.ts';
export {
  globalBatchOf,
  isRunPlan,
  lrOf,
  PLAN_ENV,
  planRun,
  type RunPlan,
  withOptions,
} from './plan.ts';
export { PreflightError } from './preflight.ts';
export { PriorRunError } from './prior-run.ts';
export { buildScheduler } from './schedule.ts';
export { type StepInfo, Trainer, type TrainHooks, type TrainResult, train } from './trainer.ts';
