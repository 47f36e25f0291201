// A tiny model without BatchNorm for the DDP equivalence tests: with BatchNorm, DDP
// (per-rank batch statistics) and one process on the combined batch legitimately differ.
import * as t from '../../src/index.ts';

const { nn } = t;

export class TinyNet extends nn.Module {
  conv1 = new nn.Conv2d(3, 8, 3, { padding: 1 });
  conv2 = new nn.Conv2d(8, 8, 3, { stride: 2, padding: 1 });
  fc: InstanceType<typeof nn.Linear>;
  constructor(numClasses: number) {
    super();
    this.fc = new nn.Linear(8, numClasses);
  }
  override forward(x: t.Tensor): t.Tensor {
    const h = this.conv2.forward(this.conv1.forward(x).relu()).relu();
    return this.fc.forward(nn.F.adaptiveAvgPool2d(h, [1, 1]).flatten(1));
  }
}

export const MODELS: Record<string, (numClasses: number) => t.nn.Module> = {
  tiny: (n) => new TinyNet(n),
};
