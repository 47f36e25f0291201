// pytorch/examples' word_language_model (main.py), ported line by line: a word-level
// language model (LSTM, GRU, RNN_TANH/RNN_RELU, or a Transformer) on a corpus folder of
// train.txt, valid.txt and test.txt, trained with truncated backpropagation through time,
// gradient clipping and plain SGD, the learning rate divided by 4 when validation stops
// improving; the best model is saved and tested at the end.
//
//   node --import tsx examples/pytorch/word_language_model/main.ts --data <folder> [--model LSTM|GRU|RNN_TANH|RNN_RELU|Transformer] [--epochs 40] ...
import { parseArgs } from 'node:util';
import * as t from '../../../src/index.ts';
import { Corpus } from './data.ts';
import { type Hidden, RNNModel, type RnnType, TransformerModel } from './model.ts';

const { values: a } = parseArgs({
  options: {
    data: { type: 'string', default: './data/wikitext-2' },
    model: { type: 'string', default: 'LSTM' },
    emsize: { type: 'string', default: '200' },
    nhid: { type: 'string', default: '200' },
    nlayers: { type: 'string', default: '2' },
    lr: { type: 'string', default: '20' },
    clip: { type: 'string', default: '0.25' },
    epochs: { type: 'string', default: '40' },
    'batch-size': { type: 'string', default: '20' },
    bptt: { type: 'string', default: '35' },
    dropout: { type: 'string', default: '0.2' },
    tied: { type: 'boolean', default: false },
    seed: { type: 'string', default: '1111' },
    'log-interval': { type: 'string', default: '200' },
    save: { type: 'string', default: 'model.pt' },
    nhead: { type: 'string', default: '2' },
    'dry-run': { type: 'boolean', default: false },
  },
});
const args = {
  ...a,
  emsize: Number(a.emsize),
  nhid: Number(a.nhid),
  nlayers: Number(a.nlayers),
  clip: Number(a.clip),
  epochs: Number(a.epochs),
  batchSize: Number(a['batch-size']),
  bptt: Number(a.bptt),
  dropout: Number(a.dropout),
  logInterval: Number(a['log-interval']),
  nhead: Number(a.nhead),
};

// Set the random seed manually for reproducibility.
t.manualSeed(Number(args.seed));

// Load data.
const corpus = new Corpus(args.data as string);

/** Divides the ids into `bsz` columns, dropping what does not fit: [nbatch, bsz]. */
function batchify(data: t.Tensor, bsz: number): t.Tensor {
  const nbatch = Math.floor(data.size(0) / bsz);
  return data
    .narrow(0, 0, nbatch * bsz)
    .view(bsz, -1)
    .t()
    .contiguous()
    .keep();
}

const evalBatchSize = 10;
const trainData = batchify(corpus.train, args.batchSize);
const valData = batchify(corpus.valid, evalBatchSize);
const testData = batchify(corpus.test, evalBatchSize);

// Build the model.
const ntokens = corpus.dictionary.length;
const transformer = args.model === 'Transformer';
const model: RNNModel | TransformerModel = transformer
  ? new TransformerModel(ntokens, args.emsize, args.nhead, args.nhid, args.nlayers, args.dropout)
  : new RNNModel(
      args.model as RnnType,
      ntokens,
      args.emsize,
      args.nhid,
      args.nlayers,
      args.dropout,
      args.tied,
    );
const criterion = new t.nn.NLLLoss();

/** Wraps hidden states in new tensors, to detach them from their history. */
function repackageHidden(h: Hidden): Hidden {
  return h instanceof t.Tensor ? h.detach() : [h[0].detach(), h[1].detach()];
}

/** The inputs at `i` and their targets, the same columns one word later. */
function getBatch(source: t.Tensor, i: number): [t.Tensor, t.Tensor] {
  const seqLen = Math.min(args.bptt, source.size(0) - 1 - i);
  return [source.slice(0, i, i + seqLen), source.slice(0, i + 1, i + 1 + seqLen).view(-1)];
}

