// RNN, LSTM and GRU (torch.nn.modules.rnn) over libtorch's fused aten::rnn_tanh/rnn_relu/
// lstm/gru ops, with PyTorch's parameter names (weight_ih_l0, bias_hh_l1_reverse,
// weight_hr_l0 for a projected LSTM), flat-weight order and U(±1/√hidden) init. Packed
// sequences are not supported.
import * as t from '../../core/index.ts';
import { type Args, bind, signature } from '../args.ts';
import * as init from '../init.ts';
import { Module } from '../module.ts';
import { Parameter } from '../parameter.ts';
import type { FactoryOptions } from './linear.ts';

export interface RNNOptions extends FactoryOptions {
  /** Stacked layers. Default 1. */
  numLayers?: number;
  /** Default true. */
  bias?: boolean;
  /** Input and output are [batch, seq, feature] instead of [seq, batch, feature]. Default false. */
  batchFirst?: boolean;
  /** Dropout on the outputs of each layer but the last, in training. Default 0. */
  dropout?: number;
  /** Default false. */
  bidirectional?: boolean;
}

type Mode = 'RNN_TANH' | 'RNN_RELU' | 'LSTM' | 'GRU';
const GATES: Record<Mode, number> = { RNN_TANH: 1, RNN_RELU: 1, LSTM: 4, GRU: 3 };

// PyTorch's signatures: RNNBase's, and RNN's (nonlinearity after num_layers), LSTM's
// (proj_size) and GRU's in the order of their typing overloads.
const RNN_BASE = signature('RNNBase', {
  required: ['mode', 'inputSize', 'hiddenSize'],
  optional: ['numLayers', 'bias', 'batchFirst', 'dropout', 'bidirectional', 'projSize', 'device', 'dtype'],
});
const RNN_SIG = signature('RNN', {
  required: ['inputSize', 'hiddenSize'],
  optional: [
    'numLayers',
    'nonlinearity',
    'bias',
    'batchFirst',
    'dropout',
    'bidirectional',
    'device',
    'dtype',
  ],
});
const LSTM_SIG = signature('LSTM', {
  required: ['inputSize', 'hiddenSize'],
  optional: ['numLayers', 'bias', 'batchFirst', 'dropout', 'bidirectional', 'projSize', 'device', 'dtype'],
});
const GRU_SIG = signature('GRU', {
  required: ['inputSize', 'hiddenSize'],
  optional: ['numLayers', 'bias', 'batchFirst', 'dropout', 'bidirectional', 'device', 'dtype'],
});
type Sizes = { inputSize: number; hiddenSize: number };
type RNNBaseParams = { mode: Mode } & Sizes & RNNOptions & { projSize?: number };
type RNNParams = Sizes & RNNOptions & { nonlinearity?: 'tanh' | 'relu' };
type LSTMParams = Sizes & RNNOptions & { projSize?: number };

/** torch's RNNBase: the parameters, their order and the shape checks shared by RNN, LSTM and GRU. */
export abstract class RNNBase extends Module {
  readonly mode: Mode;
  readonly inputSize: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly bias: boolean;
  readonly batchFirst: boolean;
  readonly dropout: number;
  readonly bidirectional: boolean;
  readonly projSize: number;
  /** PyTorch's _flat_weights_names, in the order the aten op takes the weights. */
  readonly flatWeightsNames: string[] = [];

