// dtypes: names as in PyTorch (without the `torch.` prefix), codes as c10::ScalarType.

export type DType =
  | 'float32'
  | 'float64'
  | 'float16'
  | 'bfloat16'
  | 'int64'
  | 'int32'
  | 'int16'
  | 'int8'
  | 'uint8'
  | 'bool'
  | 'uint16'
  | 'uint32'
  | 'uint64'
  | 'float8_e4m3fn'
  | 'float8_e5m2'
  | 'complex64'
  | 'complex128';

export const DTYPES: readonly DType[] = [
  'float32',
  'float64',
  'float16',
  'bfloat16',
  'int64',
  'int32',
  'int16',
  'int8',
  'uint8',
  'bool',
  'uint16',
  'uint32',
  'uint64',
  'float8_e4m3fn',
  'float8_e5m2',
  'complex64',
  'complex128',
];

const CODES: Record<DType, number> = {
  uint8: 0,
  int8: 1,
  int16: 2,
  int32: 3,
  int64: 4,
  float16: 5,
  float32: 6,
  float64: 7,
  complex64: 9,
  complex128: 10,
  bool: 11,
  bfloat16: 15,
  float8_e5m2: 23,
  float8_e4m3fn: 24,
  uint16: 27,
  uint32: 28,
  uint64: 29,
};

// Aliases PyTorch users type (torch.float, torch.double, torch.half, torch.long, ...;
// torch.cfloat and torch.cdouble for the complex dtypes).
const ALIASES: Record<string, DType> = {
  float: 'float32',
  double: 'float64',
  half: 'float16',
  long: 'int64',
  int: 'int32',
  short: 'int16',
  char: 'int8',
  byte: 'uint8',
  cfloat: 'complex64',
  cdouble: 'complex128',
};

/**
 * The dtype a name means: a DType, or one of PyTorch's aliases (float, double, half,
 * long, int, short, char, byte, cfloat, cdouble). Undefined for anything else (a device
 * name, say). The one table every module uses to read a dtype given as text.
 */
export function dtypeFromName(name: string): DType | undefined {
  if ((DTYPES as readonly string[]).includes(name)) return name as DType;
  return ALIASES[name];
}

/** dtypeFromName, or a TypeError naming the value and `what` took it. */
export function toDType(name: string, what = 'dtype'): DType {
  const d = dtypeFromName(name);
  if (d === undefined)
    throw new TypeError(
      `${what}: unknown dtype '${name}'; expected one of ${DTYPES.join(', ')} or ${Object.keys(ALIASES).join(', ')}`,
    );
  return d;
}

const BY_CODE: (DType | undefined)[] = [];
for (const [name, code] of Object.entries(CODES)) BY_CODE[code] = name as DType;

export function dtypeCode(d: DType | string): number {
  const code = CODES[d as DType] ?? CODES[ALIASES[d] as DType];
  if (code === undefined) {
    throw new TypeError(`unknown dtype '${String(d)}'; expected one of ${DTYPES.join(', ')}`);
  }
  return code;
}

export function dtypeFromCode(code: number): DType {
  const d = BY_CODE[code];
  if (d === undefined) throw new TypeError(`tsddp does not support the libtorch dtype with code ${code}`);
  return d;
}

/** torch.dtype.is_floating_point: the float dtypes, float8 included; complex is not. */
export function isFloatingPoint(d: DType): boolean {
  return (
    d === 'float32' ||
    d === 'float64' ||
    d === 'float16' ||
    d === 'bfloat16' ||
    d === 'float8_e4m3fn' ||
    d === 'float8_e5m2'
  );
}

/** torch.dtype.is_complex. */
export function isComplex(d: DType): boolean {
  return d === 'complex64' || d === 'complex128';
}

/** The float8 dtypes: JS has no array for them, so their data comes out as bits (a Uint8Array). */
export function isFloat8(d: DType): boolean {
  return d === 'float8_e4m3fn' || d === 'float8_e5m2';
}

