// The recipe's data: datasets from the config, the training loader (DistributedSampler,
// resumable mid-epoch), the validation loader (each sample on exactly one rank) and the
// batch preparation (uint8 HWC -> normalized float NCHW, augmentations).
//
// Augmentation of fixed-size datasets (Shapes, CIFAR, FakeData) runs on the whole batch
// in the main thread, from a generator seeded by (seed, epoch, batch, rank): a run that
// resumes mid-epoch then sees exactly the batches an uninterrupted run would. ImageFolder
// images differ in size, so their random resized crop runs per sample in the workers.
import { createHash } from 'node:crypto';
import { join, relative } from 'node:path';
import * as t from '../core/index.ts';
import * as data from '../data/index.ts';
import type { RunPlan } from './plan.ts';
import type { Placement } from './process-group.ts';

const IMAGENET_MEAN = [0.485, 0.456, 0.406];
const IMAGENET_STD = [0.229, 0.224, 0.225];
const CIFAR_MEAN = [0.4914, 0.4822, 0.4465];
const CIFAR_STD = [0.247, 0.2435, 0.2616];

/** Samples with a uint8 [H, W, 3] image and an integer label. */
export type ImageDataset = data.Dataset;

export interface DataSetup {
  train: ImageDataset;
  val: ImageDataset;
  numClasses: number;
  imageSize: number;
  mean: number[];
  std: number[];
  /** Augment whole batches in the main thread (fixed-size datasets); else the workers do it. */
  batchAugment: boolean;
}

/**
 * What identifies a training set across a resume: its sample count and a fingerprint of
 * its files and labels (ImageFolder: sha256 of each sample's path under the root and its
 * label; the other datasets are fixed by their options, which the resume keys hold).
 */
export interface DataIdentity {
  samples: number;
  fingerprint: string | null;
}

export function dataIdentity(ds: ImageDataset): DataIdentity {
  if (!(ds instanceof data.ImageFolder)) return { samples: ds.length, fingerprint: null };
  const hash = createHash('sha256');
  for (const [path, label] of ds.samples) hash.update(`${relative(ds.options.root, path)}\0${label}\n`);
  return { samples: ds.length, fingerprint: hash.digest('hex').slice(0, 32) };
}

/** Builds the training and validation datasets the plan names. */
export async function buildDatasets(plan: Pick<RunPlan, 'data'>): Promise<DataSetup> {
  const c = plan.data;
  const S = c.imageSize;
  switch (c.dataset) {
    case 'shapes':
      return {
        train: new data.Shapes({ split: 'train', size: c.trainSize, imageSize: S }),
        val: new data.Shapes({ split: 'val', size: c.valSize, imageSize: S }),
        numClasses: data.SHAPES_CLASSES.length,
        imageSize: S,
        mean: data.SHAPES_MEAN,
        std: data.SHAPES_STD,
        batchAugment: true,
      };
    case 'fake': {
      const numClasses = c.numClasses ?? 1000;
      const imageSize: [number, number, number] = [3, S, S];
      return {
        train: new data.FakeData({ size: c.trainSize ?? 1280, imageSize, numClasses, seed: 0 }),
        val: new data.FakeData({ size: c.valSize ?? 256, imageSize, numClasses, seed: 1 }),
        numClasses,
        imageSize: S,
        mean: IMAGENET_MEAN,
        std: IMAGENET_STD,
        batchAugment: true,
      };
    }
    case 'cifar10':
    case 'cifar100': {
      const C = c.dataset === 'cifar10' ? data.CIFAR10 : data.CIFAR100;
      const root = c.root as string;
      return {
        train: await C.create({ root, train: true, download: c.download }),
        val: await C.create({ root, train: false }),
        numClasses: c.dataset === 'cifar10' ? 10 : 100,
        imageSize: 32,
        mean: CIFAR_MEAN,
        std: CIFAR_STD,
        batchAugment: true,
      };
    }
    case 'imagefolder': {
      const root = c.root as string;
      // torchvision's ImageNet recipe: RandomResizedCrop + flip to train, resize to
      // S / 0.875 and center-crop S to validate.
      const evalTransform = new data.Compose([
        new data.Resize(Math.round(S / 0.875)),
        new data.CenterCrop(S),
      ]);
      const train = new data.ImageFolder({
        root: join(root, 'train'),
        transform: c.augment
          ? new data.Compose([new data.RandomResizedCrop(S), new data.RandomHorizontalFlip()])
          : evalTransform,
      });
      const val = new data.ImageFolder({ root: join(root, 'val'), transform: evalTransform });
      if (val.classes.join('\n') !== train.classes.join('\n')) {
        throw new data.DataError(
          `imagefolder: ${join(root, 'val')} has classes [${val.classes.slice(0, 5).join(', ')}...] but ` +
            `${join(root, 'train')} has [${train.classes.slice(0, 5).join(', ')}...]; they must be the same folders`,
          join(root, 'val'),
        );
      }
      return {
        train,
        val,
        numClasses: train.classes.length,
        imageSize: S,
        mean: IMAGENET_MEAN,
        std: IMAGENET_STD,
        batchAugment: false,
      };
    }
  }
}

