// GPT (Radford et al. 2019) in the layout of Karpathy's nanoGPT (model.py): the same
// module tree, so the same state-dict keys (`transformer.h.0.attn.c_attn.weight`; the
// tied `lm_head.weight` listed beside `transformer.wte.weight`, as PyTorch's state_dict
// does), the same construction order (a seeded model draws the same random numbers) and
// nanoGPT's initialisation. Attention is nanoGPT's "flash" path:
// scaled_dot_product_attention with is_causal, so no causal-mask buffer is registered.
// Module properties carry PyTorch's snake_case names because Module registers a Module
// property under its own name (see nn/module.ts): `c_attn` is what makes the key.

import { join } from 'node:path';
import { noGrad } from '../autograd/index.ts';
import { loadFile, saveFile } from '../checkpoint/safetensors.ts';
import * as t from '../core/index.ts';
import { checkOptions, optionNames } from '../core/options.ts';
import { ensureSafeDir, writeFileAtomicSync } from '../files/index.ts';
import { Dropout, Embedding, GELU, init, LayerNorm, Linear, Module, ModuleList } from '../nn/index.ts';
import { AdamW } from '../optim/index.ts';
import { checkpoint, runBlocks } from '../utils/checkpoint.ts';
import { GPT_ACTIVATIONS, GPT_CONFIG_DEFAULTS, type GPTConfig } from './gpt-config.ts';
import { weightFiles } from './hf-files.ts';
import { fromGpt2Keys, gpt2Config, gpt2ConfigJson, toGpt2Keys } from './hf-gpt2.ts';

export { GPT_CONFIG_DEFAULTS, type GPTConfig } from './gpt-config.ts';

export interface GPTOptions {
  /** Where parameters are created ('meta' builds the structure without memory). Default CPU. */
  device?: t.DeviceLike;
  /**
   * Recompute each block's activations, and the loss's log-softmax, in backward instead of
   * keeping them (t.utils.checkpoint). Default false.
   */
  activationCheckpointing?: boolean;
}

const OPTIONS = optionNames<GPTOptions>({ device: true, activationCheckpointing: true });
const CONFIG = optionNames<GPTConfig>({
  blockSize: true,
  vocabSize: true,
  nLayer: true,
  nHead: true,
  nEmbd: true,
  dropout: true,
  bias: true,
  activation: true,
});

export interface GPTOutput {
  /** [B, T, vocab] with targets; [B, 1, vocab] (the last position) without. */
  logits: t.Tensor;
  /** Mean cross entropy over targets that are not -1; null without targets. */
  loss: t.Tensor | null;
}

export interface GenerateOptions {
  /** Logits are divided by it before sampling. Default 1. */
  temperature?: number;
  /** Sample only among the k most likely tokens (1 is greedy). Default: all. */
  topK?: number;
  /** Drawn from by multinomial; default the global generator, as nanoGPT. */
  generator?: t.Generator;
}

type Factory = GPTOptions;

/** Multi-head causal self-attention with the q, k, v projections fused in c_attn. */
export class CausalSelfAttention extends Module {
  readonly c_attn: Linear;
  readonly c_proj: Linear;
  /** Unused on the scaled_dot_product_attention path (dropout happens inside it); kept for nanoGPT's module tree. */
  readonly attn_dropout: Dropout;
  readonly resid_dropout: Dropout;
  readonly nHead: number;
  readonly nEmbd: number;
  readonly dropout: number;

  constructor(c: GPTConfig, f: Factory = {}) {
    super();
    if (c.nEmbd % c.nHead !== 0) {
      throw new RangeError(`GPT: nEmbd (${c.nEmbd}) must be a multiple of nHead (${c.nHead})`);
    }
    this.c_attn = this.registerModule('c_attn', new Linear(c.nEmbd, 3 * c.nEmbd, { bias: c.bias, ...f }));
    this.c_proj = this.registerModule('c_proj', new Linear(c.nEmbd, c.nEmbd, { bias: c.bias, ...f }));
    this.attn_dropout = this.registerModule('attn_dropout', new Dropout(c.dropout));
    this.resid_dropout = this.registerModule('resid_dropout', new Dropout(c.dropout));
    this.nHead = c.nHead;
    this.nEmbd = c.nEmbd;
    this.dropout = c.dropout;
  }