export const ITEM_SIZE: Record<DType, number> = {
  float32: 4,
  float64: 8,
  float16: 2,
  bfloat16: 2,
  int64: 8,
  int32: 4,
  int16: 2,
  int8: 1,
  uint8: 1,
  bool: 1,
  uint16: 2,
  uint32: 4,
  uint64: 8,
  float8_e4m3fn: 1,
  float8_e5m2: 1,
  complex64: 8,
  complex128: 16,
};

export type TypedArray =
  | Float32Array
  | Float64Array
  | BigInt64Array
  | Int32Array
  | Int16Array
  | Int8Array
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | BigUint64Array;

/**
 * The typed array that holds values of a dtype (float16/bfloat16 come out as float32, bool
 * as uint8). float8 gives its bits (Uint8Array); complex64/complex128 give a Float32Array/
 * Float64Array of interleaved (re, im) pairs, twice as long as the tensor has elements
 * (the layout of torch.view_as_real(x).flatten()).
 */
export function typedArrayFor(code: number, buffer: ArrayBuffer): TypedArray {
  switch (code) {
    case 6:
    case 9: // complex64: (re, im) float32 pairs
      return new Float32Array(buffer);
    case 7:
    case 10: // complex128: (re, im) float64 pairs
      return new Float64Array(buffer);
    case 27:
      return new Uint16Array(buffer);
    case 28:
      return new Uint32Array(buffer);
    case 29:
      return new BigUint64Array(buffer);
    case 4:
      return new BigInt64Array(buffer);
    case 3:
      return new Int32Array(buffer);
    case 2:
      return new Int16Array(buffer);
    case 1:
      return new Int8Array(buffer);
    case 0:
    case 11:
    case 23: // float8_e5m2 and float8_e4m3fn: their bits
    case 24:
      return new Uint8Array(buffer);
    default:
      throw new TypeError(`no typed array for dtype code ${code}`);
  }
}

/**
 * The dtype a TypedArray's elements have, for tensor(typedArray). A Float32Array is
 * float32, never complex64: complex data is given with its dtype (fromBuffer/fromBytes).
 */
export function dtypeOfTypedArray(a: ArrayBufferView): DType | undefined {
  if (a instanceof Float32Array) return 'float32';
  if (a instanceof Float64Array) return 'float64';
  if (a instanceof BigInt64Array) return 'int64';
  if (a instanceof Int32Array) return 'int32';
  if (a instanceof Int16Array) return 'int16';
  if (a instanceof Int8Array) return 'int8';
  if (a instanceof Uint8Array || a instanceof Uint8ClampedArray) return 'uint8';
  if (a instanceof Uint16Array) return 'uint16';
  if (a instanceof Uint32Array) return 'uint32';
  if (a instanceof BigUint64Array) return 'uint64';
  return undefined;
}

export type MemoryFormat = 'contiguousFormat' | 'channelsLast' | 'preserveFormat' | 'channelsLast3d';

const MEMORY_FORMATS: Record<MemoryFormat, number> = {
  contiguousFormat: 0,
  preserveFormat: 1,
  channelsLast: 2,
  channelsLast3d: 3,
};

export function memoryFormatCode(f: MemoryFormat): number {
  const code = MEMORY_FORMATS[f];
  if (code === undefined) {
    throw new TypeError(
      `unknown memory format '${String(f)}'; expected one of ${Object.keys(MEMORY_FORMATS).join(', ')}`,
    );
  }
  return code;
}

/** A dtype as users may write it: a DType or one of PyTorch's aliases (see dtypeFromName). */
export type DTypeName =
  | DType
  | 'float'
  | 'double'
  | 'half'
  | 'long'
  | 'int'
  | 'short'
  | 'char'
  | 'byte'
  | 'cfloat'
  | 'cdouble';