/**
 * A DistributedSampler that can start an epoch part-way (resume mid-epoch): setEpoch
 * takes the index in this rank's epoch order to start at; setEpochFrom takes a position
 * in the whole epoch's order, for a resume whose world size changed.
 */
export class ResumableSampler implements data.Sampler {
  private start = 0;
  /** This rank's share of the rest of an epoch (setEpochFrom), or null. */
  private resharded: number[] | null = null;
  /** The same sampler as `inner` over one replica: the epoch's whole order. */
  private readonly whole: data.DistributedSampler;

  constructor(
    readonly inner: data.DistributedSampler,
    dataset: { length: number },
  ) {
    this.whole = new data.DistributedSampler(dataset, {
      numReplicas: 1,
      rank: 0,
      shuffle: inner.shuffle,
      seed: inner.seed,
    });
  }
  get length(): number {
    return this.resharded?.length ?? Math.max(0, this.inner.length - this.start);
  }
  /** DistributedSampler.setEpoch, then skip the first `startIndex` indices of this rank's order. */
  setEpoch(epoch: number, startIndex = 0): void {
    if (!Number.isSafeInteger(startIndex) || startIndex < 0)
      throw new RangeError(
        `ResumableSampler.setEpoch(): startIndex should be a non-negative integer, got ${startIndex}`,
      );
    this.inner.setEpoch(epoch);
    this.start = startIndex;
    this.resharded = null;
  }
  /**
   * Epoch `epoch` from sample `offset` of its whole order on, dealt round-robin to this
   * world's ranks and padded from the order's head as DistributedSampler pads. The samples
   * before `offset` are the ones the earlier world consumed (it deals the same way), so
   * none is lost or repeated; with an unchanged world this equals setEpoch(epoch, offset / world).
   */
  setEpochFrom(epoch: number, offset: number): void {
    if (!Number.isSafeInteger(offset) || offset < 0)
      throw new RangeError(
        `ResumableSampler.setEpochFrom(): offset should be a non-negative integer, got ${offset}`,
      );
    this.setEpoch(epoch);
    this.whole.setEpoch(epoch);
    const order = this.whole.indices();
    const rest = order.slice(offset);
    const world = this.inner.numReplicas;
    for (let i = 0; rest.length % world !== 0; i++) rest.push(order[i % order.length]);
    this.resharded = rest.filter((_, i) => i % world === this.inner.rank);
  }
  *[Symbol.iterator](): Iterator<number> {
    if (this.resharded) {
      yield* this.resharded;
      return;
    }
    let i = 0;
    for (const x of this.inner) if (i++ >= this.start) yield x;
  }
}

export interface Loaders {
  train: data.DataLoader;
  sampler: ResumableSampler;
  val: data.DataLoader;
  /** Micro-batches per epoch on this rank. */
  batchesPerEpoch: number;
  /** Micro-batches per epoch on the rank with the most (all ranks alike unless --uneven join). */
  maxBatchesPerEpoch: number;
  /** Images per training micro-batch. */
  batchSize: number;
}

/**
 * The training batches of epoch `epoch` from a micro-batch of this rank, or from a sample of the
 * whole epoch (a resharded resume), on: the same
 * shuffle and the same per-sample random streams as an uninterrupted run.
 */
export function epochBatches(
  loaders: Loaders,
  epoch: number,
  start: { batch: number } | { sample: number },
): AsyncIterator<data.Batch> {
  if ('sample' in start) loaders.sampler.setEpochFrom(epoch, start.sample);
  else loaders.sampler.setEpoch(epoch, start.batch * loaders.batchSize);
  loaders.train.setEpoch(epoch);
  return loaders.train[Symbol.asyncIterator]();
}

/**
 * This rank's loaders: training (DistributedSampler, resumable) and validation. `plan.data`
 * gives the batches and the loading; `plan.loop` the seed and the micro-batches per step.
 */
