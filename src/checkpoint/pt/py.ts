// The Python values the pickle reader builds, before they become JavaScript values
// (to-js.ts). Keeping Python's own model until the end lets the reader follow pickle's
// rules exactly (int vs float, dict keys that compare equal, containers filled after they
// are referenced) and decide each dict's JavaScript form only once it is complete.
import type { DType } from '../../core/dtype.ts';

/** A Python float (a JS number alone would not say whether 2 was 2 or 2.0). */
export class PyFloat {
  constructor(readonly value: number) {}
}

export class PyTuple {
  constructor(readonly items: readonly Py[]) {}
}

export class PyList {
  readonly items: Py[] = [];
}

/** A key type a dict may have here: str, int, float, bool or None. */
export type PyKey = string | number | bigint | boolean | null | PyFloat;

/** A dict or collections.OrderedDict, in insertion order; keys that compare equal in Python are one key. */
export class PyDict {
  readonly keys: PyKey[] = [];
  readonly values: Py[] = [];
  /** An OrderedDict's attributes (its BUILD state: a state dict's `_metadata`), or null. */
  attrs: PyDict | null = null;
  private readonly slots = new Map<string, number>();
  constructor(readonly ordered: boolean) {}
  /** d[key] = value: an equal key keeps its first spelling and takes the new value, as in Python. */
  set(key: PyKey, value: Py): void {
    const h = hashKey(key);
    const at = this.slots.get(h);
    if (at !== undefined) this.values[at] = value;
    else {
      this.slots.set(h, this.keys.length);
      this.keys.push(key);
      this.values.push(value);
    }
  }
}

/** Python's key equality: True == 1 == 1.0, so they share one slot. */
function hashKey(k: PyKey): string {
  if (k === null) return 'n';
  if (typeof k === 'string') return `s${k}`;
  if (typeof k === 'boolean') return k ? 'i1' : 'i0';
  if (typeof k === 'number' || typeof k === 'bigint') return `i${k}`;
  const v = k.value;
  if (Number.isInteger(v)) return `i${Number.isSafeInteger(v) ? v : BigInt(v)}`;
  return `f${v}`;
}

export function isPyKey(v: Py): v is PyKey {
  const k = typeof v;
  return (
    v === null ||
    k === 'string' ||
    k === 'number' ||
    k === 'bigint' ||
    k === 'boolean' ||
    v instanceof PyFloat
  );
}

/** An allowed global that REDUCE may call (torch-globals.ts says what each does). */
export class PyGlobal {
  constructor(
    readonly path: string,
    readonly kind:
      | 'OrderedDict'
      | 'Size'
      | 'rebuild_v2'
      | 'rebuild_v3'
      | 'rebuild_parameter'
      | 'load_from_bytes',
  ) {}
}

/** torch.<dtype> (an argument of _rebuild_tensor_v3); dtype is null where tsddp has none. */
export class PyDtype {
  constructor(
    readonly torchName: string,
    readonly dtype: DType | null,
  ) {}
}

/** torch.FloatStorage, torch.storage.UntypedStorage, ...: the first field of a storage's persistent id. */
export class PyStorageType {
  constructor(
    readonly path: string,
    /** PyTorch's dtype name ('float32'), or 'untyped' for UntypedStorage (bytes). */
    readonly torchName: string,
    readonly dtype: DType | null,
    readonly itemSize: number,
  ) {}
}

/** One storage record of the file (data/<key> in a zip; a block after the pickle in the legacy format). */
export interface StorageRecord {
  readonly key: string;
  /** Bytes the file declares for it (numel × item size of its storage type). */
  readonly bytes: number;
  readonly type: PyStorageType;
  /** The dtype its tensors view it as (set by the first tensor; all must agree). */
  dtype: DType | null;
}

/** A storage as the pickle refers to it: a whole record, or (legacy files) a byte range of one. */
export class PyStorage {
  constructor(
    readonly record: StorageRecord,
    readonly byteOffset: number,
    readonly byteLength: number,
  ) {}
}

/** A tensor to make once every storage is read: a view (offset, size, stride) of its record. */
export class PyTensor {
  constructor(
    readonly record: StorageRecord,
    readonly dtype: DType,
    /** In elements of dtype, from the start of the record. */
    readonly offset: number,
    readonly size: readonly number[],
    readonly stride: readonly number[],
    readonly requiresGrad: boolean,
    /** PyTorch's lazy conjugate and negation bits (the metadata torch.save writes for x.conj()). */
    readonly bits: TensorBits = NO_BITS,
  ) {}
}

/** The conj/neg bits of a tensor (torch._utils.get_tensor_metadata). */
export interface TensorBits {
  readonly conj: boolean;
  readonly neg: boolean;
}

export const NO_BITS: TensorBits = { conj: false, neg: false };

/** Python bytes (BINBYTES): only ever the argument of torch.storage._load_from_bytes here. */
export class PyBytes {
  constructor(readonly bytes: Uint8Array) {}
}

export type Py =
  | null
  | boolean
  | number
  | bigint
  | string
  | PyFloat
  | PyTuple
  | PyList
  | PyDict
  | PyGlobal
  | PyDtype
  | PyStorageType
  | PyStorage
  | PyTensor
  | PyBytes;

/** How a message names a value's kind. */
export function kindOf(v: Py): string {
  if (v === null) return 'None';
  if (typeof v === 'boolean') return 'a bool';
  if (typeof v === 'number' || typeof v === 'bigint') return 'an int';
  if (typeof v === 'string') return 'a str';
  if (v instanceof PyFloat) return 'a float';
  if (v instanceof PyTuple) return 'a tuple';
  if (v instanceof PyList) return 'a list';
  if (v instanceof PyDict) return v.ordered ? 'an OrderedDict' : 'a dict';
  if (v instanceof PyGlobal) return v.path;
  if (v instanceof PyDtype) return `torch.${v.torchName}`;
  if (v instanceof PyStorageType) return v.path;
  if (v instanceof PyStorage) return `a storage (torch.${v.record.type.path.split('.').pop()})`;
  if (v instanceof PyBytes) return 'bytes';
  return 'a tensor';
}