  override forward(x: t.Tensor): t.Tensor {
    const [b, T, c] = x.shape;
    const heads = (z: t.Tensor): t.Tensor => z.view([b, T, this.nHead, c / this.nHead]).transpose(1, 2);
    const [q, k, v] = this.c_attn.forward(x).split(this.nEmbd, 2).map(heads);
    const p = this.training ? this.dropout : 0;
    const y = t.scaledDotProductAttention(q, k, v, null, p, true);
    return this.resid_dropout.forward(this.c_proj.forward(y.transpose(1, 2).contiguous().view([b, T, c])));
  }
}

/**
 * transformers' NewGELUActivation (GPT-2's 'gelu_new'): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
 * the same ops in the same order, so a model read from a Hugging Face folder computes what
 * GPT2LMHeadModel computes, to the bit on the same CPU.
 */
export class NewGELU extends Module {
  override forward(x: t.Tensor): t.Tensor {
    return t.tidy(() => {
      const inner = x.add(t.pow(x, 3.0).mul(0.044715)).mul(Math.sqrt(2.0 / Math.PI));
      return x.mul(0.5).mul(t.tanh(inner).add(1.0));
    });
  }
}

export class MLP extends Module {
  readonly c_fc: Linear;
  readonly gelu: GELU | NewGELU;
  readonly c_proj: Linear;
  readonly dropout: Dropout;

  constructor(c: GPTConfig, f: Factory = {}) {
    super();
    this.c_fc = this.registerModule('c_fc', new Linear(c.nEmbd, 4 * c.nEmbd, { bias: c.bias, ...f }));
    const activation = c.activation ?? 'gelu';
    this.gelu = this.registerModule(
      'gelu',
      activation === 'gelu_new' ? new NewGELU() : new GELU(activation === 'gelu' ? 'none' : 'tanh'),
    );
    this.c_proj = this.registerModule('c_proj', new Linear(4 * c.nEmbd, c.nEmbd, { bias: c.bias, ...f }));
    this.dropout = this.registerModule('dropout', new Dropout(c.dropout));
  }

  override forward(x: t.Tensor): t.Tensor {
    return this.dropout.forward(this.c_proj.forward(this.gelu.forward(this.c_fc.forward(x))));
  }
}

/** Pre-norm transformer block: x + attn(ln_1(x)), then x + mlp(ln_2(x)). */
export class Block extends Module {
  readonly ln_1: LayerNorm;
  readonly attn: CausalSelfAttention;
  readonly ln_2: LayerNorm;
  readonly mlp: MLP;

  constructor(c: GPTConfig, f: Factory = {}) {
    super();
    this.ln_1 = this.registerModule('ln_1', new LayerNorm(c.nEmbd, { bias: c.bias, ...f }));
    this.attn = this.registerModule('attn', new CausalSelfAttention(c, f));
    this.ln_2 = this.registerModule('ln_2', new LayerNorm(c.nEmbd, { bias: c.bias, ...f }));
    this.mlp = this.registerModule('mlp', new MLP(c, f));
  }

  override forward(x: t.Tensor): t.Tensor {
    const y = x.add(this.attn.forward(this.ln_1.forward(x)));
    return y.add(this.mlp.forward(this.ln_2.forward(y)));
  }
}

/** nanoGPT's `transformer` ModuleDict, as a typed module with the same children in the same order. */
export class GPTTransformer extends Module {
  readonly wte: Embedding;
  readonly wpe: Embedding;
  readonly drop: Dropout;
  readonly h: ModuleList;
  readonly ln_f: LayerNorm;

  constructor(c: GPTConfig, f: Factory = {}) {
    super();
    this.wte = this.registerModule('wte', new Embedding(c.vocabSize, c.nEmbd, f));
    this.wpe = this.registerModule('wpe', new Embedding(c.blockSize, c.nEmbd, f));
    this.drop = this.registerModule('drop', new Dropout(c.dropout));
    const blocks: Block[] = [];
    for (let i = 0; i < c.nLayer; i++) blocks.push(new Block(c, f));
    this.h = this.registerModule('h', new ModuleList(blocks));
    this.ln_f = this.registerModule('ln_f', new LayerNorm(c.nEmbd, { bias: c.bias, ...f }));
  }
}

export class GPT extends Module {
  readonly config: Readonly<GPTConfig>;
  readonly transformer: GPTTransformer;
  readonly lm_head: Linear;
  /** Recompute each block's activations and the loss's log-softmax in backward (GPTOptions.activationCheckpointing). */
  activationCheckpointing: boolean;

