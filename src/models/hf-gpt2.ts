// GPT-2 in the Hugging Face folder layout (transformers' GPT2LMHeadModel.save_pretrained):
// config.json + model.safetensors, or a sharded model.safetensors.index.json, read into
// and written from tsddp's nanoGPT layout, as nanoGPT's from_pretrained maps them. HF's
// attention and MLP projections are Conv1D modules, whose weights are stored [in, out]:
// they are transposed to Linear's [out, in] (and back). The optional `transformer.` prefix
// (absent in the hub's original gpt2 files), the causal-mask buffers older files keep
// (`attn.bias`, `attn.masked_bias`) and the tied `lm_head.weight` are handled; a setting
// tsddp's GPT cannot honour is refused by name rather than dropped.
import type * as t from '../core/index.ts';
import { GPT_ACTIVATIONS, type GPTConfig, type GptActivation } from './gpt-config.ts';
import { type Json, PretrainedError, readJson } from './hf-files.ts';

/** Linear layers HF stores as Conv1D ([in, out]). */
const CONV1D = ['attn.c_attn.weight', 'attn.c_proj.weight', 'mlp.c_fc.weight', 'mlp.c_proj.weight'];
const isConv1d = (key: string): boolean => CONV1D.some((s) => key.endsWith(s));
/** Buffers (the causal mask) that older GPT-2 files hold and tsddp's attention does not need. */
const isMaskBuffer = (key: string): boolean => /\.attn\.(masked_)?bias$/.test(key);

/** GPTConfig from a GPT2Config's config.json; refuses what the model cannot honour. */
export function gpt2Config(file: string): GPTConfig {
  const c = readJson(file);
  const bad = (field: string, why: string): PretrainedError =>
    new PretrainedError(`${file}: ${field}=${JSON.stringify(c[field])}: ${why}`);
  if (c.model_type !== 'gpt2')
    throw bad('model_type', "tsddp's GPT.fromPretrained reads GPT-2 folders ('gpt2')");
  const int = (field: string, fallback: number): number => {
    const v = c[field] ?? fallback;
    if (!Number.isInteger(v) || (v as number) <= 0) throw bad(field, 'not a positive integer');
    return v as number;
  };
  const nEmbd = int('n_embd', 768);
  if (c.n_inner != null && c.n_inner !== 4 * nEmbd)
    throw bad('n_inner', `the MLP is 4 x n_embd (${4 * nEmbd}) wide`);
  const activation = (c.activation_function ?? 'gelu_new') as GptActivation;
  if (!GPT_ACTIVATIONS.includes(activation))
    throw bad('activation_function', `tsddp has ${GPT_ACTIVATIONS.join(', ')}`);
  const eps = c.layer_norm_epsilon ?? 1e-5;
  if (eps !== 1e-5) throw bad('layer_norm_epsilon', "tsddp's GPT uses LayerNorm's 1e-5");
  const drops = ['resid_pdrop', 'embd_pdrop', 'attn_pdrop'].map((k) => c[k] ?? 0.1);
  if (drops.some((d) => d !== drops[0] || typeof d !== 'number'))
    throw bad('attn_pdrop', `tsddp's GPT has one dropout; resid/embd/attn_pdrop are ${drops.join(', ')}`);
  const must = (field: string, value: unknown, fallback: unknown): void => {
    if ((c[field] ?? fallback) !== value)
      throw bad(field, `tsddp's GPT supports only ${JSON.stringify(value)}`);
  };
  must('scale_attn_weights', true, true);
  must('scale_attn_by_inverse_layer_idx', false, false);
  must('reorder_and_upcast_attn', false, false);
  must('add_cross_attention', false, false);
  must('tie_word_embeddings', true, true);
  return {
    blockSize: int('n_positions', 1024),
    vocabSize: int('vocab_size', 50257),
    nLayer: int('n_layer', 12),
    nHead: int('n_head', 12),
    nEmbd,
    dropout: drops[0] as number,
    bias: true,
    activation,
  };
}

/**
 * HF's tensors as tsddp GPT's state dict: keys under `transformer.`, Conv1D weights
 * transposed, mask buffers dropped, lm_head.weight the token embedding (tied).
 * Tensors not returned are disposed.
 */
export function fromGpt2Keys(hf: Record<string, t.Tensor>, where: string): Record<string, t.Tensor> {
  const out: Record<string, t.Tensor> = {};
  let head: t.Tensor | undefined;
  for (const [key, tensor] of Object.entries(hf)) {
    if (isMaskBuffer(key)) {
      tensor.dispose();
      continue;
    }
    if (key === 'lm_head.weight') {
      head = tensor;
      continue;
    }
    const name = key.startsWith('transformer.') ? key : `transformer.${key}`;
    if (name in out)
      throw new PretrainedError(`${where}: ${key} is there twice (with and without 'transformer.')`);
    out[name] = isConv1d(name) ? tensor.t().contiguous() : tensor;
    if (isConv1d(name)) tensor.dispose();
  }
  const wte = out['transformer.wte.weight'];
  if (wte === undefined) throw new PretrainedError(`${where}: no wte.weight (the token embedding)`);
  if (head !== undefined) {
    const same = head.shape.join() === wte.shape.join() && head.equal(wte);
    head.dispose();
    if (!same)
      throw new PretrainedError(`${where}: lm_head.weight differs from wte.weight; tsddp's GPT ties them`);
  }
  out['lm_head.weight'] = wte;
  return out;
}

/** tsddp GPT's state dict in HF's keys (`transformer.` prefix, Conv1D [in, out]), lm_head left out as tied. */
export function toGpt2Keys(stateDict: Record<string, t.Tensor>): Record<string, t.Tensor> {
  const out: Record<string, t.Tensor> = {};
  for (const [key, tensor] of Object.entries(stateDict)) {
    if (key === 'lm_head.weight') continue;
    out[key] = isConv1d(key) ? tensor.t().contiguous() : tensor;
  }
  return out;
}

/** config.json for a GPT2LMHeadModel of `c` (GPT2Config's fields). */
export function gpt2ConfigJson(c: GPTConfig): Json {
  if (!c.bias)
    throw new PretrainedError('savePretrained: GPT-2 has biases in every layer; this model has bias: false');
  const activation = c.activation ?? 'gelu';
  return {
    architectures: ['GPT2LMHeadModel'],
    model_type: 'gpt2',
    vocab_size: c.vocabSize,
    n_positions: c.blockSize,
    n_embd: c.nEmbd,
    n_layer: c.nLayer,
    n_head: c.nHead,
    n_inner: null,
    activation_function: activation,
    resid_pdrop: c.dropout,
    embd_pdrop: c.dropout,
    attn_pdrop: c.dropout,
    layer_norm_epsilon: 1e-5,
    initializer_range: 0.02,
    scale_attn_weights: true,
    tie_word_embeddings: true,
    use_cache: true,
    // GPT-2's <|endoftext|>, where the vocabulary has it.
    bos_token_id: c.vocabSize > 50256 ? 50256 : null,
    eos_token_id: c.vocabSize > 50256 ? 50256 : null,
    torch_dtype: 'float32',
  };
}
