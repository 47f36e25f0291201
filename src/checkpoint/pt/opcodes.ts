// Pickle opcodes (CPython's Lib/pickle.py names). The reader implements the ones
// torch.load(weights_only=True) does for data (torch/_weights_only_unpickler.py) and the
// writer emits a subset of those; every other opcode is known here only by name, so a
// refusal can say which one a file used.

export const OP = {
  MARK: 0x28, // '('
  STOP: 0x2e, // '.'
  BINFLOAT: 0x47, // 'G'
  BININT: 0x4a, // 'J'
  BININT1: 0x4b, // 'K'
  BININT2: 0x4d, // 'M'
  NONE: 0x4e, // 'N'
  BINPERSID: 0x51, // 'Q'
  REDUCE: 0x52, // 'R'
  SHORT_BINSTRING: 0x55, // 'U'
  BINUNICODE: 0x58, // 'X'
  EMPTY_LIST: 0x5d, // ']'
  APPEND: 0x61, // 'a'
  BUILD: 0x62, // 'b'
  GLOBAL: 0x63, // 'c'
  APPENDS: 0x65, // 'e'
  BINGET: 0x68, // 'h'
  LONG_BINGET: 0x6a, // 'j'
  BINPUT: 0x71, // 'q'
  LONG_BINPUT: 0x72, // 'r'
  SETITEM: 0x73, // 's'
  TUPLE: 0x74, // 't'
  SETITEMS: 0x75, // 'u'
  EMPTY_DICT: 0x7d, // '}'
  EMPTY_TUPLE: 0x29, // ')'
  PROTO: 0x80,
  TUPLE1: 0x85,
  TUPLE2: 0x86,
  TUPLE3: 0x87,
  NEWTRUE: 0x88,
  NEWFALSE: 0x89,
  LONG1: 0x8a,
  // Protocol 3 and 4, which Python's own pickler writes (torch.distributed's object
  // collectives pickle with it).
  BINBYTES: 0x42,
  SHORT_BINBYTES: 0x43,
  SHORT_BINUNICODE: 0x8c,
  STACK_GLOBAL: 0x93,
  MEMOIZE: 0x94,
  FRAME: 0x95,
} as const;

// The opcodes the reader refuses, by byte, for messages.
const OTHER: Record<number, string> = {
  48: 'POP',
  49: 'POP_MARK',
  50: 'DUP',
  70: 'FLOAT',
  73: 'INT',
  76: 'LONG',
  80: 'PERSID',
  83: 'STRING',
  84: 'BINSTRING',
  86: 'UNICODE',
  100: 'DICT',
  103: 'GET',
  105: 'INST',
  108: 'LIST',
  111: 'OBJ',
  112: 'PUT',
  129: 'NEWOBJ',
  130: 'EXT1',
  131: 'EXT2',
  132: 'EXT4',
  139: 'LONG4',
  141: 'BINUNICODE8',
  142: 'BINBYTES8',
  143: 'EMPTY_SET',
  144: 'ADDITEMS',
  145: 'FROZENSET',
  146: 'NEWOBJ_EX',
  150: 'BYTEARRAY8',
  151: 'NEXT_BUFFER',
  152: 'READONLY_BUFFER',
};

const NAMES: Record<number, string> = {
  ...OTHER,
  ...Object.fromEntries(Object.entries(OP).map(([name, byte]) => [byte, name])),
};

/** How a message names the opcode `byte`: 'NEWOBJ (0x81)', or 'unknown opcode 0xff'. */
export function opcodeName(byte: number): string {
  const hex = `0x${byte.toString(16).padStart(2, '0')}`;
  const name = NAMES[byte];
  return name === undefined ? `unknown opcode ${hex}` : `${name} (${hex})`;
}
