// torch.nn for tsddp: Module, layers, losses, `functional` (also `F`) and `init`.
export * as F from './functional.ts';
export * as functional from './functional.ts';
export * as init from './init.ts';
export {
  Dropout,
  GELU,
  LeakyReLU,
  LogSoftmax,
  ReLU,
  Sigmoid,
  SiLU,
  Softmax,
  type SoftmaxDim,
  Tanh,
} from './layers/activation.ts';
export {
  CELU,
  ELU,
  GLU,
  Hardshrink,
  Hardsigmoid,
  Hardswish,
  Hardtanh,
  LogSigmoid,
  Mish,
  PReLU,
  ReLU6,
  RReLU,
  SELU,
  Softmax2d,
  Softmin,
  Softplus,
  Softshrink,
  Softsign,
  Tanhshrink,
  Threshold,
} from './layers/activation-more.ts';
export { type AdaptiveLogSoftmaxOptions, AdaptiveLogSoftmaxWithLoss } from './layers/adaptive.ts';
export {
  MultiheadAttention,
  type MultiheadAttentionForwardOptions,
  type MultiheadAttentionOptions,
} from './layers/attention.ts';
export {
  BatchNorm,
  BatchNorm1d,
  BatchNorm2d,
  BatchNorm3d,
  type BatchNormOptions,
} from './layers/batchnorm.ts';
export {
  Container,
  ModuleDict,
  type ModuleEntries,
  ModuleList,
  ParameterDict,
  type ParameterEntries,
  ParameterList,
  Sequential,
} from './layers/container.ts';
export { Conv1d, type Conv1dOptions, Conv2d, type Conv2dOptions } from './layers/conv.ts';
export {
  Conv3d,
  type Conv3dOptions,
  ConvTranspose,
  ConvTranspose1d,
  ConvTranspose2d,
  ConvTranspose3d,
  type ConvTransposeOptions,
} from './layers/conv-more.ts';
export { GroupNorm, type GroupNormOptions } from './layers/groupnorm.ts';
export {
  isUninitialized,
  LazyBatchNorm1d,
  LazyBatchNorm2d,
  LazyBatchNorm3d,
  LazyConv1d,
  LazyConv2d,
  LazyConv3d,
  LazyConvTranspose1d,
  LazyConvTranspose2d,
  LazyConvTranspose3d,
  LazyInstanceNorm1d,
  LazyInstanceNorm2d,
  LazyInstanceNorm3d,
  LazyLinear,
} from './layers/lazy.ts';
export { Flatten, Identity, Linear } from './layers/linear.ts';
export {
  BCELoss,
  BCEWithLogitsLoss,
  type BCEWithLogitsLossOptions,
  CrossEntropyLoss,
  type CrossEntropyLossOptions,
  KLDivLoss,
  L1Loss,
  type LossOptions,
  MSELoss,
  NLLLoss,
  NLLLoss2d,
  type NLLLossOptions,
  SmoothL1Loss,
} from './layers/loss.ts';
export {
  CosineEmbeddingLoss,
  CTCLoss,
  GaussianNLLLoss,
  HingeEmbeddingLoss,
  HuberLoss,
  MarginRankingLoss,
  MultiLabelMarginLoss,
  MultiLabelSoftMarginLoss,
  MultiMarginLoss,
  PoissonNLLLoss,
  SoftMarginLoss,
  TripletMarginLoss,
  TripletMarginWithDistanceLoss,
} from './layers/loss-more.ts';
export {
  AlphaDropout,
  Bilinear,
  ChannelShuffle,
  CircularPad1d,
  CircularPad2d,
  CircularPad3d,
  ConstantPad1d,
  ConstantPad2d,
  ConstantPad3d,
  CosineSimilarity,
  Dropout1d,
  Dropout2d,
  Dropout3d,
  Embedding,
  EmbeddingBag,
  type EmbeddingBagModuleOptions,
  type EmbeddingOptions,
  FeatureAlphaDropout,
  Fold,
  PairwiseDistance,
  PixelShuffle,
  PixelUnshuffle,
  ReflectionPad1d,
  ReflectionPad2d,
  ReflectionPad3d,
  ReplicationPad1d,
  ReplicationPad2d,
  ReplicationPad3d,
  Unflatten,
  Unfold,
  ZeroPad1d,
  ZeroPad2d,
  ZeroPad3d,
} from './layers/misc.ts';
export {
  InstanceNorm,
  InstanceNorm1d,
  InstanceNorm2d,
  InstanceNorm3d,
  type InstanceNormOptions,
  LayerNorm,
  type LayerNormOptions,
  LocalResponseNorm,
  RMSNorm,
  type RMSNormOptions,
} from './layers/normalization-more.ts';
export { AdaptiveAvgPool2d, AvgPool2d, MaxPool2d } from './layers/pooling.ts';
export {
  AdaptiveAvgPool3d,
  AdaptiveMaxPool3d,
  AvgPool3d,
  FractionalMaxPool2d,
  FractionalMaxPool3d,
  LPPool1d,
  LPPool2d,
  LPPool3d,
  MaxPool3d,
  MaxUnpool1d,
  MaxUnpool2d,
  MaxUnpool3d,
} from './layers/pooling-3d.ts';
export {
  AdaptiveAvgPool1d,
  AdaptiveMaxPool1d,
  AdaptiveMaxPool2d,
  AvgPool1d,
  MaxPool1d,
} from './layers/pooling-more.ts';
export {
  GRU,
  GRUCell,
  LSTM,
  LSTMCell,
  RNN,
  RNNBase,
  RNNCell,
  RNNCellBase,
  type RNNOptions,
} from './layers/rnn.ts';
export {
  generateSquareSubsequentMask,
  Transformer,
  type TransformerActivation,
  TransformerDecoder,
  type TransformerDecoderForwardOptions,
  TransformerDecoderLayer,
  TransformerEncoder,
  type TransformerEncoderForwardOptions,
  TransformerEncoderLayer,
  type TransformerEncoderOptions,
  type TransformerForwardOptions,
  type TransformerLayerOptions,
  type TransformerOptions,
} from './layers/transformer.ts';
export { Upsample, type UpsampleOptions } from './layers/upsample.ts';
export { UpsamplingBilinear2d, UpsamplingNearest2d } from './layers/upsampling-2d.ts';
export {
  type LoadStateDictResult,
  Module,
  type ModuleToOptions,
  type StateDict,
  StateDictError,
} from './module.ts';
export { isParameter, Parameter } from './parameter.ts';
