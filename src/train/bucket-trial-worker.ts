// One rank of --tune's bucket trial (tune-buckets.ts starts `world` of them through
// src/host/gang.ts, with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and OMP_NUM_THREADS
// set): the run's own model and optimizer (setup.ts) wrapped in DistributedDataParallel
// with the bucket size asked, stepping one fixed synthetic batch. It answers the driver's
// JSON lines ({cmd: 'setup' | 'steps' | 'close'}) until its stdin closes.
import { createInterface } from 'node:readline';
import * as t from '../core/index.ts';
import * as dist from '../distributed/index.ts';
import { BucketSession, type BucketSetup, type BucketStep } from './ddp-trial.ts';
import type { Placement } from './process-group.ts';

export type { BucketSetup, BucketStep };

/** The rank's loop: join the group, say ready, answer each request. */
async function serve(): Promise<void> {
  const rank = Number(process.env.RANK);
  const threads = Number(process.env.OMP_NUM_THREADS);
  if (Number.isInteger(threads) && threads > 0) t.setNumThreads(threads);
  const useCuda = t.cuda.isAvailable();
  if (useCuda) t.cuda.setDevice(Number(process.env.LOCAL_RANK ?? rank));
  dist.initProcessGroup({ backend: 'auto', initMethod: 'env://', timeoutMs: 10 * 60_000 });
  const answer = (obj: object) => process.stdout.write(`${JSON.stringify(obj)}\n`);
  answer({ ready: true, rank });
  let session: BucketSession | null = null;
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.trim() === '') continue;
    try {
      const req = JSON.parse(line) as { cmd: string; setup?: BucketSetup; n?: number };
      if (req.cmd === 'setup') {
        session?.close();
        session = null;
        const s = req.setup as BucketSetup;
        const amp = s.plan.amp.dtype;
        // As the run sets it (setup.ts): cuDNN times its kernels at the first step and keeps the fastest.
        if (useCuda) t.backends.cudnn.benchmark = s.plan.launch.cudnnBenchmark;
        const on: Placement = {
          device: useCuda ? `cuda:${t.cuda.currentDevice()}` : 'cpu',
          deviceType: useCuda ? 'cuda' : 'cpu',
          ampDtype: amp,
        };
        session = new BucketSession(s, on, rank);
        answer({ ok: true });
      } else if (req.cmd === 'steps' && session !== null) {
        const steps: BucketStep[] = [];
        for (let i = 0; i < (req.n ?? 1); i++) steps.push(session.step());
        answer({ steps });
      } else if (req.cmd === 'close') {
        session?.close();
        session = null;
        answer({ ok: true });
      } else throw new Error(`unknown or out-of-order request '${req.cmd}'`);
    } catch (e) {
      const err = e as Error;
      answer({ error: `${err.name}: ${err.message}`, traceback: err.stack ?? '' });
    }
  }
  session?.close();
  dist.destroyProcessGroup();
}

await serve();
// Gloo's threads must not keep the process alive after the driver has gone.
process.exit(0);
