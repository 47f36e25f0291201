// pytorch/examples' time_sequence_prediction (generate_sine_wave.py + train.py), ported
// line by line: two stacked LSTM cells and a linear layer learn sine waves in float64,
// trained with LBFGS (a closure that recomputes the loss), then predict `future` steps
// past the data. The waves are generated here, as generate_sine_wave.py does (its
// numpy draws become a seeded t.randint).
//
//   node --import tsx examples/pytorch/time_sequence_prediction.ts [--steps 15] [--samples 100] [--length 1000] [--future 1000]
import { parseArgs } from 'node:util';
import * as t from '../../src/index.ts';

const { values: args } = parseArgs({
  options: {
    steps: { type: 'string', default: '15' },
    samples: { type: 'string', default: '100' },
    length: { type: 'string', default: '1000' },
    future: { type: 'string', default: '1000' },
  },
});
const steps = Number(args.steps);
const [N, L, future] = [Number(args.samples), Number(args.length), Number(args.future)];

/** generate_sine_wave.py: N waves of length L, each shifted by a random offset, period 2πT. */
function sineWaves(): t.Tensor {
  const T = 20;
  const shift = t.randint(-4 * T, 4 * T, [N, 1], { generator: new t.Generator().manualSeed(2) });
  const x = t.arange(L).reshape([1, L]).add(shift);
  return x.div(T).to('float64').sin();
}

class Sequence extends t.nn.Module {
  lstm1 = new t.nn.LSTMCell(1, 51);
  lstm2 = new t.nn.LSTMCell(51, 51);
  linear = new t.nn.Linear(51, 1);

  override forward(input: t.Tensor, future = 0): t.Tensor {
    const outputs: t.Tensor[] = [];
    const zeros = () => t.zeros(input.size(0), 51, { dtype: 'float64' });
    let [h, c, h2, c2] = [zeros(), zeros(), zeros(), zeros()];
    let output = zeros();
    const cell = (x: t.Tensor) => {
      [h, c] = this.lstm1.forward(x, [h, c]);
      [h2, c2] = this.lstm2.forward(h, [h2, c2]);
      output = this.linear.forward(h2);
      outputs.push(output);
    };
    for (const inputT of input.split(1, 1)) cell(inputT);
    for (let i = 0; i < future; i++) cell(output); // if we should predict the future
    return t.cat(outputs, 1);
  }
}

t.manualSeed(0);
const data = sineWaves();
const input = data.slice(0, 3).slice(1, 0, -1);
const target = data.slice(0, 3).slice(1, 1);
const testInput = data.slice(0, 0, 3).slice(1, 0, -1);
const testTarget = data.slice(0, 0, 3).slice(1, 1);
const seq = new Sequence();
seq.double();
const criterion = new t.nn.MSELoss();
const optimizer = new t.optim.LBFGS(seq.parameters(), { lr: 0.8 });
for (let i = 0; i < steps; i++) {
  console.log('STEP: ', i);
  const closure = () => {
    optimizer.zeroGrad();
    const out = seq.forward(input);
    const loss = criterion.forward(out, target);
    console.log('loss:', loss.item());
    loss.backward();
    return loss;
  };
  optimizer.step(closure);
  t.noGrad(() => {
    const pred = seq.forward(testInput, future);
    const loss = criterion.forward(pred.slice(1, 0, pred.size(1) - future), testTarget);
    console.log('test loss:', loss.item());
  });
}
