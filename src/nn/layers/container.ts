// torch.nn.modules.container: Sequential, ModuleList, ModuleDict, ParameterList,
// ParameterDict and the deprecated Container. List children are registered under '0',
// '1', ... (PyTorch's names, hence torchvision's `layer1.0.conv1.weight` keys) and reached
// with get(i); the dicts' under their keys.
import type * as t from '../../core/index.ts';
import { bind, signature } from '../args.ts';
import { Module } from '../module.ts';
import { Parameter } from '../parameter.ts';

// The containers take one argument, their entries (a plain object is a dict's entries,
// not options), and refuse more; Sequential takes any number of modules, as PyTorch's *args.
const MODULE_LIST = signature(['ModuleList', 'ModuleDict'], { optional: ['modules'], noOptions: true });
const PARAMETER_LIST = signature('ParameterList', { optional: ['values'], noOptions: true });
const PARAMETER_DICT = signature('ParameterDict', { optional: ['parameters'], noOptions: true });
// PyTorch's Container(**kwargs): tsddp takes the keyword arguments as one record.
const CONTAINER = signature('Container', { optional: ['kwargs'], noOptions: true });

function indexOf(i: number, length: number, what: string): number {
  if (!Number.isInteger(i) || i < -length || i >= length)
    throw new RangeError(`index ${i} is out of range for ${what}`);
  return i < 0 ? i + length : i;
}

/** Modules run in order, each one's output the next one's input. */
export class Sequential extends Module {
  /** `new Sequential(a, b, c)`, or named children: `new Sequential(new Map([['conv', c], ['bn', b]]))`. */
  constructor(...modules: Module[] | [Map<string, Module>]) {
    super();
    const first = modules[0];
    if (modules.length === 1 && first instanceof Map) {
      for (const [name, m] of first) this.registerModule(name, m);
    } else {
      for (const m of modules as Module[]) this.registerModule(String(this._modules.size), m);
    }
  }

  get length(): number {
    return this._modules.size;
  }

  /** The i-th child (negative counts from the end). */
  get(i: number): Module {
    const idx = indexOf(i, this._modules.size, 'Sequential');
    let k = 0;
    for (const m of this._modules.values()) if (k++ === idx) return m as Module;
    throw new RangeError(`index ${i} is out of range`);
  }

  append(module: Module): this {
    this.registerModule(String(this._modules.size), module);
    return this;
  }

  [Symbol.iterator](): IterableIterator<Module> {
    return this.children()[Symbol.iterator]();
  }

  // Runs straight over the registry: no attribute scan on the hot path.
  override forward(input: t.Tensor): t.Tensor {
    let x = input;
    for (const m of this._modules.values()) if (m !== null) x = m.forward(x);
    return x;
  }
}

/** Holds submodules in a list (registered, so their parameters are the owner's); no forward. */
export class ModuleList extends Module {
  constructor(...args: [modules?: Iterable<Module>]) {
    super();
    this.extend(bind<{ modules?: Iterable<Module> }>(MODULE_LIST, args, 'ModuleList').modules ?? []);
  }

  get length(): number {
    return this._modules.size;
  }

  get(i: number): Module {
    const idx = indexOf(i, this._modules.size, 'ModuleList');
    return this._modules.get(String(idx)) as Module;
  }

  append(module: Module): this {
    this.registerModule(String(this._modules.size), module);
    return this;
  }

  extend(modules: Iterable<Module>): this {
    for (const m of modules) this.append(m);
    return this;
  }

  [Symbol.iterator](): IterableIterator<Module> {
    return this.children()[Symbol.iterator]();
  }
}

/** What ModuleDict takes: a record (insertion order), a Map, or [name, module] pairs. */
export type ModuleEntries = Record<string, Module> | Map<string, Module> | Iterable<[string, Module]>;

function entriesOf(modules: ModuleEntries): Iterable<[string, Module]> {
  if (modules instanceof Map) return modules;
  if (Symbol.iterator in modules) return modules as Iterable<[string, Module]>;
  return Object.entries(modules);
}

/**
 * What ModuleDict and ParameterDict share: torch.nn.ModuleDict's dict methods over one of
 * the module's registries, in insertion order; `get`/`has`/`delete` stand for `d[k]`,
 * `k in d` and `del d[k]`.
 */
export abstract class _DictBase<V> extends Module {
  /** The registry the dict is a view of. */
  protected abstract get registry(): Map<string, V | null>;

  /** The entry under `key`, or a RangeError. */
  abstract get(key: string): V;

  get length(): number {
    return this.registry.size;
  }

  has(key: string): boolean {
    return this.registry.has(key);
  }

  delete(key: string): boolean {
    return this.registry.delete(key);
  }

  /** Removes and returns the entry under `key`. */
  pop(key: string): V {
    const v = this.get(key);
    this.registry.delete(key);
    return v;
  }

  clear(): void {
    this.registry.clear();
  }

  keys(): string[] {
    return [...this.registry.keys()];
  }

  values(): V[] {
    return [...this.registry.values()].filter((v): v is V => v !== null);
  }

  items(): [string, V][] {
    return [...this.registry].filter((e): e is [string, V] => e[1] !== null);
  }

  /** Iterates over the keys, as a Python dict does. */
  [Symbol.iterator](): IterableIterator<string> {
    return this.keys()[Symbol.iterator]();
  }
}