  constructor(config: Partial<GPTConfig> = {}, options?: GPTOptions) {
    super();
    const opts = checkOptions('GPT', options, OPTIONS);
    const c: GPTConfig = { ...GPT_CONFIG_DEFAULTS, ...checkOptions('GPT', config, CONFIG) };
    for (const k of ['blockSize', 'vocabSize', 'nLayer', 'nHead', 'nEmbd'] as const) {
      if (!(Number.isInteger(c[k]) && c[k] > 0)) throw new RangeError(`GPT: ${k} must be a positive integer`);
    }
    if (c.activation !== undefined && !GPT_ACTIVATIONS.includes(c.activation))
      throw new RangeError(
        `GPT: activation must be one of ${GPT_ACTIVATIONS.join(', ')}, got ${c.activation}`,
      );
    this.config = Object.freeze(c);
    this.activationCheckpointing = opts.activationCheckpointing ?? false;
    const f: Factory = opts.device === undefined ? {} : { device: opts.device };
    this.transformer = this.registerModule('transformer', new GPTTransformer(c, f));
    this.lm_head = this.registerModule('lm_head', new Linear(c.nEmbd, c.vocabSize, { bias: false, ...f }));
    // Weight tying (Press & Wolf 2017): the token embedding is the output projection.
    // Assigning the property re-points wte's registered `weight`, as PyTorch's
    // `wte.weight = lm_head.weight` does; wte's own weight is dropped. It was still
    // created and drawn above, so a seeded model consumes the same random numbers.
    const untied = this.transformer.wte.weight;
    this.transformer.wte.weight = this.lm_head.weight;
    untied.dispose();

    // nanoGPT's _init_weights, applied children first (the tied weight is drawn twice).
    this.apply((m) => {
      if (m instanceof Linear) {
        init.normal_(m.weight, 0, 0.02);
        if (m.bias !== null) init.zeros_(m.bias);
      } else if (m instanceof Embedding) {
        init.normal_(m.weight, 0, 0.02);
      }
    });
    // GPT-2's scaled init of the projections into the residual stream: the stream's
    // variance then does not grow with depth.
    for (const [name, p] of this.namedParameters()) {
      if (name.endsWith('c_proj.weight')) init.normal_(p, 0, 0.02 / Math.sqrt(2 * c.nLayer));
    }
  }

  /**
   * A GPT-2 from a Hugging Face folder on disk (transformers' save_pretrained layout:
   * config.json and model.safetensors, or model.safetensors.index.json and its shards), as
   * nanoGPT's from_pretrained maps it (hf-gpt2.ts). Its logits are GPT2LMHeadModel's on the
   * same folder. No network: get a hub model with `huggingface-cli download gpt2 --local-dir DIR`
   * where there is one. `device`: where the parameters go (default CPU).
   */
  static async fromPretrained(dir: string, opts: GPTOptions = {}): Promise<GPT> {
    const config = gpt2Config(join(dir, 'config.json'));
    const model = new GPT(config, opts);
    await t.tidyAsync(async () => {
      const hf: Record<string, t.Tensor> = {};
      for (const file of weightFiles(dir)) Object.assign(hf, await loadFile(file));
      model.loadStateDict(fromGpt2Keys(hf, dir));
    });
    return model;
  }

