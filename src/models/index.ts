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
  NewGELU,
} from './gpt.ts';
export { PretrainedError } from './hf-files.ts';
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
// Each ViT builder also under torchvision's snake_case name (vit_b_16), so code that picks
// a builder by name runs as in PyTorch (`models.__dict__[arch]`, imagenet/main.py's list
// of lowercase callables). The ResNets' names are the same in both spellings; vit_tiny is
// the recipe's name for tsddp's small ViT (torchvision has none).
export {
  Encoder,
  EncoderBlock,
  MLPBlock,
  VisionTransformer,
  type VisionTransformerConfig,
  type ViTOptions,
  vitB16,
  vitB16 as vit_b_16,
  vitB32,
  vitB32 as vit_b_32,
  vitH14,
  vitH14 as vit_h_14,
  vitL16,
  vitL16 as vit_l_16,
  vitL32,
  vitL32 as vit_l_32,
  vitTiny,
  vitTiny as vit_tiny,
} from './vit.ts';
