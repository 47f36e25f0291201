// torch.utils: activation checkpointing (torch.utils.data is t.data).
export * as checkpoint from './checkpoint.ts';