  /**
   * Writes this model as a Hugging Face GPT-2 folder (config.json, model.safetensors) that
   * transformers' GPT2LMHeadModel.from_pretrained loads. Each file is written atomically.
   */
  async savePretrained(dir: string): Promise<void> {
    const config = gpt2ConfigJson(this.config);
    ensureSafeDir(dir, 'savePretrained folder');
    await t.tidyAsync(async () => {
      const tensors = toGpt2Keys(this.stateDict());
      await saveFile(tensors, join(dir, 'model.safetensors'), { metadata: { format: 'pt' } });
    });
    writeFileAtomicSync(join(dir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  }

  /**
   * Parameters, each tied tensor once (nanoGPT's get_num_params). With `nonEmbedding`
   * (default, as nanoGPT) the position embeddings are left out; the token embeddings
   * stay in because they are also lm_head's weight.
   */
  numParameters(opts: { nonEmbedding?: boolean } = {}): number {
    const n = this.parameters().reduce((a, p) => a + p.numel(), 0);
    return (opts.nonEmbedding ?? true) ? n - this.transformer.wpe.weight.numel() : n;
  }

  /**
   * idx [B, T] int64 token ids, T <= blockSize. With targets ([B, T], -1 ignored) the
   * logits of every position and their mean cross entropy; without, only the last
   * position's logits (what generation needs; nanoGPT's inference-time shortcut).
   */
  override forward(idx: t.Tensor, targets: t.Tensor | null = null): GPTOutput {
    const [, T] = idx.shape;
    if (T > this.config.blockSize) {
      throw new RangeError(
        `Cannot forward sequence of length ${T}, block size is only ${this.config.blockSize}`,
      );
    }
    const tr = this.transformer;
    const pos = t.arange(0, T, { dtype: 'int64', device: idx.device });
    let x = tr.drop.forward(tr.wte.forward(idx).add(tr.wpe.forward(pos)));
    x = runBlocks(tr.h, x, this.activationCheckpointing);
    x = tr.ln_f.forward(x);
    if (targets === null) {
      // x[:, [-1], :] in nanoGPT: keeps the time dim.
      return { logits: this.lm_head.forward(x.slice(1, T - 1, T)), loss: null };
    }
    const logits = this.lm_head.forward(x);
    const lossOf = (l: t.Tensor, y: t.Tensor) => t.crossEntropy(l, y, { ignoreIndex: -1 });
    const args = [logits.view([-1, logits.shape[2]]), targets.view([-1])] as const;
    // Checkpointed, the loss keeps no log-softmax of its own ([B x T, vocab], as large as the
    // logits: 196 MiB for GPT-2 small at 4 x 256) but recomputes it from the logits, which
    // the caller holds anyway.
    const loss = this.activationCheckpointing
      ? checkpoint(lossOf, ...args, { useReentrant: false })
      : lossOf(...args);
    return { logits, loss };
  }

  /**
   * Appends maxNewTokens sampled tokens to idx ([B, T] int64), feeding back each one and
   * cropping the context to the last blockSize tokens; gradients are off. Like nanoGPT it
   * does not switch to eval mode: call eval() first when dropout > 0.
   */
  generate(idx: t.Tensor, maxNewTokens: number, opts: GenerateOptions = {}): t.Tensor {
    const temperature = opts.temperature ?? 1;
    if (!(temperature > 0)) throw new RangeError(`generate: temperature must be > 0, got ${temperature}`);
    const { topK, generator } = opts;
    if (topK !== undefined && !(Number.isInteger(topK) && topK > 0)) {
      throw new RangeError(`generate: topK must be a positive integer, got ${topK}`);
    }
    const block = this.config.blockSize;
    return noGrad(() => {
      let out = idx;
      for (let i = 0; i < maxNewTokens; i++) {
        const next = t.tidy(() => {
          const T = out.shape[1];
          const cond = T <= block ? out : out.slice(1, T - block, T);
          let logits = this.forward(cond).logits.select(1, -1).div(temperature);
          if (topK !== undefined) {
            const k = Math.min(topK, logits.shape[1]);
            const [v] = t.topk(logits, k);
            logits = logits.maskedFill(logits.lt(v.slice(1, k - 1, k)), -Infinity);
          }
          const probs = t.softmax(logits, -1);
          return t.cat([out, t.multinomial(probs, 1, false, { generator: generator ?? null })], 1);
        });
        if (out !== idx) out.dispose();
        out = next;
      }
      return out;
    });
  }

  /**
   * nanoGPT's configure_optimizers: AdamW with weight decay on every tensor of 2 or
   * more dims (matmul weights, embeddings) and none on biases and LayerNorm weights.
   */
  configureOptimizers(opts: { weightDecay: number; learningRate: number; betas?: [number, number] }): AdamW {
    const params = this.parameters().filter((p) => p.requiresGrad);
    return new AdamW(
      [
        { params: params.filter((p) => p.ndim >= 2), weightDecay: opts.weightDecay },
        { params: params.filter((p) => p.ndim < 2), weightDecay: 0 },
      ],
      { lr: opts.learningRate, betas: opts.betas ?? [0.9, 0.999] },
    );
  }
}

/** A GPT with nanoGPT's defaults overridden by `config`. */
export function gpt(config: Partial<GPTConfig> = {}, opts: GPTOptions = {}): GPT {
  return new GPT(config, opts);
}

/**
 * GPT-2 small (124M) as OpenAI's checkpoint has it (nanoGPT's from_pretrained('gpt2')):
 * vocab 50257, 1024 positions, 12 layers, 12 heads, width 768, biases, no dropout;
 * 124,439,808 parameters. `gpt(gpt2Small())` builds it.
 */
export function gpt2Small(overrides: Partial<GPTConfig> = {}): GPTConfig {
  return { ...GPT_CONFIG_DEFAULTS, vocabSize: 50257, ...overrides };
}
