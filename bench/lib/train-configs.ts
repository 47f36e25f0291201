// The training-step configurations of bench/train_step.ts, named as
// bench/reference/train_step.py parses them: MODEL/SIZE/bBATCH/DTYPE/FORMAT.

export type TrainModel = 'resnet18-cifar' | 'resnet50' | 'vit_tiny' | 'gpt_small';

/** Models trained with AdamW (lr 1e-3) instead of SGD, channels-first only. */
export const TRANSFORMERS: readonly TrainModel[] = ['vit_tiny', 'gpt_small'];

export interface TrainConfig {
  /** e.g. 'resnet50/224/b4/bf16/cl'. */
  name: string;
  model: TrainModel;
  /** Height and width of the (square) input images; gpt_small: the sequence length. */
  size: number;
  /** Images, or gpt_small's sequences, per step. */
  batch: number;
  /** fp32, or bf16 autocast around forward + loss. */
  dtype: 'fp32' | 'bf16';
  /** cf: channels-first (contiguous); cl: model and input in channels-last (ResNets only). */
  format: 'cf' | 'cl';
}

/**
 * Classifier outputs: CIFAR-10 for the CIFAR-stem ResNet-18 and vitTiny, ImageNet for
 * ResNet-50; gpt_small: its vocabulary (nanoGPT's Shakespeare characters).
 */
export const NUM_CLASSES: Record<TrainModel, number> = {
  'resnet18-cifar': 10,
  resnet50: 1000,
  vit_tiny: 10,
  gpt_small: 65,
};

/**
 * Model, image size (gpt_small: sequence length) and a batch small enough for a 2-core
 * machine. vit_tiny: tsddp's vitTiny (32x32, 4 px patches, 6 layers, 3 heads, width 192);
 * gpt_small: nanoGPT's baby GPT (6 layers, 6 heads, width 384, vocab 65, block 256, no
 * bias, dropout 0) at batch 8 instead of its 64.
 */
const SHAPES: [TrainModel, number, number][] = [
  ['resnet18-cifar', 32, 32],
  ['resnet50', 64, 8],
  ['resnet50', 224, 4],
  ['vit_tiny', 32, 32],
  ['gpt_small', 256, 8],
];

export function configName(c: Omit<TrainConfig, 'name'>): string {
  return `${c.model}/${c.size}/b${c.batch}/${c.dtype}/${c.format}`;
}

/** Every configuration, grouped by model and size: fp32 cf, fp32 cl, bf16 cf, bf16 cl (transformers: cf only). */
export function allConfigs(): TrainConfig[] {
  const out: TrainConfig[] = [];
  for (const [model, size, batch] of SHAPES) {
    for (const dtype of ['fp32', 'bf16'] as const) {
      const formats = TRANSFORMERS.includes(model) ? (['cf'] as const) : (['cf', 'cl'] as const);
      for (const format of formats) {
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
