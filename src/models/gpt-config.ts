// GPTConfig: the hyperparameters of tsddp's GPT (gpt.ts), shared with the Hugging Face
// GPT-2 reader (hf-gpt2.ts), which maps a config.json onto them.

/** The MLP activations, by Hugging Face's activation_function names. */
export const GPT_ACTIVATIONS = ['gelu', 'gelu_new', 'gelu_pytorch_tanh'] as const;
export type GptActivation = (typeof GPT_ACTIVATIONS)[number];

export interface GPTConfig {
  /** Longest sequence (positions in wpe). nanoGPT default 1024. */
  blockSize: number;
  /** Tokens in wte / lm_head. nanoGPT default 50304 (GPT-2's 50257 padded to a multiple of 64). */
  vocabSize: number;
  nLayer: number;
  nHead: number;
  /** Width; must be a multiple of nHead. */
  nEmbd: number;
  /** Dropout after the embeddings, on attention weights, and on both residual branches. */
  dropout: number;
  /** Biases in Linear and LayerNorm layers (GPT-2: true; nanoGPT: false is a bit better and faster). */
  bias: boolean;
  /**
   * The MLP's activation, by Hugging Face's names: 'gelu' (exact, nanoGPT's; the default),
   * 'gelu_new' (GPT-2's tanh approximation, computed op for op as transformers does) or
   * 'gelu_pytorch_tanh' (the same approximation in PyTorch's fused kernel).
   */
  activation?: GptActivation;
}

/** nanoGPT's GPTConfig defaults. */
export const GPT_CONFIG_DEFAULTS: Readonly<GPTConfig> = Object.freeze({
  blockSize: 1024,
  vocabSize: 50304,
  nLayer: 12,
  nHead: 12,
  nEmbd: 768,
  dropout: 0,
  bias: true,
});
