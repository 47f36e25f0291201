// Hand-made .pt files for test/pt-fuzz.test.ts: pickle opcodes by name, the tensor and
// storage records torch.save writes, and archives built with tsddp's own zip writer
// (src/checkpoint/pt/zip.ts), so that one field at a time can be made hostile.
import { zipSync } from 'fflate';
import { OP } from '../../src/checkpoint/pt/opcodes.ts';
import { type RecordSource, zipChunks } from '../../src/checkpoint/pt/zip.ts';

export type Part = number | readonly number[] | Uint8Array;

/** Concatenates opcodes, bytes and byte arrays. */
export function pk(...parts: Part[]): Uint8Array {
  const out: number[] = [];
  for (const p of parts) {
    if (typeof p === 'number') out.push(p);
    else for (const b of p) out.push(b);
  }
  return Uint8Array.from(out);
}

const u32 = (n: number) => [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24];

export const str = (s: string): Uint8Array => {
  const b = Buffer.from(s, 'utf8');
  return pk(OP.BINUNICODE, u32(b.length), b);
};
export const int = (n: number | bigint): Uint8Array => {
  if (typeof n === 'number' && n >= 0 && n < 256) return pk(OP.BININT1, n);
  if (typeof n === 'number' && n >= -(2 ** 31) && n < 2 ** 31) return pk(OP.BININT, u32(n >>> 0));
  let v = BigInt(n);
  const bytes: number[] = [];
  for (;;) {
    const b = Number(v & 0xffn);
    bytes.push(b);
    v >>= 8n;
    if ((v === 0n && !(b & 0x80)) || (v === -1n && b & 0x80)) break;
  }
  return pk(OP.LONG1, bytes.length, bytes);
};
export const glob = (module: string, name: string): Uint8Array =>
  pk(OP.GLOBAL, Buffer.from(`${module}\n${name}\n`, 'utf8'));
export const tuple = (...items: Part[]): Uint8Array => pk(OP.MARK, ...items, OP.TUPLE);
export const bool = (b: boolean): number => (b ? OP.NEWTRUE : OP.NEWFALSE);
export const emptyOrderedDict = (): Uint8Array =>
  pk(glob('collections', 'OrderedDict'), OP.EMPTY_TUPLE, OP.REDUCE);

export interface TensorSpec {
  type?: string;
  key?: string;
  numel?: number | bigint;
  offset?: number;
  size?: number[];
  stride?: number[];
  requiresGrad?: boolean;
  hooks?: Uint8Array;
  metadata?: Uint8Array;
  /** _rebuild_tensor_v3's dtype (then the storage is torch.storage.UntypedStorage unless `type` says). */
  dtype?: string;
  pid?: Uint8Array;
}

/** The persistent id of a storage: ('storage', torch.<type>, key, 'cpu', numel). */
export function pid(type: string, key: string, numel: number | bigint): Uint8Array {
  const [module, name] = type.includes('.')
    ? [type.slice(0, type.lastIndexOf('.')), type.slice(type.lastIndexOf('.') + 1)]
    : ['torch', type];
  return pk(tuple(str('storage'), glob(module, name), str(key), str('cpu'), int(numel)), OP.BINPERSID);
}

/** torch._utils._rebuild_tensor_v2(...) (or _v3 with `dtype`), as torch.save writes a tensor. */
export function tensor(s: TensorSpec = {}): Uint8Array {
  const size = s.size ?? [4];
  const stride = s.stride ?? [1];
  const type = s.type ?? (s.dtype ? 'torch.storage.UntypedStorage' : 'FloatStorage');
  const numel = s.numel ?? (s.dtype ? 16 : 4);
  return pk(
    glob('torch._utils', s.dtype ? '_rebuild_tensor_v3' : '_rebuild_tensor_v2'),
    OP.MARK,
    s.pid ?? pid(type, s.key ?? '0', numel),
    int(s.offset ?? 0),
    tuple(...size.map(int)),
    tuple(...stride.map(int)),
    bool(s.requiresGrad ?? false),
    s.hooks ?? emptyOrderedDict(),
    s.dtype ? glob('torch', s.dtype) : [],
    s.metadata ?? [],
    OP.TUPLE,
    OP.REDUCE,
  );
}

/** A whole pickle: PROTO 2, `body` (one value), STOP. */
export const pickle = (...body: Part[]): Uint8Array => pk(OP.PROTO, 2, ...body, OP.STOP);
/** A pickle of {'x': value}. */
export const dictOf = (value: Part): Uint8Array => pickle(OP.EMPTY_DICT, str('x'), value, OP.SETITEM);

export interface ArchiveOptions {
  /** Records left out ('version', 'byteorder', ...). */
  omit?: string[];
  /** Records added or replaced, by name under the folder. */
  records?: Record<string, Uint8Array | string>;
  /** The folder (default 'archive'); '' puts records at the top. */
  prefix?: string;
}

/** A torch.save zip holding `pkl` as data.pkl and `storages` as data/<key>. */
export function archive(
  pkl: Uint8Array,
  storages: Record<string, Uint8Array> = {},
  o: ArchiveOptions = {},
): Uint8Array {
  const all: Record<string, Uint8Array | string> = {
    'data.pkl': pkl,
    byteorder: 'little',
    ...Object.fromEntries(Object.entries(storages).map(([k, v]) => [`data/${k}`, v])),
    version: '3\n',
    ...o.records,
  };
  const sources: RecordSource[] = Object.entries(all)
    .filter(([name]) => !o.omit?.includes(name))
    .map(([name, v]) => {
      const b = typeof v === 'string' ? Buffer.from(v, 'latin1') : v;
      return { name, size: b.length, data: () => b };
    });
  const prefix = o.prefix ?? 'archive';
  if (prefix === '') {
    return zipSync(Object.fromEntries(sources.map((s) => [s.name, [s.data(), { level: 0 }]])));
  }
  return Buffer.concat([...zipChunks(prefix, sources)]);
}

/** The same records deflated (PyTorch never writes that). */
export function deflated(files: Record<string, Uint8Array | string>): Uint8Array {
  return zipSync(
    Object.fromEntries(
      Object.entries(files).map(([n, v]) => [
        `archive/${n}`,
        [typeof v === 'string' ? Buffer.from(v) : v, { level: 6 }],
      ]),
    ),
  );
}

/** float32 bytes of `values`, little-endian. */
export const f32 = (...values: number[]): Uint8Array => new Uint8Array(Float32Array.from(values).buffer);
