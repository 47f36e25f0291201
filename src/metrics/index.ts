// Training metrics: the record schema, the JSONL rank files and their merge, and the
// formatting the trainer, the report and the dashboard share (architecture §8).
export {
  checkMetricsPath,
  describeKind,
  effectiveRecords,
  isTsddpMetricsFile,
  MetricsWriter,
  mergedRecords,
  mergeMetrics,
  mergeRankFiles,
  rankFile,
  rankFilesOf,
  readJsonLines,
  removeMetricsFile,
} from './files.ts';
export { formatDuration } from './format.ts';
export {
  type EvalRecord,
  METRICS_FILE_ENV,
  type MetricRecord,
  type ResumeRecord,
  type StepRecord,
  type SummaryRecord,
} from './records.ts';
