// The typed error of t.save / t.load (PyTorch's .pt format). Callers branch on `code`;
// the message names the file and what is at fault (the global, the opcode, the dtype,
// the storage record), so a refused file can be diagnosed from the log alone.
import { TsddpError } from '../../errors/index.ts';

export type SerializationErrorCode =
  | 'PICKLE_GLOBAL' // the pickle names a Python global outside the data-only set (a class, a function)
  | 'PICKLE_OPCODE' // a pickle opcode outside the set weights-only data is written with
  | 'PICKLE_INVALID' // a malformed pickle: truncated, an empty stack, an unknown memo slot, arguments of the wrong kind
  | 'NESTING' // containers nested deeper than MAX_DEPTH, or one that contains itself
  | 'UNSUPPORTED_DTYPE' // a tensor of a dtype tsddp's Tensor has none for (qint8, float8_e8m0fnu, complex32, ...)
  | 'UNSUPPORTED_VALUE' // a value the format or tsddp cannot carry (a class instance, undefined, a bare storage, ...)
  | 'ARCHIVE' // not a readable torch.save file: a broken zip, a compressed entry, a missing record, the old tar format
  | 'STORAGE' // a storage record missing or of the wrong size, or a tensor reaching outside its storage
  | 'TOO_LARGE'; // over what the reader or writer can hold (4 GiB archives: no zip64)

/** A .pt file (or value) that t.load / t.save refused. Nothing was written or kept when it is thrown. */
export class SerializationError extends TsddpError {
  override readonly name = 'SerializationError';
  constructor(
    readonly code: SerializationErrorCode,
    /** The file (or '<buffer>') the error is about. */
    readonly file: string,
    /** What is wrong, without the file. */
    readonly detail: string,
  ) {
    super(`${file}: ${detail}`);
  }
}
