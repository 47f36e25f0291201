// torch.nn.modules.padding: ZeroPad, ConstantPad, ReflectionPad, ReplicationPad and
// CircularPad in 1d/2d/3d. One base holds the padding (an int pads both sides of the last
// `dims` dims; a list is F.pad's, last dim first); each mode is a base over it, and each
// class only names its rank.
import type * as t from '../../core/index.ts';
import { type Args, bind, type Signature, signature } from '../args.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

const ranks = (prefix: string) => [1, 2, 3].map((d) => `${prefix}${d}d`);
// PyTorch's signatures: (padding), and (padding, value) for ConstantPadNd.
const PAD = signature(['ZeroPad', 'ReflectionPad', 'ReplicationPad', 'CircularPad'].flatMap(ranks), {
  required: ['padding'],
});
const CONSTANT_PAD = signature(ranks('ConstantPad'), { required: ['padding'], optional: ['value'] });
type PadParams = { padding: number | number[] };
type ConstantPadParams = PadParams & { value?: number };

/**
 * The padding modules' base (torch's _ConstantPadNd, _ReflectionPadNd, ... share its
 * shape). Every padding module takes its padding; only ConstantPadNd also takes a value
 * (the others refuse one, and hold 0).
 */
export abstract class _PadNd extends Module {
  /** The rank that an int padding pads: each class sets its own (ReflectionPad2d: 2). */
  declare protected static readonly dims: number;
  /** F.pad's mode: each mode's base sets its own. */
  declare protected static readonly mode: F.PadMode;
  readonly padding: number[];
  readonly value: number;

  /** Binds the subclass's arguments `args` by its signature `sig`. */
  constructor(sig: Signature, args: ArrayLike<unknown>) {
    super();
    const { dims, name } = new.target;
    const { padding, value = 0 } = bind<ConstantPadParams>(sig, args, name);
    this.padding =
      typeof padding === 'number' ? Array.from({ length: 2 * dims }, () => padding) : [...padding];
    if (this.padding.length !== 2 * dims) {
      throw new RangeError(
        `${name}: padding must be an int or ${2 * dims} ints, got ${JSON.stringify(padding)}`,
      );
    }
    this.value = value;
  }

  override forward(input: t.Tensor): t.Tensor {
    const { mode } = this.constructor as typeof _PadNd;
    return F.pad(input, this.padding, mode === 'constant' ? { mode, value: this.value } : { mode });
  }

  override extraRepr(): string {
    return `(${this.padding.join(', ')})`;
  }
}

/** The modes whose signature is PyTorch's (padding) alone: every one but ConstantPadNd. */
export abstract class _PaddingOnlyNd extends _PadNd {
  constructor(...args: Args<typeof PAD, PadParams>) {
    super(PAD, args);
  }
}

/** Pads with zeros. */
export abstract class _ZeroPadNd extends _PaddingOnlyNd {
  protected static override readonly mode = 'constant';
}

/** Pads with `value`. */
export abstract class _ConstantPadNd extends _PadNd {
  protected static override readonly mode = 'constant';

  constructor(...args: Args<typeof CONSTANT_PAD, ConstantPadParams>) {
    super(CONSTANT_PAD, args);
  }

  override extraRepr(): string {
    return `${super.extraRepr()}, value=${this.value}`;
  }
}

/** Pads with the reflection of the input at its edges. */
export abstract class _ReflectionPadNd extends _PaddingOnlyNd {
  protected static override readonly mode = 'reflect';
}

/** Pads by repeating the input's edge values. */
export abstract class _ReplicationPadNd extends _PaddingOnlyNd {
  protected static override readonly mode = 'replicate';
}

/** Pads with the input's values from the other end (periodic). */
export abstract class _CircularPadNd extends _PaddingOnlyNd {
  protected static override readonly mode = 'circular';
}

export class ZeroPad1d extends _ZeroPadNd {
  protected static override readonly dims = 1;
}
export class ZeroPad2d extends _ZeroPadNd {
  protected static override readonly dims = 2;
}
export class ZeroPad3d extends _ZeroPadNd {
  protected static override readonly dims = 3;
}

export class ConstantPad1d extends _ConstantPadNd {
  protected static override readonly dims = 1;
}
export class ConstantPad2d extends _ConstantPadNd {
  protected static override readonly dims = 2;
}
export class ConstantPad3d extends _ConstantPadNd {
  protected static override readonly dims = 3;
}

export class ReflectionPad1d extends _ReflectionPadNd {
  protected static override readonly dims = 1;
}
export class ReflectionPad2d extends _ReflectionPadNd {
  protected static override readonly dims = 2;
}
export class ReflectionPad3d extends _ReflectionPadNd {
  protected static override readonly dims = 3;
}

export class ReplicationPad1d extends _ReplicationPadNd {
  protected static override readonly dims = 1;
}
export class ReplicationPad2d extends _ReplicationPadNd {
  protected static override readonly dims = 2;
}
export class ReplicationPad3d extends _ReplicationPadNd {
  protected static override readonly dims = 3;
}

export class CircularPad1d extends _CircularPadNd {
  protected static override readonly dims = 1;
}
export class CircularPad2d extends _CircularPadNd {
  protected static override readonly dims = 2;
}
export class CircularPad3d extends _CircularPadNd {
  protected static override readonly dims = 3;
}
