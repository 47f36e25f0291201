// A pickle reader for data only: the opcodes torch.load(weights_only=True) runs for
// tensors, containers, numbers and strings (torch/_weights_only_unpickler.py), and no
// other. It calls nothing: GLOBAL resolves against torch-globals.ts' short list (anything
// else is refused, naming the global), REDUCE makes only what those globals stand for, and
// BINPERSID hands storage ids to the caller. It runs as a loop over the bytes (no
// recursion, whatever the nesting), and every length is checked against the bytes left
// before anything of that length is made.
import { SerializationError } from './errors.ts';
import { OP, opcodeName } from './opcodes.ts';
import { isPyKey, kindOf, type Py, PyBytes, PyDict, PyFloat, PyGlobal, PyList, PyTuple } from './py.ts';
import { reduce, resolveGlobal } from './torch-globals.ts';

export interface ReadContext {
  /** Shown in errors. */
  readonly file: string;
  /** BINPERSID: the storage a persistent id names (zip and legacy files differ). */
  persistentLoad(pid: Py): Py;
  /**
   * torch.storage._load_from_bytes(b): a whole torch.save file inside the pickle, as
   * Python's plain pickler writes a tensor (torch.distributed's object collectives). Only
   * object pickles read it; t.load refuses the global.
   */
  loadFromBytes?(bytes: Uint8Array): Py;
}

const PY2_MODULES = new Map([
  ['__builtin__', 'builtins'],
  ['copy_reg', 'copyreg'],
]);
const utf8 = new TextDecoder('utf-8', { fatal: true });
// A GLOBAL line longer than this is no module or name PyTorch writes.
const MAX_LINE = 1024;

class Machine {
  stack: Py[] = [];
  readonly metastack: Py[][] = [];
  readonly memo = new Map<number, Py>();
  done = false;
  constructor(
    readonly bytes: Uint8Array,
    public pos: number,
    readonly ctx: ReadContext,
  ) {}

