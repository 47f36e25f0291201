import { TsddpError } from '../../errors/index.ts';

/** A value SummaryWriter cannot log (its tag named), or a writer used after close(). */
export class TensorBoardError extends TsddpError {
  override name = 'TensorBoardError';
  readonly code = 'TENSORBOARD';
}
