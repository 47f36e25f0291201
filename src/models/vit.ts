// Vision Transformer (Dosovitskiy et al. 2020, "An Image is Worth 16x16 Words") as
// torchvision builds it: the same module tree and class names, so the same state-dict
// keys (`encoder.layers.encoder_layer_0.self_attention.in_proj_weight`), the same
// construction order (a seeded model draws the same random numbers) and torchvision's
// initialisation. Module properties carry torchvision's snake_case names because Module
// registers a Module property under its own name (see nn/module.ts).

import { join } from 'node:path';
import { noGrad } from '../autograd/index.ts';
import { saveFile } from '../checkpoint/safetensors.ts';
import * as t from '../core/index.ts';
import { ensureSafeDir, writeFileAtomicSync } from '../files/index.ts';
import {
  Conv2d,
  Dropout,
  GELU,
  init,
  LayerNorm,
  Linear,
  Module,
  MultiheadAttention,
  Parameter,
  Sequential,
  Tanh,
} from '../nn/index.ts';
import { runBlocks } from '../utils/checkpoint.ts';
import type { VisionTransformerConfig, ViTOptions } from './vit-config.ts';

export type { VisionTransformerConfig, ViTOptions } from './vit-config.ts';

import { checkOptions, optionNames } from '../core/options.ts';
import { PretrainedError } from './hf-files.ts';
import { readVitWeights, toVitKeys, vitConfig, vitConfigJson } from './hf-vit.ts';

interface Factory {
  device?: t.DeviceLike;
}

/** LayerNorm with eps 1e-6 by default, torchvision's ViT norm_layer. */
function norm(dim: number, f: Factory, eps = 1e-6): LayerNorm {
  return new LayerNorm(dim, { eps, ...f });
}

/**
 * torch.nn.init.trunc_normal_ with its defaults (mean 0, cut at the absolute values ±2)
 * as PyTorch 2.13 samples it when most of the mass lies inside the bounds (always for the
 * std ≤ 1 used here): draw N(0, std²), then redraw a whole tensor's worth and take its
 * values where the current ones are out of bounds, until none are. The same draws from
 * the same generator, so a seeded model gets PyTorch's values. Here because nn.init has
 * no trunc_normal_ yet.
 */
function truncNormal_(tensor: t.Tensor, std: number): void {
  if (tensor.device === 'meta') return; // no storage: PyTorch skips sampling too
  noGrad(() => {
    tensor.normal_(0, std);
    for (;;) {
      const done = t.tidy(() => {
        const out = tensor.lt(-2).logicalOr(tensor.gt(2));
        if (!out.any().item()) return true;
        tensor.copy_(t.where(out, t.emptyLike(tensor).normal_(0, std), tensor));
        return false;
      });
      if (done) return;
    }
  });
}

/** Linear, GELU, Dropout, Linear, Dropout (torchvision.ops.MLP), Xavier-initialised. */
export class MLPBlock extends Sequential {
  constructor(inDim: number, mlpDim: number, dropout: number, f: Factory = {}) {
    super(
      new Linear(inDim, mlpDim, f),
      new GELU(),
      new Dropout(dropout),
      new Linear(mlpDim, inDim, f),
      new Dropout(dropout),
    );
    // Re-drawn after Linear's own init, as torchvision does: the seeded stream matches.
    for (const m of this.modules()) {
      if (m instanceof Linear) {
        init.xavierUniform_(m.weight);
        if (m.bias !== null) init.normal_(m.bias, 0, 1e-6);
      }
    }
  }
}

/** Pre-norm transformer block: x + dropout(attn(ln_1(x))), then x + mlp(ln_2(x)). */
export class EncoderBlock extends Module {
  readonly numHeads: number;
  readonly ln_1: LayerNorm;
  readonly self_attention: MultiheadAttention;
  readonly dropout: Dropout;
  readonly ln_2: LayerNorm;
  readonly mlp: MLPBlock;

