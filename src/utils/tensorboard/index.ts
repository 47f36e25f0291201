// torch.utils.tensorboard: event files for TensorBoard (docs/guide/ecosystem.md).
export { crc32, crc32c, maskedCrc32c } from './crc.ts';
export { TensorBoardError } from './errors.ts';
export { TENSORFLOW_BINS } from './summary.ts';
export { SummaryWriter } from './writer.ts';
