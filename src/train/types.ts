// The recipe's public types: the hooks train() calls and what it returns.
import type { Module } from '../nn/index.ts';
import type { EvalResult } from './evaluate.ts';

export interface StepInfo {
  epoch: number;
  /** Optimizer steps done (global, 1-based after the first step). */
  step: number;
  rank: number;
  /** The checkpoint written after this step, if any. */
  checkpoint: string | null;
}

export interface TrainHooks {
  /** Builds the model instead of the config's ResNet: [B, 3, S, S] images -> [B, numClasses] logits. */
  model?: (numClasses: number) => Module;
  /** After every optimizer step (and its checkpoint). */
  onStep?: (info: StepInfo) => void | Promise<void>;
  /** After every evaluation, on every rank. */
  onEval?: (result: EvalResult & { epoch: number; step: number }) => void;
  /** Rank 0's progress line and messages (default true). */
  progress?: boolean;
  /** Where progress goes (default process.stdout). */
  out?: NodeJS.WritableStream & { isTTY?: boolean };
}

export interface TrainResult {
  rank: number;
  worldSize: number;
  /** Optimizer steps done in total (including those before a resume). */
  steps: number;
  /** Epochs completed. */
  epochs: number;
  /** The step this process started at (0, or the resumed checkpoint's). */
  startStep: number;
  resumedFrom: string | null;
  /** This rank's loss at the last step. */
  lastLoss: number;
  lastEval: EvalResult | null;
  checkpoints: string[];
  wallSec: number;
  /** Images per second over all ranks, for the steps this process ran. */
  imagesPerSec: number;
  lr: number;
}
