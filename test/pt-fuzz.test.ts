// Hostile .pt files (docs/reliability.md's stance on untrusted files, applied to t.load):
// truncated and patched zips, storages of the wrong size, huge declared sizes, every
// refused opcode, globals outside the data set, deep nesting, cycles, broken legacy files,
// random damage. Each gives a SerializationError with the code it should (or, for damage
// to tensor bytes, loads), never another error, never a crash, and leaves no tensor
// behind; a size is always checked against the file before anything of that size is made.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { OP } from '../src/checkpoint/pt/opcodes.ts';
import * as t from '../src/index.ts';
import {
  archive,
  bool,
  deflated,
  dictOf,
  emptyOrderedDict,
  f32,
  glob,
  int,
  type Part,
  pickle,
  pid,
  pk,
  str,
  tensor,
  tuple,
} from './helpers/pt-craft.ts';
import { PT_FIXTURES, tensorsIn } from './helpers/pt-fixtures.ts';

type Code = t.SerializationErrorCode;
interface Case {
  name: string;
  bytes: Uint8Array;
  /** The code (or codes) expected, or 'load' for a file that is valid after all. */
  want: Code | Code[] | 'load';
  message?: RegExp;
}

const cases: Case[] = [];
const add = (name: string, bytes: Uint8Array, want: Case['want'], message?: RegExp) =>
  cases.push({ name, bytes, want, message });
const four = { '0': f32(1, 2, 3, 4) };
const tensorFile = (spec: Parameters<typeof tensor>[0], storages: Record<string, Uint8Array> = four) =>
  archive(dictOf(tensor(spec)), storages);

// --- the valid baseline ---------------------------------------------------------------
add('baseline: one float32 tensor', tensorFile({}), 'load');

// --- opcodes outside the set: each is named --------------------------------------------
const REFUSED_OPCODES: [number, string][] = [
  [0x30, 'POP'],
  [0x31, 'POP_MARK'],
  [0x32, 'DUP'],
  [0x46, 'FLOAT'],
  [0x49, 'INT'],
  [0x4c, 'LONG'],
  [0x50, 'PERSID'],
  [0x53, 'STRING'],
  [0x54, 'BINSTRING'],
  [0x56, 'UNICODE'],
  [0x64, 'DICT'],
  [0x67, 'GET'],
  [0x69, 'INST'],
  [0x6c, 'LIST'],
  [0x6f, 'OBJ'],
  [0x70, 'PUT'],
  [0x42, 'BINBYTES'],
  [0x43, 'SHORT_BINBYTES'],
  [0x81, 'NEWOBJ'],
  [0x82, 'EXT1'],
  [0x83, 'EXT2'],
  [0x84, 'EXT4'],
  [0x8b, 'LONG4'],
  [0x8c, 'SHORT_BINUNICODE'],
  [0x8d, 'BINUNICODE8'],
  [0x8e, 'BINBYTES8'],
  [0x8f, 'EMPTY_SET'],
  [0x90, 'ADDITEMS'],
  [0x91, 'FROZENSET'],
  [0x92, 'NEWOBJ_EX'],
  [0x93, 'STACK_GLOBAL'],
  [0x94, 'MEMOIZE'],
  [0x95, 'FRAME'],
  [0x96, 'BYTEARRAY8'],
  [0x97, 'NEXT_BUFFER'],
  [0x98, 'READONLY_BUFFER'],
];
for (const [byte, name] of REFUSED_OPCODES)
  add(
    `opcode ${name}`,
    archive(pickle(OP.EMPTY_LIST, byte, 0, 0, 0, 0, 0, 0, 0, 0)),
    'PICKLE_OPCODE',
    new RegExp(`${name} \\(0x`),
  );
add('an opcode no pickle has (0xff)', archive(pickle(0xff)), 'PICKLE_OPCODE', /unknown opcode 0xff/);
add('an opcode no pickle has (0x00)', archive(pickle(0x00)), 'PICKLE_OPCODE', /unknown opcode 0x00/);

