// The Python globals a .pt file may name, and what calling them (REDUCE) makes. This is
// the data part of torch/_weights_only_unpickler.py's allowlist: containers
// (collections.OrderedDict, torch.Size), tensors (torch._utils._rebuild_tensor_v2/_v3,
// _rebuild_parameter), storage types and dtypes. Any other global (a model class, a
// function, builtins.eval) is refused before anything is made.
import { type DType, dtypeFromName, ITEM_SIZE, isComplex, isFloatingPoint } from '../../core/dtype.ts';
import { SerializationError } from './errors.ts';
import {
  kindOf,
  type Py,
  PyDict,
  PyDtype,
  PyGlobal,
  PyStorage,
  PyStorageType,
  PyTensor,
  PyTuple,
  type TensorBits,
} from './py.ts';

/** PyTorch's typed storage classes (torch.<Name>Storage) and the dtype each holds. */
export const STORAGE_TYPES: Readonly<Record<string, readonly [torchName: string, itemSize: number]>> = {
  FloatStorage: ['float32', 4],
  DoubleStorage: ['float64', 8],
  HalfStorage: ['float16', 2],
  BFloat16Storage: ['bfloat16', 2],
  LongStorage: ['int64', 8],
  IntStorage: ['int32', 4],
  ShortStorage: ['int16', 2],
  CharStorage: ['int8', 1],
  ByteStorage: ['uint8', 1],
  BoolStorage: ['bool', 1],
  ComplexFloatStorage: ['complex64', 8],
  ComplexDoubleStorage: ['complex128', 16],
  QInt8Storage: ['qint8', 1],
  QUInt8Storage: ['quint8', 1],
  QInt32Storage: ['qint32', 4],
  QUInt4x2Storage: ['quint4x2', 1],
  QUInt2x4Storage: ['quint2x4', 1],
};

// PyTorch's dtypes (str(torch.<dtype>) is 'torch.<name>'): those tsddp lacks are named
// in the refusal; a name not listed is no dtype, and so a global like any other.
const TORCH_DTYPES = new Set([
  ...Object.values(STORAGE_TYPES).map(([n]) => n),
  ...['uint16', 'uint32', 'uint64', 'complex32', 'float8_e4m3fn', 'float8_e5m2', 'float8_e4m3fnuz'],
  ...['float8_e5m2fnuz', 'float8_e8m0fnu', 'float4_e2m1fn_x2', 'bits1x8', 'bits2x4', 'bits4x2'],
  ...['bits8', 'bits16', 'int1', 'int2', 'int3', 'int4', 'int5', 'int6', 'int7'],
  ...['uint1', 'uint2', 'uint3', 'uint4', 'uint5', 'uint6', 'uint7'],
]);

const CALLABLES: Record<string, PyGlobal['kind']> = {
  'collections.OrderedDict': 'OrderedDict',
  'torch.Size': 'Size',
  'torch._utils._rebuild_tensor_v2': 'rebuild_v2',
  'torch._utils._rebuild_tensor_v3': 'rebuild_v3',
  'torch._utils._rebuild_parameter': 'rebuild_parameter',
};

/** The value GLOBAL `module`.`name` pushes, or null for a global outside the set. */
export function resolveGlobal(module: string, name: string): Py | null {
  const path = `${module}.${name}`;
  const kind = Object.hasOwn(CALLABLES, path) ? CALLABLES[path] : undefined;
  if (kind !== undefined) return new PyGlobal(path, kind);
  if (path === 'torch.storage.UntypedStorage') return new PyStorageType(path, 'untyped', null, 1);
  if (module !== 'torch') return null;
  const storage = Object.hasOwn(STORAGE_TYPES, name) ? STORAGE_TYPES[name] : undefined;
  if (storage !== undefined)
    return new PyStorageType(path, storage[0], dtypeFromName(storage[0]) ?? null, storage[1]);
  if (TORCH_DTYPES.has(name)) return new PyDtype(name, dtypeFromName(name) ?? null);
  return null;
}

