// ResNet (He et al. 2015) as torchvision builds it: same module tree, so the same
// parameter and buffer names and shapes (`layer2.0.downsample.0.weight`), the same
// construction order (a seeded model draws the same random numbers), V1.5 (stride on
// the 3x3 conv of Bottleneck) and torchvision's initialisation. Two additions: a CIFAR
// stem (3x3 stride-1 conv1, no max pool — conv1.weight becomes [64, 3, 3, 3], every key
// unchanged) and a width multiplier for tiny test models.
import * as t from '../core/index.ts';
import { checkOptions, optionNames } from '../core/options.ts';
import {
  AdaptiveAvgPool2d,
  BatchNorm2d,
  Conv2d,
  Identity,
  init,
  Linear,
  MaxPool2d,
  Module,
  ReLU,
  Sequential,
} from '../nn/index.ts';
import { runBlocks } from '../utils/checkpoint.ts';

export interface ResNetOptions {
  /** Classifier outputs. Default 1000. */
  numClasses?: number;
  /** 'imagenet' (7x7 stride-2 conv1 + 3x3 max pool, default) or 'cifar' (3x3 stride-1 conv1, no pool). */
  stem?: 'imagenet' | 'cifar';
  /** Zero the last BN weight of every residual branch, so each block starts as the identity. Default false. */
  zeroInitResidual?: boolean;
  /** Scales the base width 64 (round half up; 0.25 gives 16). Default 1. */
  widthMultiplier?: number;
  /** Where parameters and buffers are created ('meta' builds the structure without memory). Default CPU. */
  device?: t.DeviceLike;
  /**
   * Recompute each residual block's activations in backward instead of keeping them
   * (t.utils.checkpoint). As in PyTorch, BatchNorm's running statistics are then updated
   * again by the recomputation. Default false.
   */
  activationCheckpointing?: boolean;
}

const OPTIONS = optionNames<ResNetOptions>({
  numClasses: true,
  stem: true,
  zeroInitResidual: true,
  widthMultiplier: true,
  device: true,
  activationCheckpointing: true,
});

/** Construction options threaded through every layer (like torch's factory kwargs). */
interface Factory {
  device?: t.DeviceLike;
}

function conv3x3(inPlanes: number, outPlanes: number, stride: number, f: Factory): Conv2d {
  return new Conv2d(inPlanes, outPlanes, 3, { stride, padding: 1, bias: false, ...f });
}

function conv1x1(inPlanes: number, outPlanes: number, stride: number, f: Factory): Conv2d {
  return new Conv2d(inPlanes, outPlanes, 1, { stride, bias: false, ...f });
}

/** Two 3x3 convs with a residual connection (ResNet-18/34). */
export class BasicBlock extends Module {
  static readonly expansion = 1;
  readonly conv1: Conv2d;
  readonly bn1: BatchNorm2d;
  readonly relu: ReLU;
  readonly conv2: Conv2d;
  readonly bn2: BatchNorm2d;
  readonly downsample: Module | null;
  readonly stride: number;

  constructor(
    inPlanes: number,
    planes: number,
    stride = 1,
    downsample: Module | null = null,
    f: Factory = {},
  ) {
    super();
    this.conv1 = this.registerModule('conv1', conv3x3(inPlanes, planes, stride, f));
    this.bn1 = this.registerModule('bn1', new BatchNorm2d(planes, f));
    this.relu = this.registerModule('relu', new ReLU({ inplace: true }));
    this.conv2 = this.registerModule('conv2', conv3x3(planes, planes, 1, f));
    this.bn2 = this.registerModule('bn2', new BatchNorm2d(planes, f));
    this.downsample = downsample === null ? null : this.registerModule('downsample', downsample);
    this.stride = stride;
  }

  override forward(x: t.Tensor): t.Tensor {
    let out = this.conv1.forward(x);
    out = this.bn1.forward(out);
    out = this.relu.forward(out);
    out = this.conv2.forward(out);
    out = this.bn2.forward(out);
    const identity = this.downsample === null ? x : this.downsample.forward(x);
    out.add_(identity);
    return this.relu.forward(out);
  }
}