  constructor(
    numHeads: number,
    hiddenDim: number,
    mlpDim: number,
    dropout: number,
    attentionDropout: number,
    f: Factory = {},
    normEps = 1e-6,
  ) {
    super();
    this.numHeads = numHeads;
    this.ln_1 = this.registerModule('ln_1', norm(hiddenDim, f, normEps));
    this.self_attention = this.registerModule(
      'self_attention',
      new MultiheadAttention(hiddenDim, numHeads, { dropout: attentionDropout, batchFirst: true, ...f }),
    );
    this.dropout = this.registerModule('dropout', new Dropout(dropout));
    this.ln_2 = this.registerModule('ln_2', norm(hiddenDim, f, normEps));
    this.mlp = this.registerModule('mlp', new MLPBlock(hiddenDim, mlpDim, dropout, f));
  }

  /** input [B, L, hiddenDim]. */
  override forward(input: t.Tensor): t.Tensor {
    if (input.ndim !== 3)
      throw new RangeError(`Expected (batch_size, seq_length, hidden_dim) got [${input.shape}]`);
    const h = this.ln_1.forward(input);
    const [a] = this.self_attention.forward(h, h, h, { needWeights: false });
    const x = this.dropout.forward(a).add(input);
    return x.add(this.mlp.forward(this.ln_2.forward(x)));
  }
}

/** Position embeddings, dropout, the blocks (`encoder_layer_{i}`), a final LayerNorm. */
export class Encoder extends Module {
  readonly pos_embedding: t.Tensor;
  readonly dropout: Dropout;
  readonly layers: Sequential;
  readonly ln: LayerNorm;
  /** Recompute each block's activations in backward (ViTOptions.activationCheckpointing). */
  activationCheckpointing = false;

  constructor(
    seqLength: number,
    numLayers: number,
    numHeads: number,
    hiddenDim: number,
    mlpDim: number,
    dropout: number,
    attentionDropout: number,
    f: Factory = {},
    normEps = 1e-6,
  ) {
    super();
    // N(0, 0.02²), from BERT, drawn here as torchvision does (before the blocks).
    const pos = init.normal_(t.empty([1, seqLength, hiddenDim], f), 0, 0.02);
    this.pos_embedding = this.registerParameter('pos_embedding', Parameter(pos));
    this.dropout = this.registerModule('dropout', new Dropout(dropout));
    const layers = new Map<string, Module>();
    for (let i = 0; i < numLayers; i++) {
      layers.set(
        `encoder_layer_${i}`,
        new EncoderBlock(numHeads, hiddenDim, mlpDim, dropout, attentionDropout, f, normEps),
      );
    }
    this.layers = this.registerModule('layers', new Sequential(layers));
    this.ln = this.registerModule('ln', norm(hiddenDim, f, normEps));
  }

  override forward(input: t.Tensor): t.Tensor {
    const x = this.dropout.forward(input.add(this.pos_embedding));
    return this.ln.forward(runBlocks(this.layers.children(), x, this.activationCheckpointing));
  }
}

/**
 * torchvision.models.VisionTransformer: patches of patchSize² pixels embedded by a
 * stride-patchSize conv, a learned class token and position embeddings, numLayers
 * pre-norm blocks, and a head on the class token. forward: [B, 3, imageSize, imageSize]
 * images to [B, numClasses] logits.
 */
export class VisionTransformer extends Module {
  readonly imageSize: number;
  readonly patchSize: number;
  readonly hiddenDim: number;
  readonly mlpDim: number;
  readonly numClasses: number;
  readonly representationSize: number | null;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly dropout: number;
  readonly attentionDropout: number;
  readonly layerNormEps: number;
  /** Patches plus the class token. */
  readonly seqLength: number;
  readonly conv_proj: Conv2d;
  readonly class_token: t.Tensor;
  readonly encoder: Encoder;
  readonly heads: Sequential;

