// torch.nn for tsddp: Module, layers, losses, `functional` (also `F`) and `init`.
export * as F from './functional.ts';
export * as functional from './functional.ts';
export * as init from './init.ts';
export {
  CELU,
  ELU,
  GELU,
  GLU,
  Hardshrink,
  Hardsigmoid,
  Hardswish,
  Hardtanh,
  LeakyReLU,
  LogSigmoid,
  LogSoftmax,
  Mish,
  PReLU,
  ReLU,
  ReLU6,
  RReLU,
  SELU,
  Sigmoid,
  SiLU,
  Softmax,
  Softmax2d,
  type SoftmaxDim,
  Softmin,
  Softplus,
  Softshrink,
  Softsign,
  Tanh,
  Tanhshrink,
  Threshold,
} from './layers/activation.ts';
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
  LazyBatchNorm1d,
  LazyBatchNorm2d,
  LazyBatchNorm3d,
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
export {
  Conv1d,
  type Conv1dOptions,
  Conv2d,
  type Conv2dOptions,
  Conv3d,
  type Conv3dOptions,
  ConvTranspose,
  ConvTranspose1d,
  ConvTranspose2d,
  ConvTranspose3d,
  type ConvTransposeOptions,
  LazyConv1d,
  LazyConv2d,
  LazyConv3d,
  LazyConvTranspose1d,
  LazyConvTranspose2d,
  LazyConvTranspose3d,
} from './layers/conv.ts';
export { CosineSimilarity, PairwiseDistance } from './layers/distance.ts';
export {
  AlphaDropout,
  Dropout,
  Dropout1d,
  Dropout2d,
  Dropout3d,
  FeatureAlphaDropout,
} from './layers/dropout.ts';
export { Flatten, Unflatten } from './layers/flatten.ts';
export { Fold, Unfold } from './layers/fold.ts';
export {
  InstanceNorm,
  InstanceNorm1d,
  InstanceNorm2d,
  InstanceNorm3d,
  type InstanceNormOptions,
  LazyInstanceNorm1d,
  LazyInstanceNorm2d,
  LazyInstanceNorm3d,
} from './layers/instancenorm.ts';
export { isUninitialized } from './layers/lazy.ts';
export { Bilinear, Identity, LazyLinear, Linear } from './layers/linear.ts';
export {
  BCELoss,
  BCEWithLogitsLoss,
  type BCEWithLogitsLossOptions,
  CosineEmbeddingLoss,
  CrossEntropyLoss,
  type CrossEntropyLossOptions,
  CTCLoss,
  GaussianNLLLoss,
  HingeEmbeddingLoss,
  HuberLoss,
  KLDivLoss,
  L1Loss,
  type LossOptions,
  MarginRankingLoss,
  MSELoss,
  MultiLabelMarginLoss,
  MultiLabelSoftMarginLoss,
  MultiMarginLoss,
  NLLLoss,
  NLLLoss2d,
  type NLLLossOptions,
  PoissonNLLLoss,
  SmoothL1Loss,
  SoftMarginLoss,
  TripletMarginLoss,
  TripletMarginWithDistanceLoss,
} from './layers/loss.ts';
export {
  GroupNorm,
  type GroupNormOptions,
  LayerNorm,
  type LayerNormOptions,
  LocalResponseNorm,
  RMSNorm,
  type RMSNormOptions,
} from './layers/normalization.ts';
export {
  CircularPad1d,
  CircularPad2d,
  CircularPad3d,
  ConstantPad1d,
  ConstantPad2d,
  ConstantPad3d,
  ReflectionPad1d,
  ReflectionPad2d,
  ReflectionPad3d,
  ReplicationPad1d,
  ReplicationPad2d,
  ReplicationPad3d,
  ZeroPad1d,
  ZeroPad2d,
  ZeroPad3d,
} from './layers/padding.ts';
export { ChannelShuffle, PixelShuffle, PixelUnshuffle } from './layers/pixelshuffle.ts';
export {
  AdaptiveAvgPool1d,
  AdaptiveAvgPool2d,
  AdaptiveAvgPool3d,
  AdaptiveMaxPool1d,
  AdaptiveMaxPool2d,
  AdaptiveMaxPool3d,
  AvgPool1d,
  AvgPool2d,
  AvgPool3d,
  FractionalMaxPool2d,
  FractionalMaxPool3d,
  LPPool1d,
  LPPool2d,
  LPPool3d,
  MaxPool1d,
  MaxPool2d,
  MaxPool3d,
  MaxUnpool1d,
  MaxUnpool2d,
  MaxUnpool3d,
} from './layers/pooling.ts';
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
  Embedding,
  EmbeddingBag,
  type EmbeddingBagModuleOptions,
  type EmbeddingOptions,
} from './layers/sparse.ts';
export { SyncBatchNorm, type SyncBatchNormOptions } from './layers/sync-batchnorm.ts';
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
export {
  Upsample,
  type UpsampleOptions,
  UpsamplingBilinear2d,
  UpsamplingNearest2d,
} from './layers/upsampling.ts';
export {
  type LoadStateDictResult,
  Module,
  type ModuleToOptions,
  type StateDict,
  StateDictError,
} from './module.ts';
export { isParameter, Parameter } from './parameter.ts';