  constructor(...args: Args<typeof RNN_BASE, RNNBaseParams>) {
    super();
    const opts = bind<RNNBaseParams>(RNN_BASE, args, 'RNNBase');
    const { mode, inputSize, hiddenSize } = opts;
    this.mode = mode;
    this.inputSize = inputSize;
    this.hiddenSize = hiddenSize;
    const cls = mode === 'LSTM' ? 'LSTM' : mode === 'GRU' ? 'GRU' : 'RNN';
    this.numLayers = opts.numLayers ?? 1;
    this.bias = opts.bias ?? true;
    this.batchFirst = opts.batchFirst ?? false;
    this.dropout = opts.dropout ?? 0;
    this.bidirectional = opts.bidirectional ?? false;
    this.projSize = opts.projSize ?? 0;
    if (!(this.dropout >= 0 && this.dropout <= 1)) {
      throw new RangeError(`${cls}: dropout should be a number in range [0, 1], got ${this.dropout}`);
    }
    if (!Number.isInteger(hiddenSize) || hiddenSize <= 0)
      throw new RangeError(`${cls}: hiddenSize must be a positive integer`);
    if (!Number.isInteger(this.numLayers) || this.numLayers <= 0)
      throw new RangeError(`${cls}: numLayers must be a positive integer`);
    if (this.projSize < 0 || this.projSize >= hiddenSize) {
      if (this.projSize !== 0)
        throw new RangeError(`${cls}: projSize has to be a positive integer smaller than hiddenSize`);
    }
    if (this.projSize !== 0 && mode !== 'LSTM')
      throw new TypeError('projSize argument is only supported for LSTM, not RNN or GRU');
    const gateSize = GATES[mode] * hiddenSize;
    const dirs = this.bidirectional ? 2 : 1;
    const realHidden = this.projSize > 0 ? this.projSize : hiddenSize;
    const factory = { dtype: opts.dtype, device: opts.device };
    for (let layer = 0; layer < this.numLayers; layer++) {
      for (let dir = 0; dir < dirs; dir++) {
        const layerInput = layer === 0 ? inputSize : realHidden * dirs;
        const sfx = `_l${layer}${dir === 1 ? '_reverse' : ''}`;
        const add = (name: string, shape: number[]) => {
          this.registerParameter(name + sfx, Parameter(t.empty(shape, factory)));
          this.flatWeightsNames.push(name + sfx);
        };
        add('weight_ih', [gateSize, layerInput]);
        add('weight_hh', [gateSize, realHidden]);
        if (this.bias) {
          add('bias_ih', [gateSize]);
          add('bias_hh', [gateSize]);
        }
        if (this.projSize > 0) add('weight_hr', [this.projSize, hiddenSize]);
      }
    }
    this.resetParameters();
  }

  /** U(±1/√hiddenSize) for every weight and bias, as PyTorch. */
  resetParameters(): void {
    const stdv = this.hiddenSize > 0 ? 1 / Math.sqrt(this.hiddenSize) : 0;
    for (const p of this.parameters()) init.uniform_(p, -stdv, stdv);
  }

  /** The weights in the op's order (PyTorch's _flat_weights). */
  protected flatWeights(): t.Tensor[] {
    return this.flatWeightsNames.map((n) => this._parameters.get(n) as t.Tensor);
  }

  protected get numDirections(): number {
    return this.bidirectional ? 2 : 1;
  }

  /** [input, batched]: a 2-d input is one unbatched sequence, given a batch dim here. */
  protected batchInput(input: t.Tensor): [t.Tensor, boolean] {
    const cls = this.mode === 'LSTM' ? 'LSTM' : this.mode === 'GRU' ? 'GRU' : 'RNN';
    if (input.ndim !== 2 && input.ndim !== 3) {
      throw new RangeError(`${cls}: Expected input to be 2D or 3D, got ${input.ndim}D instead`);
    }
    const batched = input.ndim === 3;
    if (input.shape[input.ndim - 1] !== this.inputSize) {
      throw new RangeError(
        `input.size(-1) must be equal to input_size. Expected ${this.inputSize}, got ${input.shape[input.ndim - 1]}`,
      );
    }
    return [batched ? input : t.unsqueeze(input, this.batchFirst ? 0 : 1), batched];
  }

  protected checkHidden(hx: t.Tensor, expected: number[], what: string): void {
    if (hx.shape.join() !== expected.join()) {
      throw new RangeError(`Expected ${what} size (${expected.join(', ')}), got [${hx.shape.join(', ')}]`);
    }
  }

  protected opArgs(): [boolean, number, number, boolean, boolean, boolean] {
    return [this.bias, this.numLayers, this.dropout, this.training, this.bidirectional, this.batchFirst];
  }

