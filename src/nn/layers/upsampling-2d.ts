// UpsamplingNearest2d and UpsamplingBilinear2d: PyTorch's Upsample with a fixed mode
// (bilinear with alignCorners true).
import { Upsample } from './upsample.ts';

export class UpsamplingNearest2d extends Upsample {
  constructor(opts: { size?: number | number[] | null; scaleFactor?: number | number[] | null } = {}) {
    super({ ...opts, mode: 'nearest' });
  }
}

export class UpsamplingBilinear2d extends Upsample {
  constructor(opts: { size?: number | number[] | null; scaleFactor?: number | number[] | null } = {}) {
    super({ ...opts, mode: 'bilinear', alignCorners: true });
  }
}
