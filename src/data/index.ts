// The data pipeline (architecture §7): datasets, samplers, DataLoader with worker threads, transforms.

export { type Converted, defaultCollate, defaultConvert } from './collate.ts';
export { type Batch, type BatchOf, DataLoader, type DataLoaderOptions } from './dataloader.ts';
export { ChainDataset, ConcatDataset, StackDataset, Subset, TensorDataset } from './dataset.ts';
export { CIFAR10, CIFAR100, type CifarOptions } from './datasets/cifar.ts';
export { downloadUrl, extractTarGz, gunzipFile, md5File } from './datasets/download.ts';
export { FakeData, type FakeDataOptions } from './datasets/fake.ts';
export { type IdxDtype, IdxFile, type IdxHeader, parseIdxHeader, readIdx } from './datasets/idx.ts';
export {
  decodeImage,
  IMG_EXTENSIONS,
  ImageFolder,
  type ImageFolderOptions,
} from './datasets/image-folder.ts';
export { FashionMNIST, KMNIST, MNIST, type MnistOptions } from './datasets/mnist.ts';
export { SHAPES_CLASSES, SHAPES_MEAN, SHAPES_STD, Shapes, type ShapesOptions } from './datasets/shapes.ts';
export {
  DataLoaderError,
  DataLoaderTimeoutError,
  DataLoaderWorkerError,
  DataLoaderWorkerExitError,
} from './errors.ts';
export { loadDataset } from './load.ts';
export { Rng } from './rng.ts';
export {
  BatchSampler,
  DistributedEvalSampler,
  DistributedSampler,
  type DistributedSamplerOptions,
  drawSeed,
  RandomSampler,
  type RandomSamplerOptions,
  Sampler,
  SequentialSampler,
  type Sized,
  SubsetRandomSampler,
  WeightedRandomSampler,
  type WeightedRandomSamplerOptions,
} from './samplers.ts';
export { randomSplit } from './split.ts';
export {
  type BatchRandomOptions,
  normalizeBatch,
  randomCropBatch,
  randomHorizontalFlipBatch,
  toTensorBatch,
} from './transforms/batch.ts';
export type { ChwImage, HwcImage, Image, PaddingMode } from './transforms/image.ts';
export {
  buildTransform,
  CenterCrop,
  Compose,
  Normalize,
  RandomCrop,
  type RandomCropOptions,
  RandomHorizontalFlip,
  RandomResizedCrop,
  type RandomResizedCropOptions,
  Resize,
  ToTensor,
  type Transform,
  type TransformSpec,
} from './transforms/transforms.ts';
export {
  type ArrayBatch,
  type Collated,
  type CollateFn,
  DataError,
  Dataset,
  type DatasetSpec,
  type Field,
  IterableDataset,
  type ModuleRef,
  type NdArray,
  nd,
  type Sample,
  type SampleArray,
  type SampleContext,
} from './types.ts';
export { getWorkerInfo, type WorkerInfo } from './worker-info.ts';
export { liveWorkers } from './worker-pool.ts';
