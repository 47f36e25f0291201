// The safetensors format's dtype codes (its own table, like its JSON layout) and what they
// mean in tsddp. Which tsddp dtype a code holds is read from core's one dtype table
// (`dtypeFromName` of PyTorch's name for it), so a dtype core adds (uint16, say) is
// loaded as a tensor here with no change; codes with no tsddp dtype are still read and
// validated, and handed out as raw bytes on request (safetensors.ts).
import { DTYPES, type DType, dtypeFromName } from '../core/dtype.ts';

/** One dtype of the format. */
export interface FormatDtype {
  /** The code in the header: 'F32', 'U16', ... */
  readonly code: string;
  /** PyTorch's name for the dtype (`torch.<name>`), as safetensors.torch maps it. */
  readonly torchName: string;
  /** Bytes per element. */
  readonly bytes: number;
  /**
   * The reference writer's order (its Dtype enum): it lays tensors out by this rank,
   * descending, then by name, which keeps data aligned; writing the same order makes
   * tsddp's files byte-identical to safetensors.torch.save_file's.
   */
  readonly rank: number;
  /** The tsddp dtype, or null where tsddp's Tensor has none (yet). */
  readonly dtype: DType | null;
}

// In the reference's Dtype enum order (ascending rank), as save_file lays files out
// (checked against safetensors 0.8 by make_safetensors_cases.py's file). The sub-byte
// F4/F6 codes are left out: their sizes are in bits, and nothing tsddp reads has them.
const TABLE: readonly (readonly [code: string, torchName: string, bytes: number])[] = [
  ['BOOL', 'bool', 1],
  ['U8', 'uint8', 1],
  ['I8', 'int8', 1],
  ['F8_E5M2', 'float8_e5m2', 1],
  ['F8_E4M3', 'float8_e4m3fn', 1],
  ['F8_E8M0', 'float8_e8m0fnu', 1],
  ['F8_E4M3FNUZ', 'float8_e4m3fnuz', 1],
  ['F8_E5M2FNUZ', 'float8_e5m2fnuz', 1],
  ['I16', 'int16', 2],
  ['U16', 'uint16', 2],
  ['F16', 'float16', 2],
  ['BF16', 'bfloat16', 2],
  ['I32', 'int32', 4],
  ['U32', 'uint32', 4],
  ['F32', 'float32', 4],
  ['C64', 'complex64', 8],
  ['F64', 'float64', 8],
  ['I64', 'int64', 8],
  ['U64', 'uint64', 8],
];

/** Every dtype code of the format, by code. */
export const FORMAT_DTYPES: ReadonlyMap<string, FormatDtype> = new Map(
  TABLE.map(([code, torchName, bytes], rank) => [
    code,
    { code, torchName, bytes, rank, dtype: dtypeFromName(torchName) ?? null },
  ]),
);

/** The format entry of each tsddp dtype the format can store. */
export const FORMAT_OF_DTYPE: ReadonlyMap<DType, FormatDtype> = new Map(
  DTYPES.flatMap((d) => {
    const f = [...FORMAT_DTYPES.values()].find((x) => x.dtype === d);
    return f ? [[d, f] as const] : [];
  }),
);