// --- globals outside the data set: each is named ---------------------------------------
const REFUSED_GLOBALS = [
  ['builtins', 'eval'],
  ['builtins', 'exec'],
  ['__builtin__', 'getattr'],
  ['os', 'system'],
  ['posix', 'system'],
  ['subprocess', 'Popen'],
  ['torch', 'load'],
  ['torch', 'Tensor'],
  ['torch', 'device'],
  ['torch.nn.modules.linear', 'Linear'],
  ['collections', 'Counter'],
  ['collections', 'defaultdict'],
  ['builtins', 'set'],
  ['builtins', 'complex'],
  ['_codecs', 'encode'],
  ['numpy.core.multiarray', '_reconstruct'],
  ['torch._utils', '_rebuild_qtensor'],
  ['torch._utils', '_rebuild_sparse_tensor'],
  ['torch._utils', '_rebuild_parameter_with_state'],
  ['torch._tensor', '_rebuild_from_type_v2'],
  ['torch.serialization', '_get_layout'],
  ['torch', '__proto__'],
  ['constructor', 'prototype'],
  ['torch', 'TypedStorage'],
];
for (const [module, name] of REFUSED_GLOBALS) {
  const shown = `${module === '__builtin__' ? 'builtins' : module}.${name}`;
  add(
    `global ${module}.${name}`,
    archive(dictOf(pk(glob(module, name), OP.EMPTY_TUPLE, OP.REDUCE))),
    'PICKLE_GLOBAL',
    new RegExp(`global ${shown.replace(/\./g, '\\.')};`),
  );
}