/** 1x1 reduce, 3x3 (carrying the stride: V1.5), 1x1 expand by 4 (ResNet-50/101/152). */
export class Bottleneck extends Module {
  static readonly expansion = 4;
  readonly conv1: Conv2d;
  readonly bn1: BatchNorm2d;
  readonly conv2: Conv2d;
  readonly bn2: BatchNorm2d;
  readonly conv3: Conv2d;
  readonly bn3: BatchNorm2d;
  readonly relu: ReLU;
  readonly downsample: Module | null;
  readonly stride: number;

  constructor(
    inPlanes: number,
    planes: number,
    stride = 1,
    downsample: Module | null = null,
    f: Factory = {},
  ) {
    super();
    const width = planes; // torchvision: planes * (base_width / 64) * groups, with the defaults
    this.conv1 = this.registerModule('conv1', conv1x1(inPlanes, width, 1, f));
    this.bn1 = this.registerModule('bn1', new BatchNorm2d(width, f));
    this.conv2 = this.registerModule('conv2', conv3x3(width, width, stride, f));
    this.bn2 = this.registerModule('bn2', new BatchNorm2d(width, f));
    this.conv3 = this.registerModule('conv3', conv1x1(width, planes * Bottleneck.expansion, 1, f));
    this.bn3 = this.registerModule('bn3', new BatchNorm2d(planes * Bottleneck.expansion, f));
    this.relu = this.registerModule('relu', new ReLU({ inplace: true }));
    this.downsample = downsample === null ? null : this.registerModule('downsample', downsample);
    this.stride = stride;
  }

  override forward(x: t.Tensor): t.Tensor {
    let out = this.conv1.forward(x);
    out = this.bn1.forward(out);
    out = this.relu.forward(out);
    out = this.conv2.forward(out);
    out = this.bn2.forward(out);
    out = this.relu.forward(out);
    out = this.conv3.forward(out);
    out = this.bn3.forward(out);
    const identity = this.downsample === null ? x : this.downsample.forward(x);
    out.add_(identity);
    return this.relu.forward(out);
  }
}

type BlockClass = typeof BasicBlock | typeof Bottleneck;

export class ResNet extends Module {
  readonly conv1: Conv2d;
  readonly bn1: BatchNorm2d;
  readonly relu: ReLU;
  readonly maxpool: Module;
  readonly layer1: Sequential;
  readonly layer2: Sequential;
  readonly layer3: Sequential;
  readonly layer4: Sequential;
  readonly avgpool: AdaptiveAvgPool2d;
  fc: Linear;
  private inPlanes: number;
  private readonly factory: Factory;
  /** Recompute each residual block's activations in backward (ResNetOptions.activationCheckpointing). */
  activationCheckpointing: boolean;

