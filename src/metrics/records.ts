// The metrics schema: the JSON records a training run writes, one per line (files.ts),
// and that the report (report/) and the dashboard (dashboard/) read. A leaf module:
// it imports nothing of tsddp (architecture §8).

/** One optimizer step on one rank. Times in ms; rates in images/s. */
export interface StepRecord {
  type: 'step';
  rank: number;
  epoch: number;
  step: number;
  loss: number;
  /** Top-1 accuracy on this rank's training batches of the step. */
  acc: number;
  lr: number;
  /** Images this rank processed in the step (batch x accumulation). */
  images: number;
  imagesPerSec: number;
  /** Waiting for the data loader. */
  dataMs: number;
  forwardMs: number;
  /** Backward, including waiting for the last gradient all-reduce. */
  backwardMs: number;
  optimizerMs: number;
  stepMs: number;
  /** From DistributedDataParallel.stats() (c10d::Logger averages): all-reduce time and its overlap with backward. */
  commMs?: number;
  overlapMs?: number;
  /** Live tensors after the step: flat in a healthy loop. */
  liveTensors: number;
  /** With --skip-bad-samples: training samples this rank has skipped so far (they failed to load). */
  skippedSamples?: number;
  /** The run's plan (for the dashboard's ETA): the step it stops at and its epochs. */
  totalSteps?: number;
  epochs?: number;
  time: number;
}

export interface EvalRecord {
  type: 'eval';
  rank: number;
  epoch: number;
  step: number;
  /** Across all ranks. */
  loss: number;
  top1: number;
  top5: number;
  count: number;
  /** Validation samples this rank evaluated. */
  localCount: number;
  time: number;
}

export interface ResumeRecord {
  type: 'resume';
  rank: number;
  step: number;
  epoch: number;
  checkpoint: string;
  time: number;
}

export interface SummaryRecord {
  type: 'summary';
  rank: number;
  step: number;
  worldSize: number;
  steps: number;
  wallSec: number;
  imagesPerSec: number;
  time: number;
}

export type MetricRecord = StepRecord | EvalRecord | ResumeRecord | SummaryRecord;

/** A launcher serving the dashboard names the workers' metrics file here; train() uses it when none is given. */
export const METRICS_FILE_ENV = 'TSDDP_METRICS_FILE';