// --- storages: sizes checked against the records, and records against the file ---------
add(
  'a record shorter than declared',
  tensorFile({ numel: 4 }, { '0': f32(1, 2, 3) }),
  'STORAGE',
  /declared as 16 bytes, its record holds 12/,
);
add(
  'a record longer than declared',
  tensorFile({ numel: 4 }, { '0': f32(1, 2, 3, 4, 5) }),
  'STORAGE',
  /declared as 16 bytes, its record holds 20/,
);
add('no record for a storage', tensorFile({ key: '7' }), 'STORAGE', /no record 'archive\/data\/7'/);
add(
  'a huge declared size (2^40 elements)',
  tensorFile({ numel: 2 ** 40, size: [2 ** 40] }),
  'STORAGE',
  /more than the whole file/,
);
add('a declared size past 2^53', tensorFile({ numel: 2n ** 60n }), 'PICKLE_INVALID', /numel/);
add('a negative declared size', tensorFile({ numel: -1 }), 'PICKLE_INVALID', /numel/);
add(
  'one key declared as two storage types',
  archive(dictOf(pk(OP.EMPTY_LIST, tensor({}), OP.APPEND, tensor({ type: 'IntStorage' }), OP.APPEND)), four),
  'STORAGE',
  /declared twice/,
);
add(
  'a storage of torch.complex64 (valid)',
  tensorFile({ type: 'ComplexFloatStorage', numel: 2, size: [2] }),
  'load',
);
add(
  'a storage of torch.qint8',
  tensorFile({ type: 'QInt8Storage', numel: 16 }),
  'UNSUPPORTED_DTYPE',
  /torch\.qint8/,
);
add('_rebuild_tensor_v3 of torch.uint16 (valid)', tensorFile({ dtype: 'uint16', size: [8] }), 'load');
add(
  '_rebuild_tensor_v3 of torch.float8_e4m3fn (valid)',
  tensorFile({ dtype: 'float8_e4m3fn', size: [16] }),
  'load',
);
add(
  '_rebuild_tensor_v3 of torch.float8_e8m0fnu',
  tensorFile({ dtype: 'float8_e8m0fnu', size: [16] }),
  'UNSUPPORTED_DTYPE',
  /torch\.float8_e8m0fnu/,
);
add(
  '_rebuild_tensor_v3 of torch.complex32',
  tensorFile({ dtype: 'complex32', size: [4] }),
  'UNSUPPORTED_DTYPE',
  /torch\.complex32/,
);
add(
  'a complex64 tensor of no whole elements',
  tensorFile({ dtype: 'complex64', numel: 12, size: [1] }, { '0': new Uint8Array(12) }),
  'STORAGE',
  /whole complex64 elements/,
);
add('_rebuild_tensor_v3 of torch.float32 (valid)', tensorFile({ dtype: 'float32', size: [4] }), 'load');
add(
  'an untyped storage of no whole elements',
  tensorFile({ dtype: 'float32', numel: 15, size: [3] }, { '0': new Uint8Array(15) }),
  'STORAGE',
  /whole float32 elements/,
);
add(
  'one storage viewed as two dtypes',
  archive(
    dictOf(
      pk(
        OP.EMPTY_LIST,
        tensor({ dtype: 'float32', size: [4] }),
        OP.APPEND,
        tensor({ dtype: 'int32', size: [4] }),
        OP.APPEND,
      ),
    ),
    { '0': new Uint8Array(16) },
  ),
  'STORAGE',
  /viewed as both float32 and int32/,
);
add(
  'an offset past the storage',
  tensorFile({ offset: 4, size: [1] }),
  'STORAGE',
  /reaches past the 4 elements/,
);
add('a view past the storage', tensorFile({ size: [2, 2], stride: [3, 1] }), 'STORAGE', /reaches past/);
add(
  'a huge view past the storage',
  tensorFile({ size: [2 ** 40], stride: [2 ** 12] }),
  'STORAGE',
  /reaches past/,
);
add(
  'a stride-0 view of 2^40 elements (a view, not an allocation)',
  tensorFile({ size: [2 ** 40], stride: [0] }),
  'load',
);
add(
  'sizes whose product overflows',
  tensorFile({ size: [2 ** 30, 2 ** 30, 2 ** 30], stride: [0, 0, 0] }),
  'STORAGE',
  /too many elements/,
);
add(
  '65 dimensions',
  tensorFile({ size: Array(65).fill(1), stride: Array(65).fill(1) }),
  'PICKLE_INVALID',
  /65 dimensions/,
);
add('a negative offset', tensorFile({ offset: -1 }), 'PICKLE_INVALID', /storage_offset/);
add('a negative size', tensorFile({ size: [-1] }), 'PICKLE_INVALID', /sizes must be ints/);
add('a size that is a bigint', tensorFile({ size: [2 ** 60] }), 'PICKLE_INVALID', /sizes must be ints/);
add(
  'sizes and strides of two lengths',
  tensorFile({ size: [2, 2], stride: [1] }),
  'PICKLE_INVALID',
  /one length/,
);
add(
  'an int tensor that requires grad',
  tensorFile({ type: 'IntStorage', requiresGrad: true }),
  'PICKLE_INVALID',
  /cannot require grad/,
);
add(
  'backward hooks',
  tensorFile({ hooks: pk(emptyOrderedDict(), int(1), int(2), OP.SETITEM) }),
  'UNSUPPORTED_VALUE',
  /backward_hooks/,
);
add(
  'the conj bit on a float32 tensor (PyTorch cannot set it)',
  tensorFile({ metadata: pk(OP.EMPTY_DICT, str('conj'), OP.NEWTRUE, OP.SETITEM) }),
  'UNSUPPORTED_VALUE',
  /metadata conj on a float32 tensor/,
);
add(
  'the neg bit on a float32 tensor (x.conj().imag; valid)',
  tensorFile({ metadata: pk(OP.EMPTY_DICT, str('neg'), OP.NEWTRUE, OP.SETITEM) }),
  'load',
);
add(
  'metadata other than the conj/neg bits',
  tensorFile({ metadata: pk(OP.EMPTY_DICT, str('sparse'), OP.NEWTRUE, OP.SETITEM) }),
  'UNSUPPORTED_VALUE',
  /metadata sparse/,
);
add(
  'metadata that is not a dict',
  tensorFile({ metadata: pk(OP.EMPTY_LIST) }),
  'UNSUPPORTED_VALUE',
  /metadata of a list/,
);
add(
  'too few rebuild arguments',
  archive(dictOf(pk(glob('torch._utils', '_rebuild_tensor_v2'), tuple(int(1)), OP.REDUCE))),
  'PICKLE_INVALID',
  /_rebuild_tensor_v2: expected/,
);
add(
  'a persistent id that is not a tuple',
  tensorFile({ pid: pk(int(3), OP.BINPERSID) }),
  'PICKLE_INVALID',
  /not a tuple/,
);
add(
  "a persistent id of a 'module'",
  tensorFile({ pid: pk(tuple(str('module'), int(1), int(2), int(3), int(4)), OP.BINPERSID) }),
  'PICKLE_INVALID',
  /\('storage'/,
);
add(
  'a persistent id with a legacy view in a zip',
  tensorFile({
    pid: pk(
      tuple(str('storage'), glob('torch', 'FloatStorage'), str('0'), str('cpu'), int(4), OP.NONE),
      OP.BINPERSID,
    ),
  }),
  'PICKLE_INVALID',
  /\('storage'/,
);
add(
  'a persistent id naming no storage type',
  tensorFile({
    pid: pk(
      tuple(str('storage'), glob('collections', 'OrderedDict'), str('0'), str('cpu'), int(4)),
      OP.BINPERSID,
    ),
  }),
  'PICKLE_INVALID',
  /not a storage type/,
);
add(
  'a bare storage as a value',
  archive(dictOf(pid('FloatStorage', '0', 4)), four),
  'UNSUPPORTED_VALUE',
  /storage/,
);
add(
  'a dtype as a value',
  archive(dictOf(glob('torch', 'float32'))),
  'UNSUPPORTED_VALUE',
  /torch\.float32 as a value/,
);
add(
  'a function as a value',
  archive(dictOf(glob('torch._utils', '_rebuild_tensor_v2'))),
  'UNSUPPORTED_VALUE',
  /_rebuild_tensor_v2 as a value/,
);
add(
  'calling a dtype',
  archive(dictOf(pk(glob('torch', 'float32'), OP.EMPTY_TUPLE, OP.REDUCE))),
  'PICKLE_INVALID',
  /not callable/,
);
add(
  'OrderedDict with arguments',
  archive(dictOf(pk(glob('collections', 'OrderedDict'), tuple(int(1)), OP.REDUCE))),
  'PICKLE_INVALID',
  /no arguments/,
);
add(
  'torch.Size of a str',
  archive(dictOf(pk(glob('torch', 'Size'), tuple(str('a')), OP.REDUCE))),
  'PICKLE_INVALID',
  /one tuple of ints/,
);

// --- the pickle itself -------------------------------------------------------------------
add('no STOP', archive(pk(OP.PROTO, 2, OP.EMPTY_DICT)), 'PICKLE_INVALID', /without STOP/);
add('an empty data.pkl', archive(new Uint8Array(0)), 'PICKLE_INVALID', /without STOP/);
add(
  'a 4 GiB string length',
  archive(pk(OP.PROTO, 2, OP.BINUNICODE, 0xff, 0xff, 0xff, 0xff, 0x61)),
  'PICKLE_INVALID',
  /bytes were due/,
);
add(
  'a string past the end',
  archive(pk(OP.PROTO, 2, OP.SHORT_BINSTRING, 200, 0x61)),
  'PICKLE_INVALID',
  /bytes were due/,
);
add('invalid UTF-8', archive(pickle(OP.BINUNICODE, 2, 0, 0, 0, 0xc3, 0x28)), 'PICKLE_INVALID', /UTF-8/);
add('a memo slot never stored', archive(pickle(OP.BINGET, 3)), 'PICKLE_INVALID', /memo slot 3/);
add(
  'a huge memo slot',
  archive(pickle(OP.LONG_BINGET, 0xff, 0xff, 0xff, 0xff)),
  'PICKLE_INVALID',
  /memo slot 4294967295/,
);
add('STOP with an empty stack', archive(pk(OP.PROTO, 2, OP.STOP)), 'PICKLE_INVALID', /stack is empty/);
add(
  'a million MARKs',
  archive(pk(OP.PROTO, 2, new Uint8Array(1_000_000).fill(OP.MARK), OP.STOP)),
  'PICKLE_INVALID',
  /stack is empty/,
);
add('APPEND to a dict', archive(pickle(OP.EMPTY_DICT, int(1), OP.APPEND)), 'PICKLE_INVALID', /only lists/);
add(
  'SETITEM on a list',
  archive(pickle(OP.EMPTY_LIST, int(1), int(2), OP.SETITEM)),
  'PICKLE_INVALID',
  /only dicts/,
);
add(
  'SETITEMS with a key and no value',
  archive(pickle(OP.EMPTY_DICT, OP.MARK, int(1), OP.SETITEMS)),
  'PICKLE_INVALID',
  /no value/,
);
add('APPENDS without MARK', archive(pickle(OP.EMPTY_LIST, int(1), OP.APPENDS)), 'PICKLE_INVALID', /no MARK/);
add('TUPLE2 of one value', archive(pickle(int(1), OP.TUPLE2)), 'PICKLE_INVALID', /holds 1 values/);
add(
  'BUILD on a list',
  archive(pickle(OP.EMPTY_LIST, OP.EMPTY_DICT, OP.BUILD)),
  'PICKLE_INVALID',
  /BUILD on a list/,
);
add(
  'BUILD of an OrderedDict with a list',
  archive(pickle(emptyOrderedDict(), OP.EMPTY_LIST, OP.BUILD)),
  'PICKLE_INVALID',
  /dict of str keys/,
);
add(
  'REDUCE of a non-tuple',
  archive(pickle(glob('collections', 'OrderedDict'), OP.EMPTY_LIST, OP.REDUCE)),
  'PICKLE_INVALID',
  /not a tuple/,
);
add(
  'a list as a dict key',
  archive(pickle(OP.EMPTY_DICT, OP.EMPTY_LIST, int(1), OP.SETITEM)),
  'UNSUPPORTED_VALUE',
  /key is a list/,
);
add(
  'a tuple as a dict key',
  archive(pickle(OP.EMPTY_DICT, tuple(int(1)), int(1), OP.SETITEM)),
  'UNSUPPORTED_VALUE',
  /key is a tuple/,
);
add('protocol 9', archive(pk(OP.PROTO, 9, OP.NONE, OP.STOP)), 'PICKLE_INVALID', /protocol 9/);
add(
  'a GLOBAL without a line end',
  archive(pk(OP.PROTO, 2, OP.GLOBAL, Buffer.from('torch'))),
  'PICKLE_INVALID',
  /no line end/,
);
add(
  'a GLOBAL line of 2000 bytes',
  archive(pickle(OP.GLOBAL, Buffer.from(`${'a'.repeat(2000)}\nb\n`))),
  'PICKLE_INVALID',
  /no line end/,
);
const nested = (open: number, close: number, n: number) =>
  pickle(new Uint8Array(n).fill(open), new Uint8Array(n - 1).fill(close));
add(
  'lists nested 200000 deep',
  archive(nested(OP.EMPTY_LIST, OP.APPEND, 200_000)),
  'NESTING',
  /deeper than 1000/,
);
add(
  'tuples nested 5000 deep',
  archive(pickle(OP.EMPTY_TUPLE, new Uint8Array(5000).fill(OP.TUPLE1))),
  'NESTING',
  /deeper than 1000/,
);
add(
  'dicts nested 3000 deep',
  archive(
    pickle(
      ...Array(3000).fill(pk(OP.EMPTY_DICT, str('k'))),
      OP.EMPTY_DICT,
      new Uint8Array(3000).fill(OP.SETITEM),
    ),
  ),
  'NESTING',
  /deeper than 1000/,
);
add('lists nested 1000 deep (the limit)', archive(nested(OP.EMPTY_LIST, OP.APPEND, 1000)), 'load');
add(
  'a list that contains itself',
  archive(pickle(OP.EMPTY_LIST, OP.BINPUT, 0, OP.BINGET, 0, OP.APPEND)),
  'NESTING',
  /contains itself/,
);
add(
  'a dict that contains itself',
  archive(pickle(OP.EMPTY_DICT, OP.BINPUT, 0, str('me'), OP.BINGET, 0, OP.SETITEM)),
  'NESTING',
  /contains itself/,
);
add(
  'an OrderedDict whose attributes hold it',
  archive(
    pickle(emptyOrderedDict(), OP.BINPUT, 0, OP.EMPTY_DICT, str('a'), OP.BINGET, 0, OP.SETITEM, OP.BUILD),
  ),
  'NESTING',
  /contains itself/,
);
add(
  '200000 items in one APPENDS',
  archive(pickle(OP.EMPTY_LIST, OP.MARK, new Uint8Array(200_000).fill(OP.NONE), OP.APPENDS)),
  'load',
);
add(
  'a shared list 30 levels deep (a DAG, not a tree of 2^30)',
  archive(pickle(OP.EMPTY_LIST, ...Array(30).fill(pk(OP.BINPUT, 0, OP.BINGET, 0, OP.TUPLE2)))),
  'load',
);

// --- the zip -------------------------------------------------------------------------------
const good = tensorFile({});
add('an empty file', new Uint8Array(0), 'ARCHIVE', /not a torch\.save file/);
add('a zip signature alone', Uint8Array.from([0x50, 0x4b, 0x03, 0x04]), 'ARCHIVE');
for (const frac of [0.02, 0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 0.97, 0.99])
  add(`truncated at ${frac * 100}%`, good.subarray(0, Math.floor(good.length * frac)), 'ARCHIVE');
add('truncated by one byte', good.subarray(0, good.length - 1), 'ARCHIVE');
add(
  'no data.pkl',
  archive(pickle(OP.NONE), {}, { omit: ['data.pkl'] }),
  'ARCHIVE',
  /no record 'archive\/data\.pkl'/,
);
add(
  'no version record',
  archive(pickle(OP.NONE), {}, { omit: ['version'] }),
  'ARCHIVE',
  /no record 'archive\/version'/,
);
add(
  'format version 99',
  archive(pickle(OP.NONE), {}, { records: { version: '99\n' } }),
  'ARCHIVE',
  /format version 99/,
);
add(
  'format version "abc"',
  archive(pickle(OP.NONE), {}, { records: { version: 'abc' } }),
  'ARCHIVE',
  /format version NaN/,
);
add(
  'a byte order of "middle"',
  archive(pickle(OP.NONE), {}, { records: { byteorder: 'middle' } }),
  'ARCHIVE',
  /byte order 'middle'/,
);
add(
  'a 1 MB version record',
  archive(pickle(OP.NONE), {}, { records: { version: '1'.repeat(1 << 20) } }),
  'ARCHIVE',
  /too long/,
);
add(
  'a TorchScript archive',
  archive(pickle(OP.NONE), {}, { records: { 'constants.pkl': pickle(OP.NONE) } }),
  'ARCHIVE',
  /TorchScript/,
);
add('records not in a folder', archive(pickle(OP.NONE), {}, { prefix: '' }), 'ARCHIVE', /not in a folder/);
add(
  'a deflated data.pkl',
  deflated({ 'data.pkl': pickle(OP.NONE), version: '3\n' }),
  'ARCHIVE',
  /compressed \(method 8\)/,
);
add(
  'a deflated storage',
  deflated({ 'data.pkl': dictOf(tensor({})), version: '3\n', 'data/0': f32(1, 2, 3, 4) }),
  'ARCHIVE',
  /compressed/,
);
const twice = Buffer.from(good);
twice.write('archive/data/0', twice.indexOf('archive/version'), 'latin1'); // renames 'archive/version' in the local header only
add('a record renamed in its local header only', twice, 'load');

/** `good` with a field of its end-of-central-directory record (at offset `at` within it) set to `value`. */
function patchEocd(at: number, value: number, width: 2 | 4): Uint8Array {
  const b = Buffer.from(good);
  const eocd = b.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (width === 2) b.writeUInt16LE(value, eocd + at);
  else b.writeUInt32LE(value, eocd + at);
  return b;
}
add('65535 records claimed', patchEocd(8, 65535, 2), 'ARCHIVE', /more records than the file can hold/);
add('the central directory past the end', patchEocd(16, 0xfffffff0, 4), 'ARCHIVE');
add('the central directory at 0', patchEocd(16, 0, 4), 'ARCHIVE');
{
  // A zip64 end record claiming 2^32 - 1 records, before the ordinary end record.
  const b = Buffer.from(good);
  const eocd = b.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  const z64 = Buffer.alloc(56 + 20);
  z64.writeUInt32LE(0x06064b50, 0);
  z64.writeBigUInt64LE(44n, 4);
  z64.writeBigUInt64LE(0xffffffffn, 24);
  z64.writeBigUInt64LE(0xffffffffn, 32);
  z64.writeBigUInt64LE(BigInt(b.readUInt32LE(eocd + 12)), 40);
  z64.writeBigUInt64LE(BigInt(b.readUInt32LE(eocd + 16)), 48);
  z64.writeUInt32LE(0x07064b50, 56);
  z64.writeBigUInt64LE(BigInt(eocd), 64);
  z64.writeUInt32LE(1, 72);
  add(
    'a zip64 record claiming 2^32 records',
    Buffer.concat([b.subarray(0, eocd), z64, b.subarray(eocd)]),
    'ARCHIVE',
  );
}
{
  // The central directory entry of data/0 pointing its local header past the end.
  const b = Buffer.from(good);
  const cd = b.indexOf(
    Buffer.from('archive/data/0'),
    b.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]), b.length) - 200,
  );
  const entry = b.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]), cd);
  b.writeUInt32LE(0xfffffff0, entry + 42);
  add('a local header past the end', b, 'ARCHIVE', /runs past the end/);
  const c = Buffer.from(good);
  c.writeUInt32LE(0x7fffffff, entry + 20);
  c.writeUInt32LE(0x7fffffff, entry + 24);
  add('a record claiming 2 GiB', c, 'STORAGE', /its record holds 2147483647/);
}
{
  // Big-endian: the byte order record says 'big' and the data is stored so (PyTorch swaps it).
  const be = Buffer.from(f32(1, 2, 3, 4));
  for (let i = 0; i < be.length; i += 4) be.subarray(i, i + 4).reverse();
  add(
    "a big-endian writer's file (bytes swapped on load)",
    archive(dictOf(tensor({})), { '0': be }, { records: { byteorder: 'big' } }),
    'load',
  );
}

