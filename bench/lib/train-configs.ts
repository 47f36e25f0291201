// The training-step configurations of bench/train_step.ts, named as
// bench/reference/train_step.py parses them: MODEL/SIZE/bBATCH/DTYPE/FORMAT.

export type TrainModel = 'resnet18-cifar' | 'resnet50';

export interface TrainConfig {
  /** e.g. 'resnet50/224/b4/bf16/cl'. */
  name: string;
  model: TrainModel;
  /** Height and width of the (square) input images. */
  size: number;
  batch: number;
  /** fp32, or bf16 autocast around forward + loss. */
  dtype: 'fp32' | 'bf16';
  /** cf: channels-first (contiguous); cl: model and input in channels-last. */
  format: 'cf' | 'cl';
}

/** Classifier outputs: CIFAR-10 for the CIFAR-stem ResNet-18, ImageNet for ResNet-50. */
export const NUM_CLASSES: Record<TrainModel, number> = { 'resnet18-cifar': 10, resnet50: 1000 };

/** Model, image size and a batch small enough for a 2-core machine. */
const SHAPES: [TrainModel, number, number][] = [
  ['resnet18-cifar', 32, 32],
  ['resnet50', 64, 8],
  ['resnet50', 224, 4],
];

export function configName(c: Omit<TrainConfig, 'name'>): string {
  return `${c.model}/${c.size}/b${c.batch}/${c.dtype}/${c.format}`;
}

/** Every configuration, grouped by model and size: fp32 cf, fp32 cl, bf16 cf, bf16 cl. */
export function allConfigs(): TrainConfig[] {
  const out: TrainConfig[] = [];
  for (const [model, size, batch] of SHAPES) {
    for (const dtype of ['fp32', 'bf16'] as const) {
      for (const format of ['cf', 'cl'] as const) {
        const c = { model, size, batch, dtype, format };
        out.push({ name: configName(c), ...c });
      }
    }
  }
  return out;
}

/**
 * The configurations a `--configs` filter selects: comma-separated alternatives, each
 * a list of '/'-separated parts that must all appear among the config's parts
 * ('bf16', 'resnet50/cl', '224/fp32/cf'); empty selects all.
 */
export function selectConfigs(all: TrainConfig[], filter: string | undefined): TrainConfig[] {
  const alts = (filter ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (alts.length === 0) return all;
  const picked = all.filter((c) => {
    const parts = new Set(c.name.split('/'));
    return alts.some((alt) => alt.split('/').every((p) => parts.has(p)));
  });
  if (picked.length === 0) {
    throw new RangeError(
      `--configs ${filter}: selects nothing; parts are model, size, bBATCH, fp32|bf16, cf|cl, ` +
        `e.g. ${all[0].name}`,
    );
  }
  return picked;
}
