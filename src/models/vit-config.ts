// The configuration of tsddp's (torchvision's) VisionTransformer (vit.ts), shared with the
// Hugging Face ViT reader (hf-vit.ts), which maps a config.json onto it.
import type * as t from '../core/index.ts';

/** Options every ViT factory accepts (torchvision's **kwargs that do not change the architecture family). */
export interface ViTOptions {
  /** Height and width of the (square) input images. Default 224 (vitTiny: 32). */
  imageSize?: number;
  /** Classifier outputs. Default 1000 (vitTiny: 10). */
  numClasses?: number;
  /** Dropout after the position embeddings, attention and in the MLPs. Default 0. */
  dropout?: number;
  /** Dropout on the attention weights. Default 0. */
  attentionDropout?: number;
  /** Width of a Linear + Tanh pre-logits layer before the head; null (default) for none. */
  representationSize?: number | null;
  /** Where parameters are created ('meta' builds the structure without memory). Default CPU. */
  device?: t.DeviceLike;
  /** Recompute each encoder block's activations in backward instead of keeping them (t.utils.checkpoint). Default false. */
  activationCheckpointing?: boolean;
  /** The LayerNorms' epsilon: torchvision's 1e-6 by default (Hugging Face's ViTs use 1e-12). */
  layerNormEps?: number;
}

/** Any ViT: the architecture (patch size, depth, width) and the ViTOptions. */
export interface VisionTransformerConfig extends ViTOptions {
  imageSize: number;
  patchSize: number;
  numLayers: number;
  numHeads: number;
  /** Token width; must be a multiple of numHeads. */
  hiddenDim: number;
  /** Hidden width of each MLP block. */
  mlpDim: number;
}