  constructor(c: VisionTransformerConfig) {
    super();
    for (const k of ['imageSize', 'patchSize', 'numLayers', 'numHeads', 'hiddenDim', 'mlpDim'] as const) {
      if (!(Number.isInteger(c[k]) && c[k] > 0)) throw new RangeError(`ViT: ${k} must be a positive integer`);
    }
    if (c.imageSize % c.patchSize !== 0) {
      throw new RangeError(`ViT: imageSize ${c.imageSize} is not a multiple of patchSize ${c.patchSize}`);
    }
    const f: Factory = c.device === undefined ? {} : { device: c.device };
    const dropout = c.dropout ?? 0;
    this.imageSize = c.imageSize;
    this.patchSize = c.patchSize;
    this.hiddenDim = c.hiddenDim;
    this.mlpDim = c.mlpDim;
    this.numClasses = c.numClasses ?? 1000;
    this.representationSize = c.representationSize ?? null;
    this.numLayers = c.numLayers;
    this.numHeads = c.numHeads;
    this.dropout = dropout;
    this.attentionDropout = c.attentionDropout ?? 0;
    this.layerNormEps = c.layerNormEps ?? 1e-6;

    const p = c.patchSize;
    this.conv_proj = this.registerModule('conv_proj', new Conv2d(3, c.hiddenDim, p, { stride: p, ...f }));
    this.class_token = this.registerParameter('class_token', Parameter(t.zeros([1, 1, c.hiddenDim], f)));
    this.seqLength = (c.imageSize / p) ** 2 + 1;
    this.encoder = this.registerModule(
      'encoder',
      new Encoder(
        this.seqLength,
        c.numLayers,
        c.numHeads,
        c.hiddenDim,
        c.mlpDim,
        dropout,
        c.attentionDropout ?? 0,
        f,
        c.layerNormEps ?? 1e-6,
      ),
    );
    this.encoder.activationCheckpointing = c.activationCheckpointing ?? false;
    const heads = new Map<string, Module>();
    const rep = this.representationSize;
    if (rep === null) {
      heads.set('head', new Linear(c.hiddenDim, this.numClasses, f));
    } else {
      heads.set('pre_logits', new Linear(c.hiddenDim, rep, f));
      heads.set('act', new Tanh());
      heads.set('head', new Linear(rep, this.numClasses, f));
    }
    this.heads = this.registerModule('heads', new Sequential(heads));

    // torchvision's init, after construction (so after every layer's default draws).
    // Patch embedding: LeCun-normal-like, truncated; zero bias.
    truncNormal_(this.conv_proj.weight, Math.sqrt(1 / (3 * p * p)));
    if (this.conv_proj.bias !== null) init.zeros_(this.conv_proj.bias);
    if (rep !== null) {
      const pre = this.heads.get(0) as Linear;
      truncNormal_(pre.weight, Math.sqrt(1 / c.hiddenDim));
      init.zeros_(pre.bias!);
    }
    // A zero head: every class starts equally likely.
    const head = this.heads.get(-1) as Linear;
    init.zeros_(head.weight);
    init.zeros_(head.bias!);
  }

  /** [B, 3, H, W] to the patch tokens [B, (H/p)·(W/p), hiddenDim]. */
  private processInput(x: t.Tensor): t.Tensor {
    const s = this.imageSize;
    if (x.ndim !== 4 || x.shape[1] !== 3 || x.shape[2] !== s || x.shape[3] !== s) {
      throw new RangeError(`ViT: expected images [B, 3, ${s}, ${s}], got [${x.shape}]`);
    }
    const n = x.shape[0];
    const patches = (s / this.patchSize) ** 2;
    return this.conv_proj.forward(x).reshape([n, this.hiddenDim, patches]).permute([0, 2, 1]);
  }

  /** Recompute each encoder block's activations in backward (ViTOptions.activationCheckpointing). */
  get activationCheckpointing(): boolean {
    return this.encoder.activationCheckpointing;
  }

  set activationCheckpointing(on: boolean) {
    this.encoder.activationCheckpointing = on;
  }

  /**
   * A ViT from a Hugging Face ViTForImageClassification folder on disk (config.json and
   * model.safetensors, or a sharded index), mapped onto torchvision's layout (hf-vit.ts):
   * its logits are transformers' on the same folder. `opts`: ViTOptions other than the
   * architecture, which the folder gives (device, activationCheckpointing).
   */
  static async fromPretrained(
    dir: string,
    opts: Pick<ViTOptions, 'device' | 'activationCheckpointing'> = {},
  ): Promise<VisionTransformer> {
    const c = vitConfig(join(dir, 'config.json'));
    const model = new VisionTransformer({ ...c, ...opts });
    await t.tidyAsync(async () => model.loadStateDict(await readVitWeights(dir, c.numLayers)));
    return model;
  }