/** What REDUCE makes of `func(*args)`. */
export function reduce(func: Py, args: PyTuple, file: string): Py {
  if (!(func instanceof PyGlobal))
    throw new SerializationError(
      'PICKLE_INVALID',
      file,
      `REDUCE calls ${kindOf(func)}, which is not callable here`,
    );
  const a = args.items;
  const bad = (what: string): never => {
    throw new SerializationError('PICKLE_INVALID', file, `${func.path}: ${what}`);
  };
  switch (func.kind) {
    case 'OrderedDict':
      // Protocol 2 writes OrderedDict() and then its items (SETITEMS): no arguments.
      if (a.length !== 0) bad(`expected no arguments, got ${a.length}`);
      return new PyDict(true);
    case 'Size':
      if (a.length !== 1 || !(a[0] instanceof PyTuple)) bad('expected one tuple of ints');
      return new PyTuple(ints(a[0] as PyTuple, 'the sizes', file));
    case 'rebuild_v2':
      return rebuildV2(a, file);
    case 'rebuild_v3':
      return rebuildV3(a, file);
    case 'rebuild_parameter': {
      const [data, requiresGrad, hooks] = a;
      if (a.length !== 3 || !(data instanceof PyTensor) || typeof requiresGrad !== 'boolean')
        bad('expected (tensor, requires_grad, backward_hooks)');
      noHooks(hooks, func.path, file);
      const d = data as PyTensor;
      checkGrad(requiresGrad as boolean, d.dtype, func.path, file);
      return new PyTensor(d.record, d.dtype, d.offset, d.size, d.stride, requiresGrad as boolean, d.bits);
    }
    case 'load_from_bytes':
      // The pickle reader calls it (it holds the bytes' reader); it never reaches here.
      return bad('is read by the pickle reader only');
  }
}

// _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
function rebuildV2(a: readonly Py[], file: string): PyTensor {
  const [storage] = a;
  if (a.length < 6 || a.length > 7 || !(storage instanceof PyStorage))
    throw new SerializationError(
      'PICKLE_INVALID',
      file,
      'torch._utils._rebuild_tensor_v2: expected (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])',
    );
  const dtype = storage.record.type.dtype;
  if (dtype === null) throw unsupportedDtype(storage.record.type.torchName, file);
  return rebuild(storage, dtype, a, 'torch._utils._rebuild_tensor_v2', file);
}

// _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype[, metadata]):
// what torch.save writes for dtypes without a typed storage class (uint16, float8_*, ...).
function rebuildV3(a: readonly Py[], file: string): PyTensor {
  const [storage, , , , , , dtype] = a;
  if (a.length < 7 || a.length > 8 || !(storage instanceof PyStorage) || !(dtype instanceof PyDtype))
    throw new SerializationError(
      'PICKLE_INVALID',
      file,
      'torch._utils._rebuild_tensor_v3: expected (storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype[, metadata])',
    );
  if (dtype.dtype === null) throw unsupportedDtype(dtype.torchName, file);
  return rebuild(
    storage,
    dtype.dtype,
    [...a.slice(0, 6), ...a.slice(7)],
    'torch._utils._rebuild_tensor_v3',
    file,
  );
}

export function unsupportedDtype(torchName: string, file: string): SerializationError {
  return new SerializationError(
    'UNSUPPORTED_DTYPE',
    file,
    `a tensor has dtype torch.${torchName}, which tsddp's Tensor has none for (it has ${[...Object.keys(ITEM_SIZE)].join(', ')}); ` +
      'convert it in PyTorch first (e.g. .to(torch.float32)) if its values fit',
  );
}

function ints(t: PyTuple, what: string, file: string): number[] {
  return t.items.map((v) => {
    if (typeof v !== 'number' || v < 0)
      throw new SerializationError(
        'PICKLE_INVALID',
        file,
        `${what} must be ints in [0, 2^53) (got ${kindOf(v)}: ${String(v)})`,
      );
    return v;
  });
}

function noHooks(hooks: Py, where: string, file: string): void {
  // PyTorch writes an empty OrderedDict ("Don't serialize hooks"); hooks would be code.
  if (!(hooks instanceof PyDict) || hooks.keys.length > 0)
    throw new SerializationError(
      'UNSUPPORTED_VALUE',
      file,
      `${where}: backward_hooks must be an empty OrderedDict`,
    );
}

