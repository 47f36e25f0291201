// Model zoo: torchvision- and nanoGPT-compatible architectures.

export {
  Block,
  CausalSelfAttention,
  type GenerateOptions,
  GPT,
  GPT_CONFIG_DEFAULTS,
  type GPTConfig,
  type GPTOptions,
  type GPTOutput,
  GPTTransformer,
  gpt,
  gpt2Small,
  MLP,
} from './gpt.ts';
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
export {
  Encoder,
  EncoderBlock,
  MLPBlock,
  VisionTransformer,
  type VisionTransformerConfig,
  type ViTOptions,
  vitB16,
  vitB32,
  vitH14,
  vitL16,
  vitL32,
  vitTiny,
} from './vit.ts';