  /** RNN and GRU: one hidden tensor [layers·dirs, batch, hidden]; → [output, hN]. */
  protected runSimple(op: string, input: t.Tensor, hx: t.Tensor | null): [t.Tensor, t.Tensor] {
    return t.tidy(() => {
      const [x, batched] = this.batchInput(input);
      const batch = x.shape[this.batchFirst ? 0 : 1];
      const want = [this.numLayers * this.numDirections, batch, this.hiddenSize];
      let h: t.Tensor;
      if (hx === null) h = t.zeros(want, { dtype: input.dtype, device: input.device });
      else {
        if (batched !== (hx.ndim === 3)) {
          throw new RangeError(
            `For ${batched ? 'batched 3-D' : 'unbatched 2-D'} input, hx should also be ${batched ? '3-D' : '2-D'} but got ${hx.ndim}-D tensor`,
          );
        }
        h = batched ? hx : t.unsqueeze(hx, 1);
        this.checkHidden(h, want, 'hidden');
      }
      const [out, hN] = t.ops.call(op, x, h, this.flatWeights(), ...this.opArgs()) as [t.Tensor, t.Tensor];
      if (batched) return [out, hN] as [t.Tensor, t.Tensor];
      return [t.squeeze(out, this.batchFirst ? 0 : 1), t.squeeze(hN, 1)] as [t.Tensor, t.Tensor];
    });
  }

  override extraRepr(): string {
    let s = `${this.inputSize}, ${this.hiddenSize}`;
    if (this.projSize !== 0) s += `, proj_size=${this.projSize}`;
    if (this.numLayers !== 1) s += `, num_layers=${this.numLayers}`;
    if (!this.bias) s += ', bias=False';
    if (this.batchFirst) s += ', batch_first=True';
    if (this.dropout !== 0) s += `, dropout=${this.dropout}`;
    if (this.bidirectional) s += ', bidirectional=True';
    return s;
  }
}

/** Elman RNN: h' = tanh (or relu)(W_ih·x + b_ih + W_hh·h + b_hh), per layer. forward → [output, hN]. */
export class RNN extends RNNBase {
  readonly nonlinearity: 'tanh' | 'relu';

  constructor(...args: Args<typeof RNN_SIG, RNNParams>) {
    const { inputSize, hiddenSize, nonlinearity, ...opts } = bind<RNNParams>(RNN_SIG, args, 'RNN');
    const nl = nonlinearity ?? 'tanh';
    if (nl !== 'tanh' && nl !== 'relu')
      throw new TypeError(`Unknown nonlinearity '${String(nl)}'. Select from 'tanh' or 'relu'.`);
    super(nl === 'tanh' ? 'RNN_TANH' : 'RNN_RELU', inputSize, hiddenSize, opts);
    this.nonlinearity = nl;
  }

  override forward(input: t.Tensor, hx: t.Tensor | null = null): [t.Tensor, t.Tensor] {
    const op = this.mode === 'RNN_TANH' ? 'aten::rnn_tanh.input' : 'aten::rnn_relu.input';
    return this.runSimple(op, input, hx);
  }
}

/** Gated recurrent unit. forward → [output, hN]. */
export class GRU extends RNNBase {
  constructor(...args: Args<typeof GRU_SIG, Sizes & RNNOptions>) {
    const { inputSize, hiddenSize, ...opts } = bind<Sizes & RNNOptions>(GRU_SIG, args, 'GRU');
    super('GRU', inputSize, hiddenSize, opts);
  }

  override forward(input: t.Tensor, hx: t.Tensor | null = null): [t.Tensor, t.Tensor] {
    return this.runSimple('aten::gru.input', input, hx);
  }
}

/** Long short-term memory; `projSize` adds PyTorch's projection (weight_hr). forward → [output, [hN, cN]]. */
export class LSTM extends RNNBase {
  constructor(...args: Args<typeof LSTM_SIG, LSTMParams>) {
    const { inputSize, hiddenSize, ...opts } = bind<LSTMParams>(LSTM_SIG, args, 'LSTM');
    super('LSTM', inputSize, hiddenSize, opts);
  }

