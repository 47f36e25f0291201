// One rank of test/ddp.test.ts's error job: DDP misuse must surface as thrown errors
// (never a hang or a crash), and the process group must stay usable afterwards.
import * as t from '../../src/index.ts';
import { errorInfo, finish, rank, writeResult } from './common.ts';
import { Branchy, IN, inputs, mlp, mse, OUT, sgd, targets } from './models.ts';

const { DistributedDataParallel, DistributedError } = t.distributed;
const { nn } = t;

t.distributed.initProcessGroup({ backend: 'gloo', timeoutMs: 30_000 });
const rows = 3;

function caught(fn: () => unknown) {
  try {
    fn();
  } catch (e) {
    return {
      ...errorInfo(e),
      isTorchError: e instanceof t.TorchError,
      isDistributedError: e instanceof DistributedError,
    };
  }
  return null;
}

// A branch unused at step 1 without findUnusedParameters: libtorch's Reducer refuses the
// next iteration.
const unused = (() => {
  const model = new Branchy(100 + rank);
  const ddp = new DistributedDataParallel(model, { bucketCapMb: 1e-4 });
  const opt = sgd(model);
  const start = Date.now();
  for (let step = 0; step < 4; step++) {
    using _ = t.scope();
    let phase = 'forward';
    const error = caught(() => {
      const y = ddp.forward(inputs(step, rank * rows, rows), step !== 1) as t.Tensor;
      phase = 'backward';
      mse(y, targets(step, rank * rows, rows)).backward();
      phase = 'step';
      opt.step();
      opt.zeroGrad();
    });
    if (error) {
      ddp.close();
      return { step, phase, error, elapsedMs: Date.now() - start };
    }
  }
  ddp.close();
  return null;
})();

// Models that differ between ranks are refused at construction.
class Deeper extends nn.Sequential {
  constructor() {
    super(new nn.Linear(IN, 8), new nn.ReLU(), new nn.Linear(8, OUT), new nn.Linear(OUT, OUT));
  }
}
const shapeMismatch = caught(() => new DistributedDataParallel(mlp(100, rank === 1 ? 9 : 8)));
const countMismatch = caught(() => new DistributedDataParallel(rank === 1 ? new Deeper() : mlp(100)));

// Bad options are refused with a clear error.
const badOptions = {
  bucketCapMb: caught(() => new DistributedDataParallel(mlp(100), { bucketCapMb: 0 })),
  noParameters: caught(() => new DistributedDataParallel(new nn.ReLU())),
  commHook: caught(() => new DistributedDataParallel(mlp(100), { commHook: 'fp8' as 'fp16' })),
};

// Still one working group: a collective after all of the above.
const x = t.tensor([rank + 1]);
await t.distributed.allReduce(x, 'sum');
const allReduceAfter = x.item();
t.distributed.destroyProcessGroup();
writeResult({ unused, shapeMismatch, countMismatch, badOptions, allReduceAfter });
finish(0);
