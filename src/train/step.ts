// One optimizer step of the recipe, as PyTorch's DDP training loop writes it: for each of
// `gradAccum` micro-batches, forward and loss under autocast and backward (all but the
// last under DDP's noSync, so gradients accumulate locally and one all-reduce follows the
// last); then gradient clipping (after unscaling), the optimizer (through the GradScaler
// with fp16), zero_grad and the schedule. Every micro-step runs in a memory scope, so the
// live-tensor count stays flat.
import { autocast } from '../amp/index.ts';
import * as t from '../core/index.ts';
import type { Batch } from '../data/index.ts';
import { seedBatchGenerator, trainingInputs } from './data.ts';
import type { RunPosition } from './position.ts';
import type { RunLog, StepTimes } from './run-log.ts';
import type { RunParts } from './setup.ts';
import { clipGradients, shardedRoot } from './strategy.ts';

const now = () => performance.now();

/** The watchdog's beat (launch/heartbeat.ts): the phase, and whether it waits for every peer. */
type Beat = (phase: string, waiting?: boolean) => void;

export class StepRunner {
  private readonly batchGenerator = new t.Generator();

  constructor(
    private readonly parts: RunParts,
    private readonly runLog: RunLog,
    private readonly beat: Beat,
  ) {}

  /** Runs the step at `at` on the next batches; returns the learning rate it used and its times. */
  async run(
    batches: AsyncIterator<Batch>,
    at: RunPosition,
  ): Promise<{ lr: number; ms: StepTimes & { optimizerMs: number; stepMs: number } }> {
    const { plan, ddp, optimizer, scaler, scheduler, model } = this.parts;
    const { gradAccum } = plan.loop;
    const started = now();
    const times: StepTimes = { dataMs: 0, forwardMs: 0, backwardMs: 0 };
    const lr = optimizer.paramGroups[0].lr;
    const sharded = shardedRoot(model);
    for (let m = 0; m < gradAccum; m++) {
      const t0 = now();
      this.beat('data loading');
      const next = await batches.next();
      times.dataMs += now() - t0;
      if (next.done)
        throw new Error(`the data loader ended after ${at.stepInEpoch} steps of epoch ${at.epoch}`);
      using batch = next.value;
      // Accumulate locally; only the last micro-batch's backward all-reduces (fsdp: reduce-scatters).
      sharded?.setRequiresGradientSync(m === gradAccum - 1);
      if (ddp !== null && m < gradAccum - 1) ddp.noSync(() => this.microStep(batch, at, m, times));
      else this.microStep(batch, at, m, times);
    }
    const t0 = now();
    this.beat('optimizer step');
    const clip = plan.optim.clipGradNorm;
    if (clip !== undefined) {
      // As PyTorch's recipe: unscale first, so the norm is of the true gradients.
      scaler?.unscale_(optimizer);
      clipGradients(model, clip);
    }
    if (scaler !== null) {
      scaler.step(optimizer);
      scaler.update();
    } else optimizer.step();
    optimizer.zeroGrad();
    scheduler.step();
    return { lr, ms: { ...times, optimizerMs: now() - t0, stepMs: now() - started } };
  }

  /** Forward and backward of micro-batch `m` of the step, in a memory scope. */
  private microStep(batch: Batch, at: RunPosition, m: number, times: StepTimes): void {
    using _ = t.scope();
    const { plan, on, ddp, model, scaler, pg } = this.parts;
    const { loop, optim } = plan;
    const index = at.stepInEpoch * loop.gradAccum + m;
    const generator = seedBatchGenerator(this.batchGenerator, loop.seed, at.epoch, index, pg.rank);
    const { x, y } = trainingInputs(batch, plan, this.parts.setup, on, generator);
    const t0 = now();
    const collective = pg.group !== null && pg.group.size > 1;
    this.beat('forward', collective); // DDP broadcasts buffers first; fsdp gathers parameters
    const net = ddp ?? model;
    const forward = () => {
      const logits = net.forward(x);
      return [logits, t.crossEntropy(logits, y, { labelSmoothing: optim.labelSmoothing })] as const;
    };
    const { deviceType, ampDtype } = on;
    const [logits, loss] = ampDtype === null ? forward() : autocast({ deviceType, dtype: ampDtype }, forward);
    times.forwardMs += now() - t0;
    const t1 = now();
    this.beat('backward and the gradient all-reduce', collective);
    const scaled = loop.gradAccum > 1 ? loss.div(loop.gradAccum) : loss;
    (scaler !== null ? scaler.scale(scaled) : scaled).backward();
    times.backwardMs += now() - t1;
    this.runLog.addMicroBatch(loss, logits, y);
  }
}
