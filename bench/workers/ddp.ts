// One rank of the tsddp side of bench/ddp.ts when it measures ViT cases: src/benchmark/
// worker.ts (the worker of `tsddp bench`) with the ViT models of bench/lib/ddp-session-vit.ts
// added; ResNet cases go to src/benchmark/session-ts.ts as there. Started by
// bench/lib/ddp-runner.ts with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and
// OMP_NUM_THREADS set; speaks src/benchmark/protocol.ts on stdin/stdout.
import { createInterface } from 'node:readline';
import type { BenchCase } from '../../src/benchmark/cases.ts';
import type { ReadyInfo, StepsAnswer } from '../../src/benchmark/protocol.ts';
import { TsDdpSession } from '../../src/benchmark/session-ts.ts';
import { buildInfo, getNumThreads, setNumThreads } from '../../src/core/index.ts';
import { destroyProcessGroup, initProcessGroup } from '../../src/distributed/index.ts';
import { isVitModel, TsVitDdpSession } from '../lib/ddp-session-vit.ts';

interface Session {
  readonly params: number;
  steps(n: number): StepsAnswer;
  close(): void;
}

const rank = Number(process.env.RANK);
const world = Number(process.env.WORLD_SIZE);
const threads = Number(process.env.OMP_NUM_THREADS);
if (Number.isInteger(threads) && threads > 0) setNumThreads(threads);
initProcessGroup({ backend: 'gloo', initMethod: 'env://', timeoutMs: 10 * 60_000 });

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

let session: Session | null = null;
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  try {
    const req = JSON.parse(line) as { cmd: string; case?: BenchCase; n?: number };
    if (req.cmd === 'setup') {
      session?.close();
      session = null;
      const c = req.case as BenchCase;
      session = isVitModel(c.model) ? new TsVitDdpSession(c, rank) : new TsDdpSession(c, rank);
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
