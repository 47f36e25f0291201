// ViT in the Hugging Face folder layout (transformers' ViTForImageClassification
// save_pretrained: config.json + model.safetensors) read into and written from torchvision's
// layout, which tsddp's VisionTransformer has. The same computation under other names: the
// class token, patch projection and position embeddings; per block the LayerNorms before
// and after attention, separate query/key/value projections (torchvision's MultiheadAttention
// holds them stacked in in_proj) and the MLP; a final LayerNorm and the classifier on the
// class token. What torchvision's layout cannot hold is refused by name.
import { loadFile } from '../checkpoint/safetensors.ts';
import * as t from '../core/index.ts';
import { PretrainedError, readJson, weightFiles } from './hf-files.ts';
import type { VisionTransformerConfig } from './vit-config.ts';

/** The fields of VisionTransformerConfig a ViTConfig gives (all of them set). */
export type HfVitConfig = Required<
  Pick<
    VisionTransformerConfig,
    | 'imageSize'
    | 'patchSize'
    | 'numLayers'
    | 'numHeads'
    | 'hiddenDim'
    | 'mlpDim'
    | 'numClasses'
    | 'dropout'
    | 'attentionDropout'
    | 'layerNormEps'
  >
>;

/** VisionTransformerConfig's fields from a ViTConfig's config.json. */
export function vitConfig(file: string): HfVitConfig {
  const c = readJson(file);
  const bad = (field: string, why: string): PretrainedError =>
    new PretrainedError(`${file}: ${field}=${JSON.stringify(c[field])}: ${why}`);
  if (c.model_type !== 'vit') throw bad('model_type', "ViT.fromPretrained reads ViT folders ('vit')");
  const int = (field: string, fallback: number): number => {
    const v = c[field] ?? fallback;
    if (!Number.isInteger(v) || (v as number) <= 0) throw bad(field, 'not a positive integer');
    return v as number;
  };
  if ((c.hidden_act ?? 'gelu') !== 'gelu')
    throw bad('hidden_act', "torchvision's ViT MLP uses the exact GELU");
  if ((c.num_channels ?? 3) !== 3) throw bad('num_channels', 'torchvision ViTs take RGB images');
  if ((c.qkv_bias ?? true) !== true) throw bad('qkv_bias', "torchvision's attention has biases");
  const labels = c.id2label;
  const numClasses =
    typeof labels === 'object' && labels !== null ? Object.keys(labels).length : int('num_labels', 2);
  const prob = (field: string): number => {
    const v = c[field] ?? 0;
    if (typeof v !== 'number' || v < 0 || v > 1) throw bad(field, 'not a probability');
    return v;
  };
  return {
    imageSize: int('image_size', 224),
    patchSize: int('patch_size', 16),
    numLayers: int('num_hidden_layers', 12),
    numHeads: int('num_attention_heads', 12),
    hiddenDim: int('hidden_size', 768),
    mlpDim: int('intermediate_size', 3072),
    numClasses,
    dropout: prob('hidden_dropout_prob'),
    attentionDropout: prob('attention_probs_dropout_prob'),
    layerNormEps: (c.layer_norm_eps as number | undefined) ?? 1e-12,
  };
}

/** Per block: torchvision's name (under encoder.layers.encoder_layer_<i>.) and HF's (under vit.encoder.layer.<i>.). */
const BLOCK: [string, string][] = [
  ['ln_1', 'layernorm_before'],
  ['ln_2', 'layernorm_after'],
  ['self_attention.out_proj', 'attention.output.dense'],
  ['mlp.0', 'intermediate.dense'],
  ['mlp.3', 'output.dense'],
];
/** Outside the blocks: torchvision's key and HF's. */
const TOP: [string, string][] = [
  ['class_token', 'vit.embeddings.cls_token'],
  ['encoder.pos_embedding', 'vit.embeddings.position_embeddings'],
  ['conv_proj.weight', 'vit.embeddings.patch_embeddings.projection.weight'],
  ['conv_proj.bias', 'vit.embeddings.patch_embeddings.projection.bias'],
  ['encoder.ln.weight', 'vit.layernorm.weight'],
  ['encoder.ln.bias', 'vit.layernorm.bias'],
  ['heads.head.weight', 'classifier.weight'],
  ['heads.head.bias', 'classifier.bias'],
];

