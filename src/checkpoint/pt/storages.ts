// Storages: what a persistent id in the pickle names (checked against what the file holds
// before anything is read), and the one tensor per storage that every tensor of the file
// is a view of, so that views and tied weights share memory as they did when saved.

import { ITEM_SIZE, isComplex } from '../../core/dtype.ts';
import * as t from '../../core/index.ts';
import { SerializationError } from './errors.ts';
import {
  kindOf,
  type Py,
  PyStorage,
  PyStorageType,
  type PyTensor,
  PyTuple,
  type StorageRecord,
} from './py.ts';
import { unsupportedDtype } from './torch-globals.ts';

/** The storage records a pickle names, by key. */
export class StorageTable {
  readonly records = new Map<string, StorageRecord>();
  constructor(
    readonly file: string,
    /** No record can declare more bytes than the file has. */
    private readonly fileSize: number,
  ) {}

  private invalid(detail: string): never {
    throw new SerializationError('PICKLE_INVALID', this.file, `a storage's persistent id ${detail}`);
  }

  /**
   * BINPERSID: ('storage', storage_type, key, location, numel) in a zip, with a sixth field
   * (view_metadata: None, or (view_key, offset, numel)) in the legacy format.
   */
  load(pid: Py, legacy: boolean): PyStorage {
    if (!(pid instanceof PyTuple)) return this.invalid(`is ${kindOf(pid)}, not a tuple`);
    const [tag, type, key, location, numel, view] = pid.items;
    if (pid.items.length !== (legacy ? 6 : 5) || tag !== 'storage')
      this.invalid(`must be ('storage', type, key, location, numel${legacy ? ', view' : ''})`);
    if (!(type instanceof PyStorageType)) return this.invalid(`names ${kindOf(type)}, not a storage type`);
    if (type.dtype === null && type.torchName !== 'untyped')
      throw unsupportedDtype(type.torchName, this.file);
    if (typeof key !== 'string' || typeof location !== 'string')
      return this.invalid('has a key or location that is not a str');
    if (typeof numel !== 'number' || numel < 0)
      return this.invalid('has a numel that is not an int in [0, 2^53)');
    const record = this.record(key, type, numel * type.itemSize);
    if (!legacy || view === null) return new PyStorage(record, 0, record.bytes);
    return this.view(record, view);
  }

  private record(key: string, type: PyStorageType, bytes: number): StorageRecord {
    const known = this.records.get(key);
    if (known !== undefined) {
      if (known.type.path !== type.path || known.bytes !== bytes)
        throw new SerializationError(
          'STORAGE',
          this.file,
          `storage '${key}' is declared twice, as ${known.bytes} bytes of ${known.type.path} and ${bytes} of ${type.path}`,
        );
      return known;
    }
    if (bytes > this.fileSize)
      throw new SerializationError(
        'STORAGE',
        this.file,
        `storage '${key}' declares ${bytes} bytes, more than the whole file (${this.fileSize} bytes)`,
      );
    const record: StorageRecord = { key, bytes, type, dtype: type.dtype };
    this.records.set(key, record);
    return record;
  }

  // The legacy format's storage views: (view_key, offset, numel) within the root storage.
  private view(record: StorageRecord, view: Py): PyStorage {
    if (!(view instanceof PyTuple) || view.items.length !== 3)
      return this.invalid('has a view that is not (key, offset, numel)');
    const [, offset, numel] = view.items;
    const item = record.type.itemSize;
    if (
      typeof offset !== 'number' ||
      typeof numel !== 'number' ||
      offset < 0 ||
      numel < 0 ||
      (offset + numel) * item > record.bytes
    )
      throw new SerializationError(
        'STORAGE',
        this.file,
        `a view of storage '${record.key}' reaches past its end`,
      );
    return new PyStorage(record, offset * item, numel * item);
  }

  /** The records some tensor uses (those whose data must be read). */
  used(): StorageRecord[] {
    return [...this.records.values()].filter((r) => r.dtype !== null);
  }
}

/** Reverses the bytes of each `item`-byte element (a file written on a big-endian machine). */
export function swapBytes(data: Uint8Array, item: number): Uint8Array {
  if (item === 1) return data;
  const out = new Uint8Array(data.length);
  for (let i = 0; i < data.length; i += item)
    for (let j = 0; j < item; j++) out[i + j] = data[i + item - 1 - j];
  return out;
}

/** The tensors of the file: views of one base tensor per storage record. */
export class TensorFactory {
  // By record, not key: an object pickle holds several torch.save files, each with its own keys.
  readonly bases = new Map<StorageRecord, t.Tensor>();
  readonly made: t.Tensor[] = [];

  /** Adds the base tensor of `record` from its bytes (exactly record.bytes of them). */
  addBase(record: StorageRecord, data: Uint8Array, bigEndian: boolean): void {
    const dtype = record.dtype;
    if (dtype === null) return;
    const item = ITEM_SIZE[dtype];
    // A complex element is two floats, each stored in the writer's byte order.
    const bytes = bigEndian ? swapBytes(data, isComplex(dtype) ? item / 2 : item) : data;
    this.bases.set(record, t.fromBytes(bytes, [bytes.length / item], dtype));
  }

  make(spec: PyTensor): t.Tensor {
    let x: t.Tensor;
    if (spec.size.some((s) => s === 0)) x = t.empty([...spec.size], { dtype: spec.dtype });
    else {
      const base = this.bases.get(spec.record);
      if (base === undefined) throw new Error(`storage '${spec.record.key}' was not read`);
      x = base.asStrided([...spec.size], [...spec.stride], spec.offset);
    }
    // The bits make x a lazy view, as PyTorch's _set_tensor_metadata does: the storage
    // stays shared with the file's other views of it.
    for (const [bit, op] of [
      [spec.bits.neg, 'aten::_neg_view'],
      [spec.bits.conj, 'aten::conj'],
    ] as const) {
      if (!bit) continue;
      const view = t.ops.call(op, x) as t.Tensor;
      x.dispose();
      x = view;
    }
    this.made.push(x);
    if (spec.requiresGrad) x.requiresGrad_(true);
    return x;
  }

  /** Frees the base tensors (the views keep their storage alive). */
  releaseBases(): void {
    for (const b of this.bases.values()) b.dispose();
    this.bases.clear();
  }

  /** Frees everything (a later step failed). */
  disposeAll(): void {
    this.releaseBases();
    for (const x of this.made) if (!x.isDisposed) x.dispose();
  }
}