export function buildLoaders(
  plan: Pick<RunPlan, 'data' | 'loop'>,
  setup: DataSetup,
  rank: number,
  worldSize: number,
): Loaders {
  const c = plan.data;
  const { seed, gradAccum } = plan.loop;
  const shard = { numReplicas: worldSize, rank, shuffle: true, seed };
  const sampler = new ResumableSampler(
    c.uneven === 'join'
      ? new UnpaddedDistributedSampler(setup.train, shard)
      : new data.DistributedSampler(setup.train, shard),
    setup.train,
  );
  const loading = {
    numWorkers: c.workers,
    prefetchFactor: c.prefetch,
    persistentWorkers: c.persistentWorkers && c.workers > 0,
    // Pinned batches only help (and only exist) with CUDA; on CPU the flag means nothing.
    pinMemory: c.pinMemory && t.cuda.isAvailable(),
    skipBadSamples: c.skipBadSamples,
  };
  // dropLast: every step sees full batches on every rank (same loss scale, no ragged DDP step).
  const train = new data.DataLoader(setup.train, {
    ...loading,
    batchSize: c.batchSize,
    sampler,
    dropLast: true,
    seed,
  });
  const batchesPerEpoch = Math.floor(sampler.inner.length / c.batchSize);
  // The smallest and largest shares: every rank checks the same numbers.
  const fewest = Math.floor(setup.train.length / worldSize);
  const most = Math.ceil(setup.train.length / worldSize);
  const smallest = c.uneven === 'join' ? fewest : sampler.inner.length;
  if (Math.floor(smallest / c.batchSize) < gradAccum) {
    throw new RangeError(
      `each rank gets ${smallest} training samples per epoch: fewer than one step of ` +
        `${gradAccum} x ${c.batchSize} (grad-accum x batch-size); use a smaller batch or more data`,
    );
  }
  const maxBatchesPerEpoch = c.uneven === 'join' ? Math.floor(most / c.batchSize) : batchesPerEpoch;
  // No padding for validation: each sample is evaluated on exactly one rank.
  const val = new data.DataLoader(setup.val, {
    ...loading,
    persistentWorkers: false,
    batchSize: c.evalBatchSize,
    sampler: new data.DistributedEvalSampler(setup.val, { numReplicas: worldSize, rank }),
  });
  return { train, sampler, val, batchesPerEpoch, maxBatchesPerEpoch, batchSize: c.batchSize };
}

/**
 * DistributedSampler without its padding, for --uneven join: the same shuffled order,
 * rank r taking samples r, r + W, r + 2W, ... of it, so each sample is seen once per
 * epoch and the ranks' shares differ by at most one.
 */
export class UnpaddedDistributedSampler extends data.DistributedSampler {
  private readonly own: number;

  constructor(dataset: { length: number }, opts: data.DistributedSamplerOptions) {
    super(dataset, opts);
    const n = dataset.length;
    this.own = Math.floor(n / this.numReplicas) + (this.rank < n % this.numReplicas ? 1 : 0);
  }

  override get length(): number {
    return this.own;
  }

  /** DistributedSampler's padded share cut at this rank's own samples (the padding comes last). */
  override indices(): number[] {
    return super.indices().slice(0, this.own);
  }
}

/**
 * Seeds a generator for one batch's augmentations from (seed, epoch, batch index, rank),
 * so the draws do not depend on what ran before (resume gives the same batches).
 */
export function seedBatchGenerator(
  g: t.Generator,
  seed: number,
  epoch: number,
  batch: number,
  rank: number,
): t.Generator {
  const M = (1n << 61n) - 1n;
  let h = BigInt(seed) & M;
  for (const v of [epoch, batch, rank]) h = (h * 1_000_003n + BigInt(v) + 0x9e3779b9n) % M;
  return g.manualSeed(h);
}

export interface PrepareOptions {
  /** Apply the training augmentations (when the batch augments). */
  augment: boolean;
  generator?: t.Generator;
  channelsLast: boolean;
}

/** uint8 [B, H, W, C] images -> normalized float32 [B, C, H, W] (augmented, channels-last as asked). */
export function prepareImages(image: t.Tensor, setup: DataSetup, opts: PrepareOptions): t.Tensor {
  return t.tidy(() => {
    let x = data.toTensorBatch(image);
    if (opts.augment && setup.batchAugment) {
      // CIFAR's classic augmentation: pad 4 (an eighth of the side), random crop, flip.
      const padding = Math.max(1, Math.round(setup.imageSize / 8));
      x = data.randomCropBatch(x, setup.imageSize, { padding, generator: opts.generator });
      x = data.randomHorizontalFlipBatch(x, { generator: opts.generator });
    }
    x = data.normalizeBatch(x, setup.mean, setup.std);
    return opts.channelsLast ? x.contiguous('channelsLast') : x;
  });
}

/** A training micro-batch as the model takes it: augmented (from `generator`), normalized, on the device. */
export function trainingInputs(
  batch: data.Batch,
  plan: Pick<RunPlan, 'data' | 'model'>,
  setup: DataSetup,
  on: Placement,
  generator: t.Generator,
): { x: t.Tensor; y: t.Tensor } {
  const prepare = { augment: plan.data.augment, generator, channelsLast: plan.model.channelsLast };
  const x = prepareImages(batch.image, setup, prepare);
  if (on.deviceType !== 'cuda') return { x, y: batch.label };
  return {
    x: x.to({ device: on.device, nonBlocking: true }),
    y: batch.label.to({ device: on.device, nonBlocking: true }),
  };
}