/** torchvision key -> HF key, for every tensor but the stacked attention projections. */
function keyMap(numLayers: number): [string, string][] {
  const pairs = [...TOP];
  for (let i = 0; i < numLayers; i++)
    for (const [tv, hf] of BLOCK)
      for (const p of ['weight', 'bias'])
        pairs.push([`encoder.layers.encoder_layer_${i}.${tv}.${p}`, `vit.encoder.layer.${i}.${hf}.${p}`]);
  return pairs;
}

/** HF's tensors (read from `dir`) as a torchvision ViT state dict; call inside a scope. */
export async function readVitWeights(dir: string, numLayers: number): Promise<Record<string, t.Tensor>> {
  const hf: Record<string, t.Tensor> = {};
  for (const file of weightFiles(dir)) Object.assign(hf, await loadFile(file));
  const take = (key: string): t.Tensor => {
    const v = hf[key];
    if (v === undefined) throw new PretrainedError(`${dir}: no ${key} in its weights`);
    delete hf[key];
    return v;
  };
  const out: Record<string, t.Tensor> = {};
  for (const [tv, key] of keyMap(numLayers)) out[tv] = take(key);
  for (let i = 0; i < numLayers; i++) {
    const at = `vit.encoder.layer.${i}.attention.attention`;
    for (const p of ['weight', 'bias'])
      out[`encoder.layers.encoder_layer_${i}.self_attention.in_proj_${p}`] = t.cat(
        ['query', 'key', 'value'].map((q) => take(`${at}.${q}.${p}`)),
        0,
      );
  }
  // ViTModel's pooler is not part of image classification (add_pooling_layer=False there).
  const left = Object.keys(hf).filter((k) => !k.startsWith('vit.pooler.'));
  if (left.length > 0)
    throw new PretrainedError(`${dir}: weights torchvision's ViT has no place for: ${left.join(', ')}`);
  return out;
}

/** A torchvision ViT state dict in HF's keys (query, key and value split out of in_proj). */
export function toVitKeys(sd: Record<string, t.Tensor>, numLayers: number): Record<string, t.Tensor> {
  const out: Record<string, t.Tensor> = {};
  for (const [tv, hf] of keyMap(numLayers)) out[hf] = sd[tv];
  for (let i = 0; i < numLayers; i++)
    for (const p of ['weight', 'bias']) {
      const parts = sd[`encoder.layers.encoder_layer_${i}.self_attention.in_proj_${p}`].chunk(3, 0);
      ['query', 'key', 'value'].forEach((q, k) => {
        out[`vit.encoder.layer.${i}.attention.attention.${q}.${p}`] = parts[k].contiguous();
      });
    }
  return out;
}

/** config.json of a ViTForImageClassification with `c`'s architecture. */
export function vitConfigJson(c: HfVitConfig): Record<string, unknown> {
  return {
    architectures: ['ViTForImageClassification'],
    model_type: 'vit',
    image_size: c.imageSize,
    patch_size: c.patchSize,
    num_channels: 3,
    hidden_size: c.hiddenDim,
    num_hidden_layers: c.numLayers,
    num_attention_heads: c.numHeads,
    intermediate_size: c.mlpDim,
    hidden_act: 'gelu',
    hidden_dropout_prob: c.dropout,
    attention_probs_dropout_prob: c.attentionDropout,
    layer_norm_eps: c.layerNormEps,
    qkv_bias: true,
    initializer_range: 0.02,
    id2label: Object.fromEntries(Array.from({ length: c.numClasses }, (_, i) => [String(i), `LABEL_${i}`])),
    label2id: Object.fromEntries(Array.from({ length: c.numClasses }, (_, i) => [`LABEL_${i}`, i])),
    torch_dtype: 'float32',
  };
}
