// AdaptiveLogSoftmaxWithLoss (torch.nn.AdaptiveLogSoftmaxWithLoss): a head over the
// frequent classes plus one cluster token per tail, each tail a two-layer projection;
// the same module tree (head, tail.0.0, tail.0.1, ...) and the same ops as PyTorch's.
import * as t from '../../core/index.ts';
import { type Args, bind, signature } from '../args.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';
import { ModuleList, Sequential } from './container.ts';
import { type FactoryOptions, Linear } from './linear.ts';

export interface AdaptiveLogSoftmaxOptions extends FactoryOptions {
  /** Each tail's hidden size is inFeatures / divValue^(i+1). Default 4. */
  divValue?: number;
  /** Bias in the head. Default false. */
  headBias?: boolean;
}

const aten = (name: string, ...args: unknown[]) => t.ops.call(name, ...args) as t.Tensor;

const ADAPTIVE = signature('AdaptiveLogSoftmaxWithLoss', {
  required: ['inFeatures', 'nClasses', 'cutoffs'],
  optional: ['divValue', 'headBias', 'device', 'dtype'],
});
type AdaptiveParams = { inFeatures: number; nClasses: number; cutoffs: number[] } & AdaptiveLogSoftmaxOptions;

/** PyTorch's checks of `cutoffs`, made before anything is stored, as there. */
function checkCutoffs(cutoffs: number[], nClasses: number): void {
  if (cutoffs.length === 0) throw new RangeError('cutoffs should be a sequence of length larger than 0');
  const sorted = [...cutoffs].sort((a, b) => a - b);
  if (
    cutoffs.some((c, i) => c !== sorted[i] || !Number.isInteger(c)) ||
    Math.min(...cutoffs) <= 0 ||
    Math.max(...cutoffs) > nClasses - 1 ||
    new Set(cutoffs).size !== cutoffs.length
  ) {
    throw new RangeError(
      'cutoffs should be a sequence of unique, positive integers sorted in an increasing order, where each value is between 1 and nClasses-1',
    );
  }
}

export class AdaptiveLogSoftmaxWithLoss extends Module {
  readonly inFeatures: number;
  readonly nClasses: number;
  readonly cutoffs: number[];
  readonly divValue: number;
  readonly headBias: boolean;
  readonly shortlistSize: number;
  readonly nClusters: number;
  readonly headSize: number;
  head: Linear;
  tail: ModuleList;

  constructor(...args: Args<typeof ADAPTIVE, AdaptiveParams>) {
    super();
    const opts = bind<AdaptiveParams>(ADAPTIVE, args, 'AdaptiveLogSoftmaxWithLoss');
    const { inFeatures, nClasses, cutoffs } = opts;
    checkCutoffs(cutoffs, nClasses);
    this.inFeatures = inFeatures;
    this.nClasses = nClasses;
    this.cutoffs = [...cutoffs, nClasses];
    this.divValue = opts.divValue ?? 4;
    this.headBias = opts.headBias ?? false;
    this.shortlistSize = this.cutoffs[0];
    this.nClusters = this.cutoffs.length - 1;
    this.headSize = this.shortlistSize + this.nClusters;
    const factory = { dtype: opts.dtype, device: opts.device };
    this.head = this.registerModule(
      'head',
      new Linear(inFeatures, this.headSize, { bias: this.headBias, ...factory }),
    );
    this.tail = this.registerModule('tail', new ModuleList());
    for (let i = 0; i < this.nClusters; i++) {
      const hsz = Math.floor(inFeatures / this.divValue ** (i + 1));
      const osz = this.cutoffs[i + 1] - this.cutoffs[i];
      this.tail.append(
        new Sequential(
          new Linear(inFeatures, hsz, { bias: false, ...factory }),
          new Linear(hsz, osz, { bias: false, ...factory }),
        ),
      );
    }
  }

  resetParameters(): void {
    this.head.resetParameters();
    for (const seq of this.tail) for (const l of seq as Sequential) (l as Linear).resetParameters();
  }

