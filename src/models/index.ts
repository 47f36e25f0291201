// Model zoo: torchvision-compatible architectures.
export {
  BasicBlock,
  Bottleneck,
  ResNet,
  type ResNetOptions,
  resnet18,
  resnet34,
  resnet50,
  resnet101,
  resnet152,
} from './resnet.ts';