  override forward(
    input: t.Tensor,
    hx: [t.Tensor, t.Tensor] | null = null,
  ): [t.Tensor, [t.Tensor, t.Tensor]] {
    return t.tidy(() => {
      const [x, batched] = this.batchInput(input);
      const batch = x.shape[this.batchFirst ? 0 : 1];
      const layers = this.numLayers * this.numDirections;
      const realHidden = this.projSize > 0 ? this.projSize : this.hiddenSize;
      const wantH = [layers, batch, realHidden];
      const wantC = [layers, batch, this.hiddenSize];
      let h: t.Tensor;
      let c: t.Tensor;
      if (hx === null) {
        h = t.zeros(wantH, { dtype: input.dtype, device: input.device });
        c = t.zeros(wantC, { dtype: input.dtype, device: input.device });
      } else {
        const [h0, c0] = hx;
        if (batched !== (h0.ndim === 3) || batched !== (c0.ndim === 3)) {
          throw new RangeError(
            `For ${batched ? 'batched 3-D' : 'unbatched 2-D'} input, hx and cx should also be ${batched ? '3-D' : '2-D'}`,
          );
        }
        h = batched ? h0 : t.unsqueeze(h0, 1);
        c = batched ? c0 : t.unsqueeze(c0, 1);
        this.checkHidden(h, wantH, 'hidden[0]');
        this.checkHidden(c, wantC, 'hidden[1]');
      }
      const [out, hN, cN] = t.ops.call(
        'aten::lstm.input',
        x,
        [h, c],
        this.flatWeights(),
        ...this.opArgs(),
      ) as [t.Tensor, t.Tensor, t.Tensor];
      if (batched) return [out, [hN, cN]] as [t.Tensor, [t.Tensor, t.Tensor]];
      return [t.squeeze(out, this.batchFirst ? 0 : 1), [t.squeeze(hN, 1), t.squeeze(cN, 1)]] as [
        t.Tensor,
        [t.Tensor, t.Tensor],
      ];
    });
  }
}

// PyTorch's signatures: RNNCellBase's (num_chunks is the gate count), RNNCell's, and
// LSTMCell's and GRUCell's.
const CELL_BASE = signature('RNNCellBase', {
  required: ['inputSize', 'hiddenSize', 'bias', 'numChunks'],
  optional: ['device', 'dtype'],
});
const RNN_CELL = signature('RNNCell', {
  required: ['inputSize', 'hiddenSize'],
  optional: ['bias', 'nonlinearity', 'device', 'dtype'],
});
const GATED_CELL = signature(['LSTMCell', 'GRUCell'], {
  required: ['inputSize', 'hiddenSize'],
  optional: ['bias', 'device', 'dtype'],
});
type CellBaseParams = Sizes & { bias: boolean; numChunks: number } & FactoryOptions;
type CellParams = Sizes & { bias?: boolean } & FactoryOptions;
type RNNCellParams = CellParams & { nonlinearity?: 'tanh' | 'relu' };

/** One step of an RNN/LSTM/GRU (torch's RNNCellBase): weight_ih, weight_hh, bias_ih, bias_hh. */
export abstract class RNNCellBase extends Module {
  readonly inputSize: number;
  readonly hiddenSize: number;
  readonly bias: boolean;
  weight_ih: t.Tensor;
  weight_hh: t.Tensor;
  bias_ih: t.Tensor | null;
  bias_hh: t.Tensor | null;

  constructor(...args: Args<typeof CELL_BASE, CellBaseParams>) {
    super();
    const opts = bind<CellBaseParams>(CELL_BASE, args, 'RNNCellBase');
    const { inputSize, hiddenSize, bias, numChunks: gates } = opts;
    this.inputSize = inputSize;
    this.hiddenSize = hiddenSize;
    this.bias = bias;
    const factory = { dtype: opts.dtype, device: opts.device };
    this.weight_ih = this.registerParameter(
      'weight_ih',
      Parameter(t.empty([gates * hiddenSize, inputSize], factory)),
    );
    this.weight_hh = this.registerParameter(
      'weight_hh',
      Parameter(t.empty([gates * hiddenSize, hiddenSize], factory)),
    );
    this.bias_ih = this.registerParameter(
      'bias_ih',
      bias ? Parameter(t.empty([gates * hiddenSize], factory)) : null,
    );
    this.bias_hh = this.registerParameter(
      'bias_hh',
      bias ? Parameter(t.empty([gates * hiddenSize], factory)) : null,
    );
    this.resetParameters();
  }

  resetParameters(): void {
    const stdv = this.hiddenSize > 0 ? 1 / Math.sqrt(this.hiddenSize) : 0;
    for (const p of this.parameters()) init.uniform_(p, -stdv, stdv);
  }

