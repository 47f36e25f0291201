// The safetensors dtype names and the tsddp dtypes they map to (both directions).
import type { DType } from '../core/index.ts';

export const SAFETENSORS_TO_DTYPE: Readonly<Record<string, DType>> = {
  F64: 'float64',
  F32: 'float32',
  F16: 'float16',
  BF16: 'bfloat16',
  I64: 'int64',
  I32: 'int32',
  I16: 'int16',
  I8: 'int8',
  U8: 'uint8',
  BOOL: 'bool',
};

export const DTYPE_TO_SAFETENSORS: Readonly<Record<DType, string>> = {
  float64: 'F64',
  float32: 'F32',
  float16: 'F16',
  bfloat16: 'BF16',
  int64: 'I64',
  int32: 'I32',
  int16: 'I16',
  int8: 'I8',
  uint8: 'U8',
  bool: 'BOOL',
};

export const ITEM_BYTES: Readonly<Record<DType, number>> = {
  float64: 8,
  float32: 4,
  float16: 2,
  bfloat16: 2,
  int64: 8,
  int32: 4,
  int16: 2,
  int8: 1,
  uint8: 1,
  bool: 1,
};

/**
 * The reference writer's dtype order (its Dtype enum); it lays tensors out by this rank,
 * descending, then by name, which keeps data aligned. Writing the same order makes
 * tsddp's files byte-identical to safetensors.torch.save_file's.
 */
export const WRITE_RANK: Readonly<Record<DType, number>> = {
  bool: 0,
  uint8: 1,
  int8: 2,
  int16: 3,
  float16: 4,
  bfloat16: 5,
  int32: 6,
  float32: 7,
  float64: 8,
  int64: 9,
};