  fail(detail: string): never {
    throw new SerializationError('PICKLE_INVALID', this.ctx.file, detail);
  }
  take(n: number): Uint8Array {
    if (n > this.bytes.length - this.pos)
      this.fail(`the pickle ends at byte ${this.bytes.length}, ${n} bytes were due at ${this.pos}`);
    const out = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
  view(n: number): DataView {
    const b = this.take(n);
    return new DataView(b.buffer, b.byteOffset, n);
  }
  line(): string {
    const end = this.bytes.indexOf(0x0a, this.pos);
    if (end < 0 || end - this.pos > MAX_LINE) this.fail(`GLOBAL at byte ${this.pos - 1} has no line end`);
    return this.text(this.take(end - this.pos + 1).subarray(0, -1));
  }
  text(b: Uint8Array): string {
    try {
      return utf8.decode(b);
    } catch {
      return this.fail('a string is not valid UTF-8');
    }
  }
  push(v: Py): void {
    this.stack.push(v);
  }
  pop(): Py {
    if (this.stack.length === 0) this.fail(`the stack is empty at byte ${this.pos - 1}`);
    return this.stack.pop() as Py;
  }
  top(): Py {
    if (this.stack.length === 0) this.fail(`the stack is empty at byte ${this.pos - 1}`);
    return this.stack[this.stack.length - 1];
  }
  popMark(): Py[] {
    const items = this.stack;
    const outer = this.metastack.pop();
    if (outer === undefined) this.fail(`no MARK before byte ${this.pos - 1}`);
    this.stack = outer;
    return items;
  }
  popN(n: number): Py[] {
    if (this.stack.length < n) this.fail(`the stack holds ${this.stack.length} values, ${n} were due`);
    return this.stack.splice(this.stack.length - n, n);
  }
  put(i: number): void {
    this.memo.set(i, this.top());
  }
  get(i: number): void {
    if (!this.memo.has(i)) this.fail(`memo slot ${i} was never stored`);
    this.push(this.memo.get(i) as Py);
  }
  list(op: string): PyList {
    const l = this.top();
    if (!(l instanceof PyList)) this.fail(`${op} on ${kindOf(l)}: only lists are appended to`);
    return l;
  }
  setItem(d: Py, k: Py, v: Py): void {
    if (!(d instanceof PyDict)) this.fail(`SETITEM on ${kindOf(d)}: only dicts take items`);
    if (!isPyKey(k))
      throw new SerializationError(
        'UNSUPPORTED_VALUE',
        this.ctx.file,
        `a dict key is ${kindOf(k)}; keys must be str, int, float, bool or None`,
      );
    d.set(k, v);
  }
}

/** A Python int from LONG1's little-endian two's complement bytes: a number where exact, else a bigint. */
function decodeLong(b: Uint8Array): number | bigint {
  if (b.length === 0) return 0;
  let v = 0n;
  for (let i = b.length - 1; i >= 0; i--) v = (v << 8n) | BigInt(b[i]);
  if (b[b.length - 1] & 0x80) v -= 1n << BigInt(8 * b.length);
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

function build(m: Machine): void {
  const state = m.pop();
  const inst = m.top();
  // Only an OrderedDict takes a BUILD here: its attributes (a state dict's _metadata).
  if (!(inst instanceof PyDict) || !inst.ordered)
    m.fail(`BUILD on ${kindOf(inst)}: only an OrderedDict's attributes are restored`);
  if (!(state instanceof PyDict) || !state.keys.every((k) => typeof k === 'string'))
    m.fail("BUILD: an OrderedDict's attributes must be a dict of str keys");
  inst.attrs ??= new PyDict(false);
  for (let i = 0; i < state.keys.length; i++) inst.attrs.set(state.keys[i], state.values[i]);
}

const HANDLERS: Record<number, (m: Machine) => void> = {
  [OP.PROTO]: (m) => {
    const v = m.take(1)[0];
    if (v < 2 || v > 5) m.fail(`pickle protocol ${v} (2 to 5 are read)`);
  },
  [OP.STOP]: (m) => {
    m.done = true;
  },
  [OP.MARK]: (m) => {
    m.metastack.push(m.stack);
    m.stack = [];
  },
  [OP.NONE]: (m) => m.push(null),
  [OP.NEWTRUE]: (m) => m.push(true),
  [OP.NEWFALSE]: (m) => m.push(false),
  [OP.BININT]: (m) => m.push(m.view(4).getInt32(0, true)),
  [OP.BININT1]: (m) => m.push(m.take(1)[0]),
  [OP.BININT2]: (m) => m.push(m.view(2).getUint16(0, true)),
  [OP.LONG1]: (m) => m.push(decodeLong(m.take(m.take(1)[0]))),
  [OP.BINFLOAT]: (m) => m.push(new PyFloat(m.view(8).getFloat64(0, false))),
  [OP.BINUNICODE]: (m) => m.push(m.text(m.take(m.view(4).getUint32(0, true)))),
  // Python 2's str: torch.load decodes it as UTF-8.
  [OP.SHORT_BINSTRING]: (m) => m.push(m.text(m.take(m.take(1)[0]))),
  [OP.EMPTY_TUPLE]: (m) => m.push(new PyTuple([])),
  [OP.EMPTY_LIST]: (m) => m.push(new PyList()),
  [OP.EMPTY_DICT]: (m) => m.push(new PyDict(false)),
  [OP.TUPLE]: (m) => m.push(new PyTuple(m.popMark())),
  [OP.TUPLE1]: (m) => m.push(new PyTuple(m.popN(1))),
  [OP.TUPLE2]: (m) => m.push(new PyTuple(m.popN(2))),
  [OP.TUPLE3]: (m) => m.push(new PyTuple(m.popN(3))),
  [OP.APPEND]: (m) => {
    const v = m.pop();
    m.list('APPEND').items.push(v);
  },
  [OP.APPENDS]: (m) => {
    const items = m.popMark();
    const list = m.list('APPENDS').items;
    // One at a time: spreading a long batch into push() would overflow the call stack.
    for (const v of items) list.push(v);
  },
  [OP.SETITEM]: (m) => {
    const v = m.pop();
    const k = m.pop();
    m.setItem(m.top(), k, v);
  },
  [OP.SETITEMS]: (m) => {
    const items = m.popMark();
    if (items.length % 2 !== 0) m.fail('SETITEMS with a key and no value');
    const d = m.top();
    for (let i = 0; i < items.length; i += 2) m.setItem(d, items[i], items[i + 1]);
  },
  [OP.BINPUT]: (m) => m.put(m.take(1)[0]),
  [OP.LONG_BINPUT]: (m) => m.put(m.view(4).getUint32(0, true)),
  [OP.BINGET]: (m) => m.get(m.take(1)[0]),
  [OP.LONG_BINGET]: (m) => m.get(m.view(4).getUint32(0, true)),
  [OP.GLOBAL]: (m) => {
    // Python 3's pickler spells builtins as Python 2 did in protocol 2 (pickle's IMPORT_MAPPING).
    const line = m.line();
    pushGlobal(m, PY2_MODULES.get(line) ?? line, m.line());
  },
  [OP.REDUCE]: (m: Machine) => {
    const args = m.pop();
    if (!(args instanceof PyTuple)) m.fail(`REDUCE's arguments are ${kindOf(args)}, not a tuple`);
    const func = m.pop();
    if (func instanceof PyGlobal && func.kind === 'load_from_bytes') {
      const [b] = args.items;
      if (args.items.length !== 1 || !(b instanceof PyBytes)) m.fail(`${func.path} takes one bytes argument`);
      m.push((m.ctx.loadFromBytes as (b: Uint8Array) => Py)(b.bytes));
    } else m.push(reduce(func, args, m.ctx.file));
  },
  [OP.BUILD]: build,
  [OP.BINPERSID]: (m) => m.push(m.ctx.persistentLoad(m.pop())),
};

// What Python's own pickler (protocol 4) adds, read only in object pickles (ReadContext's
// loadFromBytes): torch.load(weights_only=True), which t.load follows, refuses them.
const OBJECT_HANDLERS: Record<number, (m: Machine) => void> = {
  [OP.SHORT_BINUNICODE]: (m) => m.push(m.text(m.take(m.take(1)[0]))),
  [OP.BINBYTES]: (m) => m.push(new PyBytes(m.take(m.view(4).getUint32(0, true)))),
  [OP.SHORT_BINBYTES]: (m) => m.push(new PyBytes(m.take(m.take(1)[0]))),
  // A frame's length only helps a streaming reader: the whole pickle is in memory here.
  [OP.FRAME]: (m) => void m.take(8),
  [OP.MEMOIZE]: (m) => m.put(m.memo.size),
  [OP.STACK_GLOBAL]: (m) => {
    const name = m.pop();
    const module = m.pop();
    if (typeof module !== 'string' || typeof name !== 'string')
      return m.fail('STACK_GLOBAL needs a module and a name');
    pushGlobal(m, module, name);
  },
};

const LOAD_FROM_BYTES = 'torch.storage._load_from_bytes';

function pushGlobal(m: Machine, module: string, name: string): void {
  if (`${module}.${name}` === LOAD_FROM_BYTES && m.ctx.loadFromBytes) {
    m.push(new PyGlobal(LOAD_FROM_BYTES, 'load_from_bytes'));
    return;
  }
  const g = resolveGlobal(module, name);
  if (g === null)
    throw new SerializationError(
      'PICKLE_GLOBAL',
      m.ctx.file,
      `the pickle names the global ${module}.${name}; t.load reads data only (tensors, dicts, lists, tuples, ` +
        'numbers, strings, bools, None) and never runs or builds anything else. ' +
        'If the file holds a whole model (torch.save(model)), save model.state_dict() instead',
    );
  m.push(g);
}

/** Reads one pickle from `start`: its value and the offset just past its STOP. */
export function readPickle(bytes: Uint8Array, start: number, ctx: ReadContext): { value: Py; end: number } {
  const m = new Machine(bytes, start, ctx);
  while (!m.done) {
    if (m.pos >= bytes.length) m.fail('the pickle ends without STOP');
    const op = bytes[m.pos++];
    const handler = HANDLERS[op] ?? (ctx.loadFromBytes ? OBJECT_HANDLERS[op] : undefined);
    if (handler === undefined)
      throw new SerializationError(
        'PICKLE_OPCODE',
        ctx.file,
        `opcode ${opcodeName(op)} at byte ${m.pos - 1}: t.load reads only the opcodes weights-only data is written with`,
      );
    handler(m);
  }
  return { value: m.pop(), end: m.pos };
}