  constructor(block: BlockClass, layers: [number, number, number, number], options?: ResNetOptions) {
    super();
    const opts = checkOptions('ResNet', options, OPTIONS);
    this.activationCheckpointing = opts.activationCheckpointing ?? false;
    const numClasses = opts.numClasses ?? 1000;
    const stem = opts.stem ?? 'imagenet';
    if (stem !== 'imagenet' && stem !== 'cifar') {
      throw new RangeError(`ResNet: stem must be 'imagenet' or 'cifar', got '${String(stem)}'`);
    }
    const base = Math.floor((opts.widthMultiplier ?? 1) * 64 + 0.5);
    if (!(base >= 1))
      throw new RangeError(`ResNet: widthMultiplier ${opts.widthMultiplier} gives no channels`);
    this.inPlanes = base;
    const f: Factory = opts.device === undefined ? {} : { device: opts.device };
    this.factory = f;
    this.conv1 = this.registerModule(
      'conv1',
      stem === 'imagenet'
        ? new Conv2d(3, base, 7, { stride: 2, padding: 3, bias: false, ...f })
        : new Conv2d(3, base, 3, { stride: 1, padding: 1, bias: false, ...f }),
    );
    this.bn1 = this.registerModule('bn1', new BatchNorm2d(base, f));
    this.relu = this.registerModule('relu', new ReLU({ inplace: true }));
    this.maxpool = this.registerModule(
      'maxpool',
      stem === 'imagenet' ? new MaxPool2d(3, { stride: 2, padding: 1 }) : new Identity(),
    );
    this.layer1 = this.registerModule('layer1', this.makeLayer(block, base, layers[0]));
    this.layer2 = this.registerModule('layer2', this.makeLayer(block, base * 2, layers[1], 2));
    this.layer3 = this.registerModule('layer3', this.makeLayer(block, base * 4, layers[2], 2));
    this.layer4 = this.registerModule('layer4', this.makeLayer(block, base * 8, layers[3], 2));
    this.avgpool = this.registerModule('avgpool', new AdaptiveAvgPool2d([1, 1]));
    this.fc = this.registerModule('fc', new Linear(base * 8 * block.expansion, numClasses, f));

    for (const m of this.modules()) {
      if (m instanceof Conv2d) {
        init.kaimingNormal_(m.weight, { mode: 'fanOut', nonlinearity: 'relu' });
      } else if (m instanceof BatchNorm2d) {
        if (m.weight !== null) init.constant_(m.weight, 1);
        if (m.bias !== null) init.constant_(m.bias, 0);
      }
    }
    // Each residual branch then starts at zero, so every block is the identity at first
    // (Goyal et al. 2017, "Accurate, Large Minibatch SGD").
    if (opts.zeroInitResidual) {
      for (const m of this.modules()) {
        if (m instanceof Bottleneck && m.bn3.weight !== null) init.constant_(m.bn3.weight, 0);
        else if (m instanceof BasicBlock && m.bn2.weight !== null) init.constant_(m.bn2.weight, 0);
      }
    }
  }

  private makeLayer(block: BlockClass, planes: number, blocks: number, stride = 1): Sequential {
    let downsample: Module | null = null;
    // Built before the first block, as torchvision does, so random draws come in its order.
    if (stride !== 1 || this.inPlanes !== planes * block.expansion) {
      downsample = new Sequential(
        conv1x1(this.inPlanes, planes * block.expansion, stride, this.factory),
        new BatchNorm2d(planes * block.expansion, this.factory),
      );
    }
    const layers: Module[] = [new block(this.inPlanes, planes, stride, downsample, this.factory)];
    this.inPlanes = planes * block.expansion;
    for (let i = 1; i < blocks; i++) layers.push(new block(this.inPlanes, planes, 1, null, this.factory));
    return new Sequential(...layers);
  }

  override forward(x: t.Tensor): t.Tensor {
    let y = this.conv1.forward(x);
    y = this.bn1.forward(y);
    y = this.relu.forward(y);
    y = this.maxpool.forward(y);
    y = runBlocks(this.layer1.children(), y, this.activationCheckpointing);
    y = runBlocks(this.layer2.children(), y, this.activationCheckpointing);
    y = runBlocks(this.layer3.children(), y, this.activationCheckpointing);
    y = runBlocks(this.layer4.children(), y, this.activationCheckpointing);
    y = this.avgpool.forward(y);
    y = t.flatten(y, 1);
    return this.fc.forward(y);
  }
}

export function resnet18(opts: ResNetOptions = {}): ResNet {
  return new ResNet(BasicBlock, [2, 2, 2, 2], opts);
}

export function resnet34(opts: ResNetOptions = {}): ResNet {
  return new ResNet(BasicBlock, [3, 4, 6, 3], opts);
}

export function resnet50(opts: ResNetOptions = {}): ResNet {
  return new ResNet(Bottleneck, [3, 4, 6, 3], opts);
}

export function resnet101(opts: ResNetOptions = {}): ResNet {
  return new ResNet(Bottleneck, [3, 4, 23, 3], opts);
}

export function resnet152(opts: ResNetOptions = {}): ResNet {
  return new ResNet(Bottleneck, [3, 8, 36, 3], opts);
}
