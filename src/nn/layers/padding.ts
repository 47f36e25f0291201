// torch.nn.modules.padding: ZeroPad, ConstantPad, ReflectionPad, ReplicationPad and
// CircularPad in 1d/2d/3d. One base holds the padding (an int pads both sides of the last
// `dims` dims; a list is F.pad's, last dim first); each mode is a base over it, and each
// class only names its rank.
import type * as t from '../../core/index.ts';
import * as F from '../functional.ts';
import { Module } from '../module.ts';

/**
 * The padding modules' base (torch's _ConstantPadNd, _ReflectionPadNd, ... share its
 * shape). Every padding module takes (padding, value?): only ConstantPadNd keeps the
 * value; the others hold 0.
 */
export abstract class _PadNd extends Module {
  /** The rank that an int padding pads: each class sets its own (ReflectionPad2d: 2). */
  declare protected static readonly dims: number;
  readonly padding: number[];
  readonly value: number;

  constructor(padding: number | number[], value = 0) {
    super();
    const { dims, name } = new.target;
    this.padding =
      typeof padding === 'number' ? Array.from({ length: 2 * dims }, () => padding) : [...padding];
    if (this.padding.length !== 2 * dims) {
      throw new RangeError(
        `${name}: padding must be an int or ${2 * dims} ints, got ${JSON.stringify(padding)}`,
      );
    }
    this.value = this.keepsValue ? value : 0;
  }

  /** F.pad's mode. */
  protected abstract get mode(): F.PadMode;

  /** Whether the constructor's `value` is the fill (ConstantPadNd only). */
  protected get keepsValue(): boolean {
    return false;
  }

  override forward(input: t.Tensor): t.Tensor {
    const mode = this.mode;
    return F.pad(input, this.padding, mode === 'constant' ? { mode, value: this.value } : { mode });
  }

  override extraRepr(): string {
    return `(${this.padding.join(', ')})`;
  }
}

/** Pads with zeros. */
export abstract class _ZeroPadNd extends _PadNd {
  protected override get mode(): F.PadMode {
    return 'constant';
  }
}

/** Pads with `value`. */
export abstract class _ConstantPadNd extends _PadNd {
  protected override get mode(): F.PadMode {
    return 'constant';
  }

  protected override get keepsValue(): boolean {
    return true;
  }

  override extraRepr(): string {
    return `${super.extraRepr()}, value=${this.value}`;
  }
}

/** Pads with the reflection of the input at its edges. */
export abstract class _ReflectionPadNd extends _PadNd {
  protected override get mode(): F.PadMode {
    return 'reflect';
  }
}

/** Pads by repeating the input's edge values. */
export abstract class _ReplicationPadNd extends _PadNd {
  protected override get mode(): F.PadMode {
    return 'replicate';
  }
}

/** Pads with the input's values from the other end (periodic). */
export abstract class _CircularPadNd extends _PadNd {
  protected override get mode(): F.PadMode {
    return 'circular';
  }
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