  /** [output (the target's log-probability per row), loss (mean of -output)], PyTorch's _ASMoutput. */
  override forward(input_: t.Tensor, target_: t.Tensor): [t.Tensor, t.Tensor] {
    const targDim = target_.ndim;
    if (targDim === 1) {
      if (input_.shape[0] !== target_.shape[0]) {
        throw new RangeError('Input and target should have the same size in the batch dimension.');
      }
      if (input_.ndim !== 2)
        throw new RangeError(
          `1D target tensor expects 2D input tensors, but found inputs with size [${input_.shape.join(', ')}]`,
        );
    } else if (targDim === 0) {
      if (input_.ndim !== 1)
        throw new RangeError(
          `0D target tensor expects 1D input tensors, but found inputs with size [${input_.shape.join(', ')}]`,
        );
    } else {
      throw new RangeError('0D or 1D target tensor expected, multi-target not supported');
    }
    return t.tidy(() => {
      const batched = targDim > 0;
      const input = batched ? input_ : t.unsqueeze(input_, 0);
      const target = batched ? target_ : t.unsqueeze(target_, 0);
      let usedRows = 0;
      const batchSize = target.shape[0];
      let output = t.zeros([batchSize], { dtype: input.dtype, device: input.device });
      const gatherInds = t.empty([batchSize], { dtype: target.dtype, device: target.device });
      const cutoffValues = [0, ...this.cutoffs];
      for (let i = 0; i < cutoffValues.length - 1; i++) {
        const low = cutoffValues[i];
        const high = cutoffValues[i + 1];
        const mask = aten('aten::bitwise_and.Tensor', t.ge(target, low), t.lt(target, high));
        const rows = t.squeeze(t.nonzero(mask));
        if (rows.numel() === 0) continue;
        if (i === 0) {
          aten('aten::index_copy_', gatherInds, 0, rows, t.maskedSelect(target, mask));
        } else {
          const relative = t.sub(t.maskedSelect(target, mask), low);
          const subset = t.indexSelect(input, 0, rows);
          const clusterOutput = (this.tail.get(i - 1) as Sequential).forward(subset);
          aten('aten::index_fill_.int_Scalar', gatherInds, 0, rows, this.shortlistSize + i - 1);
          const clusterLogprob = F.logSoftmax(clusterOutput, 1);
          const local = t.gather(clusterLogprob, 1, t.unsqueeze(relative, 1));
          output = aten('aten::index_copy', output, 0, rows, t.squeeze(local, 1));
        }
        usedRows += rows.numel();
      }
      if (usedRows !== batchSize) {
        throw new RangeError(
          `Target values should be in [0, ${this.nClasses - 1}], but values in range [${t.min(target).item()}, ${t.max(target).item()}] were found.`,
        );
      }
      const headLogprob = F.logSoftmax(this.head.forward(input), 1);
      output = t.add(output, t.squeeze(t.gather(headLogprob, 1, t.unsqueeze(gatherInds, 1))));
      const loss = t.mean(t.neg(output));
      return [batched ? output : t.squeeze(output, 0), loss] as [t.Tensor, t.Tensor];
    });
  }

  private fullLogProb(input: t.Tensor, headOutput: t.Tensor): t.Tensor {
    const headLogprob = F.logSoftmax(headOutput, 1);
    const parts = [t.narrow(headLogprob, 1, 0, this.shortlistSize)];
    for (let i = 0; i < this.nClusters; i++) {
      const clusterLogprob = F.logSoftmax((this.tail.get(i) as Sequential).forward(input), 1);
      parts.push(t.add(clusterLogprob, t.unsqueeze(t.select(headLogprob, 1, this.shortlistSize + i), 1)));
    }
    return t.cat(parts, 1);
  }

  /** Log-probabilities of every class, [N, nClasses]. */
  logProb(input: t.Tensor): t.Tensor {
    return t.tidy(() => this.fullLogProb(input, this.head.forward(input)));
  }

  /** The most likely class per row (computing the tails only where the head points there). */
  predict(input: t.Tensor): t.Tensor {
    return t.tidy(() => {
      const headOutput = this.head.forward(input);
      const output = t.argmax(headOutput, 1);
      const notInShortlist = t.ge(output, this.shortlistSize);
      if (!t.any(notInShortlist).item()) return output;
      if (t.all(notInShortlist).item()) return t.argmax(this.fullLogProb(input, headOutput), 1);
      const logProb = this.fullLogProb(
        t.index(input, [notInShortlist]),
        t.index(headOutput, [notInShortlist]),
      );
      return t.indexPut(output, [notInShortlist], t.argmax(logProb, 1));
    });
  }
}