// --- the legacy format -----------------------------------------------------------------------
const legacy = new Uint8Array(readFileSync(join(PT_FIXTURES, 'values_legacy.pt')));
add('legacy: the fixture', legacy, 'load');
for (const frac of [0.001, 0.05, 0.3, 0.6, 0.8, 0.95, 0.999])
  add(`legacy: truncated at ${frac * 100}%`, legacy.subarray(0, Math.floor(legacy.length * frac)), [
    'PICKLE_INVALID',
    'STORAGE',
  ]);
const LEGACY_MAGIC = pk(OP.PROTO, 2, int(0x1950a86a20f9469cfc6cn), OP.STOP);
const legacyFile = (...parts: Part[]) => pk(LEGACY_MAGIC, ...parts);
const sysInfo = (little: boolean) => pickle(OP.EMPTY_DICT, str('little_endian'), bool(little), OP.SETITEM);
const legacyPid = (numel: number) =>
  pk(
    tuple(str('storage'), glob('torch', 'FloatStorage'), str('k'), str('cpu'), int(numel), OP.NONE),
    OP.BINPERSID,
  );
const legacyValue = (numel: number) => dictOf(tensor({ pid: legacyPid(numel) }));
const keys = pickle(OP.EMPTY_LIST, str('k'), OP.APPEND);
const i64 = (n: number) => new Uint8Array(new BigInt64Array([BigInt(n)]).buffer);
add(
  'legacy: a crafted valid file',
  legacyFile(pickle(int(1001)), sysInfo(true), legacyValue(4), keys, i64(4), f32(1, 2, 3, 4)),
  'load',
);
add('legacy: protocol 1000', legacyFile(pickle(int(1000)), sysInfo(true)), 'ARCHIVE', /protocol 1000/);
add(
  'legacy: no system information',
  legacyFile(pickle(int(1001)), pickle(OP.NONE)),
  'PICKLE_INVALID',
  /system information/,
);
add(
  'legacy: storage count differs',
  legacyFile(pickle(int(1001)), sysInfo(true), legacyValue(4), keys, i64(5), f32(1, 2, 3, 4)),
  'STORAGE',
  /holds 5 elements/,
);
add(
  'legacy: storage data cut short',
  legacyFile(pickle(int(1001)), sysInfo(true), legacyValue(4), keys, i64(4), f32(1, 2)),
  'STORAGE',
  /runs past the end/,
);
add(
  'legacy: a huge storage',
  legacyFile(pickle(int(1001)), sysInfo(true), legacyValue(2 ** 40), keys),
  'STORAGE',
  /more than the whole file/,
);
add(
  'legacy: a key no tensor names',
  legacyFile(
    pickle(int(1001)),
    sysInfo(true),
    legacyValue(4),
    pickle(OP.EMPTY_LIST, str('k'), OP.APPEND, str('z'), OP.APPEND),
    i64(4),
    f32(1, 2, 3, 4),
  ),
  'STORAGE',
  /'z' is listed but/,
);
add(
  'legacy: a storage with no data',
  legacyFile(pickle(int(1001)), sysInfo(true), legacyValue(4), pickle(OP.EMPTY_LIST)),
  'STORAGE',
  /has no data/,
);
add(
  'legacy: a view past its storage',
  legacyFile(
    pickle(int(1001)),
    sysInfo(true),
    dictOf(
      tensor({
        pid: pk(
          tuple(
            str('storage'),
            glob('torch', 'FloatStorage'),
            str('k'),
            str('cpu'),
            int(4),
            tuple(str('v'), int(2), int(5)),
          ),
          OP.BINPERSID,
        ),
      }),
    ),
    keys,
    i64(4),
    f32(1, 2, 3, 4),
  ),
  'STORAGE',
  /view of storage 'k'/,
);
add(
  'legacy: big-endian',
  legacyFile(
    pickle(int(1001)),
    sysInfo(false),
    legacyValue(4),
    keys,
    Buffer.from(i64(4)).reverse(),
    Buffer.from(f32(1, 2, 3, 4)).reverse(),
  ),
  'load',
);
{
  const tar = new Uint8Array(1024);
  tar.set(Buffer.from('ustar'), 257);
  add("PyTorch's tar format", tar, 'ARCHIVE', /tar format/);
}