  /** [input, hx, batched] with a batch dim added to 1-d input (and to hx). */
  protected prepare(cls: string, input: t.Tensor, hx: t.Tensor | null): [t.Tensor, t.Tensor, boolean] {
    if (input.ndim !== 1 && input.ndim !== 2) {
      throw new RangeError(`${cls}: Expected input to be 1D or 2D, got ${input.ndim}D instead`);
    }
    if (hx !== null && hx.ndim !== input.ndim) {
      throw new RangeError(`${cls}: Expected hidden to be ${input.ndim}D, got ${hx.ndim}D instead`);
    }
    const batched = input.ndim === 2;
    const x = batched ? input : t.unsqueeze(input, 0);
    const h =
      hx === null
        ? t.zeros([x.shape[0], this.hiddenSize], { dtype: input.dtype, device: input.device })
        : batched
          ? hx
          : t.unsqueeze(hx, 0);
    return [x, h, batched];
  }

  /** One step of the RNN or GRU cell op `op`: h' for input [N, in] (or [in]) and h [N, hidden]. */
  protected runCell(cls: string, op: string, input: t.Tensor, hx: t.Tensor | null): t.Tensor {
    return t.tidy(() => {
      const [x, h, batched] = this.prepare(cls, input, hx);
      const weights = [this.weight_ih, this.weight_hh, this.bias_ih, this.bias_hh];
      const out = t.ops.call(op, x, h, ...weights) as t.Tensor;
      return batched ? out : t.squeeze(out, 0);
    });
  }

  override extraRepr(): string {
    return `${this.inputSize}, ${this.hiddenSize}${this.bias ? '' : ', bias=False'}`;
  }
}

/** An Elman RNN cell: h' = tanh (or relu)(W_ih·x + b_ih + W_hh·h + b_hh). */
export class RNNCell extends RNNCellBase {
  readonly nonlinearity: 'tanh' | 'relu';
  constructor(...args: Args<typeof RNN_CELL, RNNCellParams>) {
    const opts = bind<RNNCellParams>(RNN_CELL, args, 'RNNCell');
    super(opts.inputSize, opts.hiddenSize, opts.bias ?? true, 1, { device: opts.device, dtype: opts.dtype });
    this.nonlinearity = opts.nonlinearity ?? 'tanh';
    if (this.nonlinearity !== 'tanh' && this.nonlinearity !== 'relu') {
      throw new TypeError(`Unknown nonlinearity: ${String(this.nonlinearity)}`);
    }
  }
  override forward(input: t.Tensor, hx: t.Tensor | null = null): t.Tensor {
    const op = this.nonlinearity === 'tanh' ? 'aten::rnn_tanh_cell' : 'aten::rnn_relu_cell';
    return this.runCell('RNNCell', op, input, hx);
  }
}

/** A gated recurrent unit cell. */
export class GRUCell extends RNNCellBase {
  constructor(...args: Args<typeof GATED_CELL, CellParams>) {
    const opts = bind<CellParams>(GATED_CELL, args, 'GRUCell');
    super(opts.inputSize, opts.hiddenSize, opts.bias ?? true, 3, { device: opts.device, dtype: opts.dtype });
  }
  override forward(input: t.Tensor, hx: t.Tensor | null = null): t.Tensor {
    return this.runCell('GRUCell', 'aten::gru_cell', input, hx);
  }
}

/** forward(input, [h, c]?) → [h', c']. */
export class LSTMCell extends RNNCellBase {
  constructor(...args: Args<typeof GATED_CELL, CellParams>) {
    const opts = bind<CellParams>(GATED_CELL, args, 'LSTMCell');
    super(opts.inputSize, opts.hiddenSize, opts.bias ?? true, 4, { device: opts.device, dtype: opts.dtype });
  }
  override forward(input: t.Tensor, hx: [t.Tensor, t.Tensor] | null = null): [t.Tensor, t.Tensor] {
    return t.tidy(() => {
      const [x, h, batched] = this.prepare('LSTMCell', input, hx === null ? null : hx[0]);
      const c = hx === null ? t.zerosLike(h) : batched ? hx[1] : t.unsqueeze(hx[1], 0);
      const [h1, c1] = t.ops.call(
        'aten::lstm_cell',
        x,
        [h, c],
        this.weight_ih,
        this.weight_hh,
        this.bias_ih,
        this.bias_hh,
      ) as [t.Tensor, t.Tensor];
      return batched ? [h1, c1] : [t.squeeze(h1, 0), t.squeeze(c1, 0)];
    });
  }
}