/** The mean loss per word over `dataSource`, the model in evaluation mode. */
function evaluate(dataSource: t.Tensor): number {
  model.eval();
  let totalLoss = 0;
  let hidden = model instanceof RNNModel ? model.initHidden(evalBatchSize) : null;
  t.noGrad(() => {
    for (let i = 0; i < dataSource.size(0) - 1; i += args.bptt) {
      t.tidy(() => {
        const [data, targets] = getBatch(dataSource, i);
        let output: t.Tensor;
        if (model instanceof TransformerModel) output = model.forward(data).view(-1, ntokens);
        else {
          const [out, next] = model.forward(data, hidden as Hidden);
          output = out;
          hidden = repackageHidden(next);
          for (const h of hidden instanceof t.Tensor ? [hidden] : hidden) h.keep();
        }
        totalLoss += data.size(0) * criterion.forward(output, targets).item();
      });
    }
  });
  return totalLoss / (dataSource.size(0) - 1);
}

let lr = Number(args.lr);

function train(epoch: number): void {
  model.train();
  let totalLoss = 0;
  let startTime = performance.now();
  let hidden = model instanceof RNNModel ? model.initHidden(args.batchSize) : null;
  const batches = Math.floor(trainData.size(0) / args.bptt);
  for (let batch = 0, i = 0; i < trainData.size(0) - 1; batch++, i += args.bptt) {
    t.tidy(() => {
      const [data, targets] = getBatch(trainData, i);
      // Starting each batch, we detach the hidden state from how it was previously produced.
      // If we didn't, the model would try backpropagating all the way to start of the dataset.
      model.zeroGrad();
      let output: t.Tensor;
      if (model instanceof TransformerModel) output = model.forward(data).view(-1, ntokens);
      else {
        const [out, next] = model.forward(data, repackageHidden(hidden as Hidden));
        output = out;
        hidden = next;
        for (const h of hidden instanceof t.Tensor ? [hidden] : hidden) h.keep();
      }
      const loss = criterion.forward(output, targets);
      loss.backward();
      // clipGradNorm_ helps prevent the exploding gradient problem in RNNs / LSTMs.
      t.optim.clipGradNorm_(model.parameters(), args.clip);
      t.noGrad(() => {
        for (const p of model.parameters()) p.add_(p.grad as t.Tensor, { alpha: -lr });
      });
      totalLoss += loss.item();
    });
    if (batch % args.logInterval === 0 && batch > 0) {
      const curLoss = totalLoss / args.logInterval;
      const elapsed = performance.now() - startTime;
      console.log(
        `| epoch ${String(epoch).padStart(3)} | ${String(batch).padStart(5)}/${String(batches).padStart(5)} batches | ` +
          `lr ${lr.toFixed(2)} | ms/batch ${(elapsed / args.logInterval).toFixed(2)} | ` +
          `loss ${curLoss.toFixed(2)} | ppl ${Math.exp(curLoss).toFixed(2)}`,
      );
      totalLoss = 0;
      startTime = performance.now();
    }
    if (args['dry-run']) break;
  }
}

// Loop over epochs.
let bestValLoss: number | null = null;
for (let epoch = 1; epoch <= args.epochs; epoch++) {
  const epochStart = performance.now();
  train(epoch);
  const valLoss = evaluate(valData);
  console.log('-'.repeat(89));
  console.log(
    `| end of epoch ${String(epoch).padStart(3)} | time: ${((performance.now() - epochStart) / 1000).toFixed(2)}s | ` +
      `valid loss ${valLoss.toFixed(2)} | valid ppl ${Math.exp(valLoss).toFixed(2)}`,
  );
  console.log('-'.repeat(89));
  // Save the model if the validation loss is the best we've seen so far.
  if (bestValLoss === null || valLoss < bestValLoss) {
    await t.save(model.stateDict(), args.save as string);
    bestValLoss = valLoss;
  } else {
    // Anneal the learning rate if no improvement has been seen in the validation dataset.
    lr /= 4.0;
  }
}

// Load the best saved model.
model.loadStateDict(await t.load<Record<string, t.Tensor>>(args.save as string));
// Run on test data.
const testLoss = evaluate(testData);
console.log('='.repeat(89));
console.log(
  `| End of training | test loss ${testLoss.toFixed(2)} | test ppl ${Math.exp(testLoss).toFixed(2)}`,
);
console.log('='.repeat(89));
