// torch.utils: activation checkpointing and TensorBoard (torch.utils.data is t.data).
export * as checkpoint from './checkpoint.ts';
export * as tensorboard from './tensorboard/index.ts';