// --- random damage -----------------------------------------------------------------------------
let seed = 12345;
const rand = (n: number) => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed % n;
};
const valuesPt = new Uint8Array(readFileSync(join(PT_FIXTURES, 'values.pt')));
for (let i = 0; i < 40; i++) {
  const b = Uint8Array.from(valuesPt);
  for (let j = 0; j <= i % 4; j++) b[rand(b.length)] ^= 1 << rand(8);
  cases.push({ name: `values.pt with random bit flips #${i}`, bytes: b, want: 'load' });
}
for (let i = 0; i < 10; i++)
  cases.push({
    name: `random bytes #${i}`,
    bytes: Uint8Array.from({ length: 1 + rand(4096) }, () => rand(256)),
    want: 'ARCHIVE',
  });

describe('hostile .pt files: a typed error, never a crash, nothing left allocated', () => {
  test(`there are at least 100 of them (${cases.length})`, () => assert.ok(cases.length >= 100));
  for (const c of cases)
    test(c.name, () => {
      const before = t.memory().tensors;
      const buffers = process.memoryUsage().arrayBuffers;
      // What a case may still hold when it ends: the file, its records and tensors (a few
      // times its size), never what a header declares.
      const allowed = 4 * c.bytes.length + (16 << 20);
      const checkBuffers = () =>
        assert.ok(
          process.memoryUsage().arrayBuffers - buffers < allowed,
          'more memory than the file accounts for',
        );
      const damaged = c.name.includes('random bit flips');
      let value: unknown;
      try {
        value = t.serialization.loads(c.bytes, { name: 'hostile.pt' });
      } catch (e) {
        assert.ok(
          e instanceof t.SerializationError,
          `${c.name}: not a SerializationError: ${(e as Error)?.stack}`,
        );
        assert.ok(e.message.startsWith('hostile.pt: '), e.message);
        if (c.want === 'load') assert.ok(damaged, `${c.name}: refused (${e.code}): ${e.message}`);
        else assert.ok([c.want].flat().includes(e.code), `${c.name}: ${e.code}, not ${c.want}: ${e.message}`);
        if (c.message) assert.match(e.message, c.message);
        assert.equal(t.memory().tensors, before, 'no tensor left behind');
        checkBuffers();
        return;
      }
      assert.equal(c.want, 'load', `${c.name}: loaded, where ${c.want} was due`);
      checkBuffers();
      for (const x of tensorsIn(value)) if (x instanceof t.Tensor) x.dispose();
      assert.equal(t.memory().tensors, before);
    });
});