/**
 * Holds submodules by name (registered under the names, so their state-dict keys are
 * `<dict>.<name>.…`), in insertion order; no forward. torch.nn.ModuleDict's methods:
 * `get`/`set`/`has`/`delete` for `d[k]`, `d[k] = m`, `k in d`, `del d[k]`.
 */
export class ModuleDict extends _DictBase<Module> {
  constructor(...args: [modules?: ModuleEntries]) {
    super();
    this.update(bind<{ modules?: ModuleEntries }>(MODULE_LIST, args, 'ModuleDict').modules ?? []);
  }

  protected override get registry(): Map<string, Module | null> {
    return this._modules;
  }

  get(key: string): Module {
    const m = this._modules.get(key);
    if (m === undefined || m === null) throw new RangeError(`ModuleDict has no module '${key}'`);
    return m;
  }

  /** Adds or replaces (in its position) the module under `key`. */
  set(key: string, module: Module): this {
    if (this._modules.has(key)) {
      if (!(module instanceof Module))
        throw new TypeError(`ModuleDict.set: ${String(module)} is not a Module`);
      this._modules.set(key, module);
    } else {
      this.registerModule(key, module);
    }
    return this;
  }

  update(modules: ModuleEntries): this {
    for (const [key, m] of entriesOf(modules)) this.set(key, m);
    return this;
  }
}

/**
 * Holds parameters in a list, registered under '0', '1', … (their state-dict keys);
 * tensors that are not parameters yet become parameters, as in torch.nn.ParameterList.
 */
export class ParameterList extends Module {
  constructor(...args: [values?: Iterable<t.Tensor>]) {
    super();
    this.extend(bind<{ values?: Iterable<t.Tensor> }>(PARAMETER_LIST, args, 'ParameterList').values ?? []);
  }

  get length(): number {
    return this._parameters.size;
  }

  get(i: number): t.Tensor {
    const idx = indexOf(i, this._parameters.size, 'ParameterList');
    return this._parameters.get(String(idx)) as t.Tensor;
  }

  /** Replaces the i-th parameter. */
  set(i: number, value: t.Tensor): this {
    const idx = indexOf(i, this._parameters.size, 'ParameterList');
    this._parameters.set(String(idx), Parameter(value));
    return this;
  }

  append(value: t.Tensor): this {
    this.registerParameter(String(this._parameters.size), value);
    return this;
  }

  extend(values: Iterable<t.Tensor>): this {
    for (const v of values) this.append(v);
    return this;
  }

  [Symbol.iterator](): IterableIterator<t.Tensor> {
    return this.parameters({ recurse: false })[Symbol.iterator]();
  }

  override extraRepr(): string {
    return [...this._parameters]
      .map(([k, p]) =>
        p === null
          ? `(${k}): None`
          : `(${k}): Parameter containing: [${p.dtype} of size ${p.shape.join('x')}]`,
      )
      .join('\n');
  }
}

/** What ParameterDict takes: a record (insertion order), a Map, or [name, tensor] pairs. */
export type ParameterEntries =
  | Record<string, t.Tensor>
  | Map<string, t.Tensor>
  | Iterable<[string, t.Tensor]>;

/**
 * Holds parameters by name (registered under the names: state-dict keys `<dict>.<name>`);
 * tensors that are not parameters yet become parameters. Order: a record given to the
 * constructor or update() is sorted by key, as PyTorch sorts a dict there; a Map, pairs
 * and set() keep insertion order.
 */
export class ParameterDict extends _DictBase<t.Tensor> {
  constructor(...args: [parameters?: ParameterEntries]) {
    super();
    const a = bind<{ parameters?: ParameterEntries }>(PARAMETER_DICT, args, 'ParameterDict');
    this.update(a.parameters ?? []);
  }

  protected override get registry(): Map<string, t.Tensor | null> {
    return this._parameters;
  }

  get(key: string): t.Tensor {
    const p = this._parameters.get(key);
    if (p === undefined || p === null) throw new RangeError(`ParameterDict has no parameter '${key}'`);
    return p;
  }

  /** Adds or replaces (in its position) the parameter under `key`. */
  set(key: string, value: t.Tensor): this {
    if (this._parameters.has(key)) this._parameters.set(key, Parameter(value));
    else this.registerParameter(key, value);
    return this;
  }

  update(values: ParameterEntries): this {
    // As PyTorch: a Map (its OrderedDict) or pairs keep their order; a plain record
    // (its dict) is taken in sorted key order.
    const entries: Iterable<[string, t.Tensor]> =
      values instanceof Map || Symbol.iterator in values
        ? (values as Iterable<[string, t.Tensor]>)
        : Object.entries(values).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [k, v] of entries) this.set(k, v);
    return this;
  }
}

/**
 * PyTorch's deprecated `Container(**kwargs)`: registers each named module, in order
 * (kept for old code; prefer ModuleDict or plain properties).
 */
export class Container extends Module {
  constructor(...args: [modules?: Record<string, Module>]) {
    super();
    const modules = bind<{ kwargs?: Record<string, Module> }>(CONTAINER, args, 'Container').kwargs ?? {};
    for (const [name, m] of Object.entries(modules)) this.registerModule(name, m);
  }
}
