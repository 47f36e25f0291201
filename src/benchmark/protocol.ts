// The JSON-lines protocol between the benchmark driver and its workers, the same for the
// tsddp worker (worker.ts) and the PyTorch one (bench/reference/ddp.py):
//   <- {"ready": true, ...ReadyInfo}                       once, at start
//   -> {"cmd": "setup", "case": BenchCase}  <- {"ok": true, "params": n}
//   -> {"cmd": "steps", "n": K}             <- StepsAnswer
//   -> {"cmd": "close"}                     <- {"ok": true}   (frees model and DDP)
//   EOF: the worker leaves the process group and exits.
// An answer {"error": message, "traceback"?: text} reports a failure.

export interface ReadyInfo {
  side: 'tsddp' | 'pytorch';
  /** tsddp: libtorch version it is built on; PyTorch: torch.__version__. */
  torch: string;
  /** Node or Python version. */
  runtime: string;
  threads: number;
  rank: number;
  world: number;
}

/** Seconds of one optimizer step on one rank. */
export interface StepSample {
  /** zero grads + forward + loss, summed over micro-batches. */
  fwd: number;
  /** backward (including the wait for the last bucket's all-reduce), summed over micro-batches. */
  bwd: number;
  opt: number;
  step: number;
  /** Minor page faults during the step: memory the allocator had to get from the kernel. */
  faults: number;
}

/**
 * c10d::Logger's numbers for one synchronised iteration (`iteration`, counted from 1),
 * recorded when the next one starts; with a runtime-stats sample rate of 1 on both sides.
 */
export interface CommSample {
  iteration: number;
  /** backward_comm_time: first bucket's all-reduce start to the last one's end, ms. */
  commMs: number;
  /** backward_compute_comm_overlap_time: the part of it that overlapped backward compute, ms. */
  overlapMs: number;
}

export interface StepsAnswer {
  steps: StepSample[];
  comm: CommSample[];
  /** The last step's loss (a sanity check: finite, similar on both sides). */
  loss: number;
  /** Bytes all nodes sent during these steps, when the runner can count them (RunOptions.txBytes); set by the runner. */
  txBytes?: number;
}