describe("files from a big-endian writer load with PyTorch's values", () => {
  const be = (b: Uint8Array) => {
    const out = Buffer.from(b);
    for (let i = 0; i < out.length; i += 4) out.subarray(i, i + 4).reverse();
    return out;
  };
  test('zip (byteorder: big) and legacy (little_endian: False)', () => {
    const zip = archive(dictOf(tensor({})), { '0': be(f32(1, 2, 3, 4)) }, { records: { byteorder: 'big' } });
    const legacyBe = pk(
      pk(OP.PROTO, 2, int(0x1950a86a20f9469cfc6cn), OP.STOP),
      pickle(int(1001)),
      pickle(OP.EMPTY_DICT, str('little_endian'), OP.NEWFALSE, OP.SETITEM),
      dictOf(
        tensor({
          pid: pk(
            tuple(str('storage'), glob('torch', 'FloatStorage'), str('k'), str('cpu'), int(4), OP.NONE),
            OP.BINPERSID,
          ),
        }),
      ),
      pickle(OP.EMPTY_LIST, str('k'), OP.APPEND),
      Buffer.from(new BigInt64Array([4n]).buffer).reverse(),
      be(f32(1, 2, 3, 4)),
    );
    for (const bytes of [zip, legacyBe]) {
      const v = t.serialization.loads<{ x: t.Tensor }>(bytes);
      assert.deepEqual(v.x.toArray(), [1, 2, 3, 4]);
      v.x.dispose();
    }
  });
});