  /** Writes this model as a ViTForImageClassification folder that transformers loads. */
  async savePretrained(dir: string): Promise<void> {
    if (this.representationSize !== null)
      throw new PretrainedError(
        `savePretrained: a ViT with representationSize ${this.representationSize} (a pre-logits layer) has no Hugging Face layout`,
      );
    const config = vitConfigJson(this);
    ensureSafeDir(dir, 'savePretrained folder');
    await t.tidyAsync(async () => {
      const tensors = toVitKeys(this.stateDict(), this.numLayers);
      await saveFile(tensors, join(dir, 'model.safetensors'), { metadata: { format: 'pt' } });
    });
    writeFileAtomicSync(join(dir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  }

  override forward(x: t.Tensor): t.Tensor {
    const tokens = this.processInput(x);
    const cls = this.class_token.expand([tokens.shape[0], -1, -1]);
    const y = this.encoder.forward(t.cat([cls, tokens], 1));
    // The class token's final state is the image representation.
    return this.heads.forward(y.select(1, 0));
  }
}

/** The architecture fields of a config: what each factory fixes. */
type Arch = Pick<VisionTransformerConfig, 'patchSize' | 'numLayers' | 'numHeads' | 'hiddenDim' | 'mlpDim'>;

const OPTIONS = optionNames<ViTOptions>({
  imageSize: true,
  numClasses: true,
  dropout: true,
  attentionDropout: true,
  representationSize: true,
  device: true,
  activationCheckpointing: true,
  layerNormEps: true,
});

function build(
  arch: Arch,
  options: ViTOptions,
  defaults: { imageSize: number; numClasses: number },
): VisionTransformer {
  const opts = checkOptions('VisionTransformer', options, OPTIONS);
  const imageSize = opts.imageSize ?? defaults.imageSize;
  return new VisionTransformer({
    ...opts,
    ...arch,
    imageSize,
    numClasses: opts.numClasses ?? defaults.numClasses,
  });
}

const IMAGENET = { imageSize: 224, numClasses: 1000 };

/** ViT-B/16: 12 layers, 12 heads, width 768, MLP 3072; 86,567,656 parameters at 224 px and 1000 classes. */
export function vitB16(opts: ViTOptions = {}): VisionTransformer {
  return build({ patchSize: 16, numLayers: 12, numHeads: 12, hiddenDim: 768, mlpDim: 3072 }, opts, IMAGENET);
}

/** ViT-B/32: ViT-B with 32 px patches; 88,224,232 parameters. */
export function vitB32(opts: ViTOptions = {}): VisionTransformer {
  return build({ patchSize: 32, numLayers: 12, numHeads: 12, hiddenDim: 768, mlpDim: 3072 }, opts, IMAGENET);
}

/** ViT-L/16: 24 layers, 16 heads, width 1024, MLP 4096; 304,326,632 parameters. */
export function vitL16(opts: ViTOptions = {}): VisionTransformer {
  return build({ patchSize: 16, numLayers: 24, numHeads: 16, hiddenDim: 1024, mlpDim: 4096 }, opts, IMAGENET);
}

/** ViT-L/32: ViT-L with 32 px patches; 306,535,400 parameters. */
export function vitL32(opts: ViTOptions = {}): VisionTransformer {
  return build({ patchSize: 32, numLayers: 24, numHeads: 16, hiddenDim: 1024, mlpDim: 4096 }, opts, IMAGENET);
}

/** ViT-H/14: 32 layers, 16 heads, width 1280, MLP 5120; 632,045,800 parameters at 224 px. */
export function vitH14(opts: ViTOptions = {}): VisionTransformer {
  return build({ patchSize: 14, numLayers: 32, numHeads: 16, hiddenDim: 1280, mlpDim: 5120 }, opts, IMAGENET);
}

/**
 * Not a torchvision model: a ViT for 32x32 images (CIFAR) that trains on a CPU. 4 px
 * patches (64 tokens + class token), 6 layers, 3 heads, width 192, MLP 768 (DeiT-Ti's
 * width, half its depth); 10 classes by default; 2,693,578 parameters.
 */
export function vitTiny(opts: ViTOptions = {}): VisionTransformer {
  const arch = { patchSize: 4, numLayers: 6, numHeads: 3, hiddenDim: 192, mlpDim: 768 };
  return build(arch, opts, { imageSize: 32, numClasses: 10 });
}
