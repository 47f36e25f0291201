// One rank of the tsddp side of the DDP benchmark (started by gang.ts with RANK,
// WORLD_SIZE, MASTER_ADDR, MASTER_PORT and OMP_NUM_THREADS set): joins the process group
// (Gloo; NCCL with one GPU per rank where there are GPUs), then answers the driver's requests (protocol.ts) until stdin closes.
import { createInterface } from 'node:readline';
import { backends, buildInfo, cuda, getNumThreads, setNumThreads } from '../core/index.ts';
import { destroyProcessGroup, initProcessGroup } from '../distributed/index.ts';
import type { BenchCase } from './cases.ts';
import type { ReadyInfo } from './protocol.ts';
import { TsDdpSession } from './session-ts.ts';

const rank = Number(process.env.RANK);
const world = Number(process.env.WORLD_SIZE);
const threads = Number(process.env.OMP_NUM_THREADS);
if (Number.isInteger(threads) && threads > 0) setNumThreads(threads);
if (cuda.isAvailable()) {
  // The DDP recipe on GPUs, as bench/reference/ddp.py: one process per GPU, NCCL
  // (backend 'auto'), cuDNN's autotuner.
  cuda.setDevice(Number(process.env.LOCAL_RANK ?? rank));
  backends.cudnn.benchmark = true;
}
initProcessGroup({ backend: 'auto', initMethod: 'env://', timeoutMs: 10 * 60_000 });

const answer = (obj: object): void => {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
};
const ready: ReadyInfo = {
  side: 'tsddp',
  torch: buildInfo().torchVersion,
  runtime: `Node ${process.version}`,
  threads: getNumThreads(),
  rank,
  world,
};
answer({ ready: true, ...ready });

let session: TsDdpSession | null = null;
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  try {
    const req = JSON.parse(line) as { cmd: string; case?: BenchCase; n?: number };
    if (req.cmd === 'setup') {
      session?.close();
      session = null;
      session = new TsDdpSession(req.case as BenchCase, rank);
      answer({ ok: true, params: session.params });
    } else if (req.cmd === 'steps') {
      if (!session) throw new Error('steps before setup');
      answer(session.steps(req.n ?? 1));
    } else if (req.cmd === 'close') {
      session?.close();
      session = null;
      answer({ ok: true });
    } else throw new Error(`unknown cmd '${req.cmd}'`);
  } catch (e) {
    const err = e as Error;
    answer({ error: `${err.name}: ${err.message}`, traceback: err.stack ?? '' });
  }
}
session?.close();
destroyProcessGroup();
// Gloo's threads must not keep the process alive after the driver has gone.
process.exit(0);
