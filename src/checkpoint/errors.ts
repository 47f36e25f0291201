// Typed errors for checkpoint I/O. Callers branch on `code`; messages name the file
// and say what is wrong, so a refused checkpoint can be diagnosed from the log alone.

import { TsddpError } from '../errors/index.ts';

export type SafetensorsErrorCode =
  | 'HEADER_LENGTH' // the 8-byte length is over 100 MB or points past the end of the file
  | 'HEADER_ENCODING' // the header is not UTF-8
  | 'HEADER_JSON' // the header is not JSON, not an object, or nests too deep
  | 'DUPLICATE_KEY' // a key appears twice in one JSON object
  | 'INVALID_ENTRY' // a tensor entry lacks or misspells dtype/shape/data_offsets
  | 'UNKNOWN_DTYPE' // a dtype code the safetensors format does not have
  | 'UNSUPPORTED_DTYPE' // a format dtype tsddp's Tensor has none for (U16, F8_E4M3, C64, ...) and no otherDtypes option
  | 'INVALID_OFFSETS' // data_offsets leave a gap, overlap, or run past the data
  | 'SIZE_MISMATCH' // data_offsets span ≠ shape product × dtype size
  | 'OVERFLOW' // the shape product × dtype size overflows
  | 'TRAILING_BYTES' // bytes after the last tensor
  | 'METADATA' // __metadata__ is not a string → string map
  | 'TRUNCATED' // the file ended before a read completed
  | 'PICKLE' // a pickle / torch.save file was offered
  | 'SHARED_MEMORY' // the writer was given tensors that share memory (views, tied weights)
  | 'INVALID_ARGUMENT'; // the writer was given something it cannot store

/** A safetensors file (or buffer) that breaks the format, or tensors that cannot be written. */
export class SafetensorsError extends TsddpError {
  override readonly name = 'SafetensorsError';
  constructor(
    readonly code: SafetensorsErrorCode,
    /** The file (or '<buffer>') the error is about. */
    readonly file: string,
    /** What is wrong, without the file (for a caller that names the file itself). */
    readonly detail: string,
  ) {
    super(`${file}: ${detail}`);
  }
}

export type CheckpointErrorCode =
  | 'MISSING' // no checkpoint there, no manifest (never committed), or a part the caller asked for is absent
  | 'CORRUPT' // unreadable manifest/state, wrong size, bad safetensors, inconsistent records
  | 'DIGEST_MISMATCH' // a file's sha256 differs from the manifest's
  | 'PICKLE' // a pickle / .pt file was offered: tsddp never unpickles
  | 'VERSION' // written by an incompatible (newer) format version
  | 'WORLD_SIZE_MISMATCH' // saved with a different world size and no reshard was asked for
  | 'INCOMPATIBLE' // the checkpoint does not fit the model/optimizer it is loaded into
  | 'WRITE'; // a file of the checkpoint could not be written (full disk, permissions): nothing was committed

/** A checkpoint that was refused. Nothing has been applied to any target when this is thrown. */
export class CheckpointError extends TsddpError {
  override readonly name = 'CheckpointError';
  constructor(
    readonly code: CheckpointErrorCode,
    /** The checkpoint directory or file the error is about. */
    readonly path: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`${path}: ${detail}`, options);
  }
}