/** The tensor a rebuild function makes, its view checked against its storage before anything is read. */
function rebuild(storage: PyStorage, dtype: DType, a: readonly Py[], where: string, file: string): PyTensor {
  const [, offset, size, stride, requiresGrad, hooks, metadata] = a;
  if (typeof offset !== 'number' || offset < 0)
    throw invalid(where, 'storage_offset must be an int in [0, 2^53)', file);
  if (!(size instanceof PyTuple) || !(stride instanceof PyTuple) || size.items.length !== stride.items.length)
    throw invalid(where, 'size and stride must be tuples of one length', file);
  if (size.items.length > 64) throw invalid(where, `${size.items.length} dimensions (at most 64)`, file);
  if (typeof requiresGrad !== 'boolean') throw invalid(where, 'requires_grad must be a bool', file);
  checkGrad(requiresGrad, dtype, where, file);
  noHooks(hooks, where, file);
  const bits = tensorBits(metadata, dtype, where, file);
  const record = storage.record;
  if (record.dtype !== null && record.dtype !== dtype)
    throw new SerializationError(
      'STORAGE',
      file,
      `storage '${record.key}' is viewed as both ${record.dtype} and ${dtype} (torch.save refuses that too)`,
    );
  const item = ITEM_SIZE[dtype];
  if (storage.byteOffset % item !== 0 || storage.byteLength % item !== 0 || record.bytes % item !== 0)
    throw new SerializationError(
      'STORAGE',
      file,
      `storage '${record.key}' does not hold whole ${dtype} elements`,
    );
  record.dtype = dtype;
  const sizes = ints(size, 'the sizes', file);
  const strides = ints(stride, 'the strides', file);
  checkView(storage.byteLength / item, offset, sizes, strides, `storage '${record.key}'`, file);
  return new PyTensor(record, dtype, storage.byteOffset / item + offset, sizes, strides, requiresGrad, bits);
}

/**
 * The bits a rebuild's metadata dict sets (torch._utils._set_tensor_metadata): 'conj' (a
 * complex tensor's lazy conjugate, x.conj()) and 'neg' (a lazy negation, x.conj().imag).
 * Anything else in it is refused; so is 'conj' on a real tensor, which PyTorch cannot set.
 */
function tensorBits(metadata: Py | undefined, dtype: DType, where: string, file: string): TensorBits {
  if (metadata === undefined || metadata === null) return { conj: false, neg: false };
  const unsupported = (what: string) =>
    new SerializationError('UNSUPPORTED_VALUE', file, `${where}: tensor metadata ${what} is not supported`);
  if (!(metadata instanceof PyDict)) throw unsupported(`of ${kindOf(metadata)}`);
  const bits = { conj: false, neg: false };
  metadata.keys.forEach((k, i) => {
    const v = metadata.values[i];
    if ((k !== 'conj' && k !== 'neg') || typeof v !== 'boolean')
      throw unsupported(`${String(k)}=${kindOf(v)} (only the conj/neg bits are)`);
    bits[k] = v;
  });
  if (bits.conj && !isComplex(dtype))
    throw unsupported(`conj on a ${dtype} tensor (only complex tensors have it)`);
  return bits;
}

// PyTorch: "Only Tensors of floating point and complex dtype can require gradients".
function checkGrad(requiresGrad: boolean, dtype: DType, where: string, file: string): void {
  if (requiresGrad && !isFloatingPoint(dtype) && !isComplex(dtype))
    throw invalid(where, `a ${dtype} tensor cannot require grad`, file);
}

function invalid(where: string, what: string, file: string): SerializationError {
  return new SerializationError('PICKLE_INVALID', file, `${where}: ${what}`);
}

/** A view that stays inside `numel` elements: every index it can reach is < numel. */
function checkView(
  numel: number,
  offset: number,
  size: number[],
  stride: number[],
  what: string,
  file: string,
): void {
  let count = 1;
  for (const s of size) {
    count *= s;
    if (count > Number.MAX_SAFE_INTEGER)
      throw new SerializationError(
        'STORAGE',
        file,
        `a tensor of ${what} has too many elements (${size.join('×')})`,
      );
  }
  if (count === 0) return;
  let last = offset;
  for (let d = 0; d < size.length; d++) {
    // (size - 1) × stride, compared before it is added so nothing overflows.
    if (stride[d] > 0 && size[d] - 1 > (numel - 1 - last) / stride[d]) last = Number.POSITIVE_INFINITY;
    else last += (size[d] - 1) * stride[d];
  }
  if (!(last < numel))
    throw new SerializationError(
      'STORAGE',
      file,
      `a tensor (offset ${offset}, size [${size.join(', ')}], stride [${stride.join(', ')}]) reaches past the ${numel} elements of ${what}`,
    );
}
