// word_language_model/model.py: an embedding, a recurrent network (LSTM, GRU, or an RNN
// with tanh or ReLU) and a decoder, optionally tying the decoder's weights to the
// embedding's; and a Transformer encoder with sinusoidal positional encoding and a
// causal mask.
import * as t from '../../../src/index.ts';

const { nn } = t;
const F = t.nn.functional;

export type RnnType = 'LSTM' | 'GRU' | 'RNN_TANH' | 'RNN_RELU';
export type Hidden = t.Tensor | [t.Tensor, t.Tensor];

/** Container module with an encoder, a recurrent module, and a decoder. */
export class RNNModel extends nn.Module {
  drop: t.nn.Dropout;
  encoder: t.nn.Embedding;
  rnn: t.nn.LSTM | t.nn.GRU | t.nn.RNN;
  decoder: t.nn.Linear;

  constructor(
    readonly rnnType: RnnType,
    readonly ntoken: number,
    ninp: number,
    readonly nhid: number,
    readonly nlayers: number,
    dropout = 0.5,
    tieWeights = false,
  ) {
    super();
    this.drop = new nn.Dropout(dropout);
    this.encoder = new nn.Embedding(ntoken, ninp);
    if (rnnType === 'LSTM') this.rnn = new nn.LSTM(ninp, nhid, { numLayers: nlayers, dropout });
    else if (rnnType === 'GRU') this.rnn = new nn.GRU(ninp, nhid, { numLayers: nlayers, dropout });
    else {
      const nonlinearity = { RNN_TANH: 'tanh', RNN_RELU: 'relu' }[rnnType] as 'tanh' | 'relu' | undefined;
      if (nonlinearity === undefined)
        throw new RangeError(
          "An invalid option for `--model` was supplied, options are ['LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU']",
        );
      this.rnn = new nn.RNN(ninp, nhid, { numLayers: nlayers, nonlinearity, dropout });
    }
    this.decoder = new nn.Linear(nhid, ntoken);
    // Optionally tie weights as in "Using the Output Embedding to Improve Language Models"
    // (Press & Wolf 2016) and "Tying Word Vectors and Word Classifiers" (Inan et al. 2016).
    if (tieWeights) {
      if (nhid !== ninp) throw new RangeError('When using the tied flag, nhid must be equal to emsize');
      this.decoder.weight = this.encoder.weight;
    }
    this.initWeights();
  }

  initWeights(): void {
    const initrange = 0.1;
    nn.init.uniform_(this.encoder.weight, -initrange, initrange);
    nn.init.zeros_(this.decoder.bias as t.Tensor);
    nn.init.uniform_(this.decoder.weight, -initrange, initrange);
  }

  override forward(input: t.Tensor, hidden: Hidden): [t.Tensor, Hidden] {
    const emb = this.drop.forward(this.encoder.forward(input));
    const [out, next] = (this.rnn as t.nn.LSTM).forward(emb, hidden as [t.Tensor, t.Tensor]);
    const output = this.drop.forward(out);
    const decoded = this.decoder.forward(output).view(-1, this.ntoken);
    return [F.logSoftmax(decoded, 1), next];
  }

  initHidden(bsz: number): Hidden {
    const weight = this.parameters()[0];
    const zeros = () => weight.newZeros([this.nlayers, bsz, this.nhid]);
    return this.rnnType === 'LSTM' ? [zeros(), zeros()] : zeros();
  }
}

/** Inject information about the position of the tokens: sines and cosines of different frequencies. */
export class PositionalEncoding extends nn.Module {
  dropout: t.nn.Dropout;
  pe: t.Tensor;

  constructor(dModel: number, dropout = 0.1, maxLen = 5000) {
    super();
    this.dropout = new nn.Dropout(dropout);
    const pe = t.zeros(maxLen, dModel);
    const position = t.arange(0, maxLen, { dtype: 'float32' }).unsqueeze(1);
    const divTerm = t.exp(
      t
        .arange(0, dModel, 2)
        .float()
        .mul(-Math.log(10000.0) / dModel),
    );
    pe.slice(1, 0, null, 2).copy_(t.sin(position.mul(divTerm)));
    pe.slice(1, 1, null, 2).copy_(t.cos(position.mul(divTerm)));
    this.pe = this.registerBuffer('pe', pe.unsqueeze(0).transpose(0, 1));
  }

  override forward(x: t.Tensor): t.Tensor {
    return this.dropout.forward(x.add(this.pe.slice(0, 0, x.size(0))));
  }
}

/**
 * Container module with an encoder, a transformer module, and a decoder. PyTorch's example
 * subclasses nn.Transformer and replaces its (unused) decoder stack with the output layer;
 * here the same parts are composed: nn.Transformer's encoder (its layers at their default
 * dropout 0.1, and a final LayerNorm), Xavier-initialised as nn.Transformer does, so the
 * state-dict keys are the example's.
 */
export class TransformerModel extends nn.Module {
  srcMask: t.Tensor | null = null;
  encoder: t.nn.TransformerEncoder;
  posEncoder: PositionalEncoding;
  inputEmb: t.nn.Embedding;
  decoder: t.nn.Linear;

  constructor(
    ntoken: number,
    readonly ninp: number,
    nhead: number,
    nhid: number,
    nlayers: number,
    dropout = 0.5,
  ) {
    super();
    const layer = new nn.TransformerEncoderLayer(ninp, nhead, { dimFeedforward: nhid });
    this.encoder = new nn.TransformerEncoder(layer, nlayers, { norm: new nn.LayerNorm(ninp) });
    for (const p of this.encoder.parameters()) if (p.ndim > 1) nn.init.xavierUniform_(p);
    this.posEncoder = new PositionalEncoding(ninp, dropout);
    this.inputEmb = new nn.Embedding(ntoken, ninp);
    this.decoder = new nn.Linear(ninp, ntoken);
    this.initWeights();
  }

  private generateSquareSubsequentMask(sz: number): t.Tensor {
    const mask = t.triu(t.ones(sz, sz)).eq(1).transpose(0, 1);
    return mask.float().maskedFill(mask.eq(0), Number.NEGATIVE_INFINITY).maskedFill(mask.eq(1), 0.0);
  }

  initWeights(): void {
    const initrange = 0.1;
    nn.init.uniform_(this.inputEmb.weight, -initrange, initrange);
    nn.init.zeros_(this.decoder.bias as t.Tensor);
    nn.init.uniform_(this.decoder.weight, -initrange, initrange);
  }

  override forward(src: t.Tensor, hasMask = true): t.Tensor {
    if (hasMask) {
      if (this.srcMask === null || this.srcMask.size(0) !== src.size(0)) {
        this.srcMask?.dispose();
        this.srcMask = this.generateSquareSubsequentMask(src.size(0)).to(src.device).keep();
      }
    } else this.srcMask = null;
    const emb = this.posEncoder.forward(this.inputEmb.forward(src).mul(Math.sqrt(this.ninp)));
    const output = this.encoder.forward(emb, { mask: this.srcMask ?? undefined });
    return F.logSoftmax(this.decoder.forward(output), -1);
  }
}
