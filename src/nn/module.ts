// nn.Module with PyTorch's semantics: registries of parameters, buffers and submodules,
// recursive traversal with dotted names, train/eval, to(), zeroGrad, stateDict /
// loadStateDict, apply.
//
// How attributes become registered (the one design, PyTorch's __setattr__ without a
// Proxy, so property reads on the forward hot path stay plain field loads):
//  - registerParameter / registerBuffer / registerModule record an entry under a name
//    and return the value; a module usually also stores it on a property
//    (`this.fc = this.registerModule('fc', new Linear(...))`). The registered name may
//    differ from the property (BatchNorm's `running_mean` buffer), as torchvision's key
//    names require.
//  - Plain assignment also works: before every traversal or registration, the module
//    scans its own enumerable properties in definition order (PyTorch's order is
//    assignment order) and registers each Module value, and each tensor made by
//    Parameter(), that is not registered yet. Re-assigning a property whose name is
//    registered (`model.fc = new Linear(512, 10)`, `this.bias = null`) replaces the entry
//    in place, keeping its position, as PyTorch does. A property left `undefined` never
//    unregisters anything (it is what a redeclared class field holds).
//  - Plain tensors on properties that are not registered are ordinary attributes, not
//    state, as in PyTorch.
import { noGrad } from '../autograd/index.ts';
import { resolveDevice } from '../core/cuda.ts';
import { dtypeFromName, isFloatingPoint, toDType } from '../core/dtype.ts';
import * as t from '../core/index.ts';
import { setToNoneArg } from '../core/options.ts';
import { TsddpError } from '../errors/index.ts';
import { isParameter, Parameter } from './parameter.ts';

export type StateDict = Record<string, t.Tensor>;

export interface ModuleToOptions {
  /** A dtype or one of PyTorch's aliases ('double', 'half', ...). */
  dtype?: t.DTypeName;
  /** A device; an integer N is PyTorch's 'cuda:N'. */
  device?: t.DeviceLike | number;
  memoryFormat?: t.MemoryFormat;
}

export interface LoadStateDictResult {
  missingKeys: string[];
  unexpectedKeys: string[];
}

/** Raised by loadStateDict; nothing was copied into the module when it is thrown. */
export class StateDictError extends TsddpError {
  readonly code = 'STATE_DICT';
  constructor(
    message: string,
    readonly missingKeys: string[],
    readonly unexpectedKeys: string[],
    /** `size mismatch for <key>: ...` lines, one per shape-mismatched key. */
    readonly mismatchedKeys: string[],
  ) {
    super(message);
    this.name = 'StateDictError';
  }
}

interface NamedOptions {
  prefix?: string;
  recurse?: boolean;
  removeDuplicate?: boolean;
}

// Internal registries live on non-enumerable properties so the attribute scan and
// user code iterating Object.keys(module) do not see them.
export class Module {
  /** True in training mode (train()), false in evaluation mode (eval()). */
  training = true;
  declare readonly _parameters: Map<string, t.Tensor | null>;
  declare readonly _buffers: Map<string, t.Tensor | null>;
  declare readonly _nonPersistentBuffers: Set<string>;
  declare readonly _modules: Map<string, Module | null>;

  /**
   * Takes no arguments: as PyTorch's Module.__init__, an argument (a subclass passing its
   * own on, a layer without parameters given one) is refused rather than dropped.
   */
  constructor(...args: []) {
    const given = (args as unknown[]).length;
    if (given > 0) {
      throw new TypeError(
        `${new.target.name}() takes no arguments here (Module's constructor) but ${given} ${given === 1 ? 'was' : 'were'} given`,
      );
    }
    const hidden = (value: unknown) => ({ value, enumerable: false, writable: false, configurable: false });
    Object.defineProperties(this, {
      _parameters: hidden(new Map()),
      _buffers: hidden(new Map()),
      _nonPersistentBuffers: hidden(new Set()),
      _modules: hidden(new Map()),
    });
  }

  // --- forward ------------------------------------------------------------------------

  /** The computation; subclasses override it with their own signature. */
  // biome-ignore lint/suspicious/noExplicitAny: each module declares its own forward signature
  forward(..._args: any[]): any {
    throw new Error(`Module [${this.constructor.name}] is missing the required "forward" function`);
  }

  /** Runs forward(), typed by the subclass's forward signature (PyTorch's `module(x)`). */
  call(...args: Parameters<this['forward']>): ReturnType<this['forward']> {
    return this.forward(...args);
  }

  // --- registration -------------------------------------------------------------------

  /** Adds a parameter (a leaf tensor; marked as Parameter, requiring grad unless it already was one) or null. */
  registerParameter<T extends t.Tensor | null>(name: string, param: T): T {
    this.syncAttributes();
    this.checkName(name, 'parameter', this._parameters);
    if (param !== null) {
      expectTensor(param, 'parameter', name);
      if (!param.isLeaf) {
        throw new TypeError(
          `Cannot assign non-leaf Tensor to parameter '${name}'. Model parameters must be created explicitly; use detach() or Parameter(x)`,
        );
      }
      if (!isParameter(param)) Parameter(param);
    }
    this._parameters.set(name, param);
    return param;
  }

  /** Adds a buffer (state that is not trained, e.g. running statistics) or null. */
  registerBuffer<T extends t.Tensor | null>(name: string, tensor: T, opts: { persistent?: boolean } = {}): T {
    this.syncAttributes();
    this.checkName(name, 'buffer', this._buffers);
    if (tensor !== null) {
      expectTensor(tensor, 'buffer', name);
      tensor.keep();
    }
    this._buffers.set(name, tensor);
    if (opts.persistent === false) this._nonPersistentBuffers.add(name);
    else this._nonPersistentBuffers.delete(name);
    return tensor;
  }

  /** Adds a child module (PyTorch's add_module / register_module) or null. */
  registerModule<M extends Module | null>(name: string, module: M): M {
    this.syncAttributes();
    this.checkName(name, 'module', this._modules);
    if (module !== null && !(module instanceof Module)) {
      throw new TypeError(`${typeName(module)} is not a Module subclass`);
    }
    this._modules.set(name, module);
    return module;
  }

  private checkName(name: string, kind: string, own: Map<string, unknown>): void {
    if (typeof name !== 'string') throw new TypeError(`${kind} name should be a string, got ${typeof name}`);
    if (name === '') throw new KeyError(`${kind} name can't be empty string ""`);
    if (name.includes('.')) throw new KeyError(`${kind} name can't contain ".", got: ${name}`);
    for (const other of [this._parameters, this._buffers, this._modules]) {
      if (other !== own && other.has(name)) throw new KeyError(`attribute '${name}' already exists`);
    }
  }

  /**
   * Registers Module / Parameter values of own enumerable properties not registered yet,
   * and follows re-assignment of properties named like a registered entry (see the
   * comment at the top of this file).
   */
  protected syncAttributes(): void {
    const self = this as unknown as Record<string, unknown>;
    for (const key of Object.keys(this)) {
      const v = self[key];
      if (v === undefined) continue;
      if (v instanceof Module) {
        if (this._modules.get(key) !== v) {
          if (this._parameters.has(key) || this._buffers.has(key)) {
            throw new TypeError(`cannot assign module '${key}': a parameter or buffer has that name`);
          }
          this._modules.set(key, v);
        }
      } else if (this._modules.has(key)) {
        if (v !== null) throw new TypeError(`cannot assign '${typeName(v)}' as child module '${key}'`);
        this._modules.set(key, null);
      } else if (this._parameters.has(key)) {
        if (this._parameters.get(key) === v) continue;
        if (v !== null) expectTensor(v, 'parameter', key);
        if (v !== null && !isParameter(v)) Parameter(v);
        this._parameters.set(key, v);
      } else if (this._buffers.has(key)) {
        if (this._buffers.get(key) === v) continue;
        if (v !== null) expectTensor(v, 'buffer', key);
        this._buffers.set(key, v === null ? null : v.keep());
      } else if (isParameter(v)) {
        this._parameters.set(key, v);
      }
    }
  }

  // --- traversal ----------------------------------------------------------------------

  /** Direct children with their names (registration order). */
  namedChildren(): [string, Module][] {
    this.syncAttributes();
    const out: [string, Module][] = [];
    const seen = new Set<Module>();
    for (const [name, m] of this._modules) {
      if (m !== null && !seen.has(m)) {
        seen.add(m);
        out.push([name, m]);
      }
    }
    return out;
  }

  children(): Module[] {
    return this.namedChildren().map(([, m]) => m);
  }

  /** This module and every descendant, depth first, with dotted names ('' for this one). */
  namedModules(opts: { prefix?: string; removeDuplicate?: boolean } = {}): [string, Module][] {
    const out: [string, Module][] = [];
    const memo = opts.removeDuplicate === false ? null : new Set<Module>();
    const visit = (m: Module, prefix: string): void => {
      if (memo !== null) {
        if (memo.has(m)) return;
        memo.add(m);
      }
      out.push([prefix, m]);
      m.syncAttributes();
      for (const [name, child] of m._modules) {
        if (child !== null) visit(child, prefix === '' ? name : `${prefix}.${name}`);
      }
    };
    visit(this, opts.prefix ?? '');
    return out;
  }

  modules(): Module[] {
    return this.namedModules().map(([, m]) => m);
  }

  private namedMembers(
    pick: (m: Module) => Iterable<[string, t.Tensor | null]>,
    opts: NamedOptions,
  ): [string, t.Tensor][] {
    const prefix = opts.prefix ?? '';
    const removeDuplicate = opts.removeDuplicate ?? true;
    const mods: [string, Module][] =
      opts.recurse === false ? [[prefix, this]] : this.namedModules({ prefix, removeDuplicate });
    if (opts.recurse === false) this.syncAttributes();
    const memo = new Set<t.Tensor>();
    const out: [string, t.Tensor][] = [];
    for (const [modPrefix, m] of mods) {
      for (const [k, v] of pick(m)) {
        if (v === null || memo.has(v)) continue;
        if (removeDuplicate) memo.add(v);
        out.push([modPrefix === '' ? k : `${modPrefix}.${k}`, v]);
      }
    }
    return out;
  }

  /** Parameters with dotted names (`layer1.0.conv1.weight`), shared ones once. */
  namedParameters(opts: NamedOptions = {}): [string, t.Tensor][] {
    return this.namedMembers((m) => m._parameters, opts);
  }

  parameters(opts: { recurse?: boolean } = {}): t.Tensor[] {
    return this.namedParameters(opts).map(([, p]) => p);
  }

  /** Buffers (persistent or not) with dotted names. */
  namedBuffers(opts: NamedOptions = {}): [string, t.Tensor][] {
    return this.namedMembers((m) => m._buffers, opts);
  }

  buffers(opts: { recurse?: boolean } = {}): t.Tensor[] {
    return this.namedBuffers(opts).map(([, b]) => b);
  }

  /** The submodule at a dotted path ('' is this module), like get_submodule. */
  getSubmodule(target: string): Module {
    if (target === '') return this;
    let m: Module = this;
    for (const part of target.split('.')) {
      m.syncAttributes();
      const next = m._modules.get(part);
      if (!next) throw new Error(`${m.constructor.name} has no attribute \`${part}\``);
      m = next;
    }
    return m;
  }

  /** Calls fn on every submodule (children first), then on this module. */
  apply(fn: (m: Module) => void): this {
    for (const m of this.children()) m.apply(fn);
    fn(this);
    return this;
  }

  // --- modes and gradients --------------------------------------------------------------

  train(mode = true): this {
    if (typeof mode !== 'boolean') throw new TypeError('training mode is expected to be boolean');
    this.training = mode;
    for (const m of this.children()) m.train(mode);
    return this;
  }

  eval(): this {
    return this.train(false);
  }

  /** Sets requiresGrad on every parameter (freezing with false). */
  requiresGrad_(requiresGrad = true): this {
    for (const p of this.parameters()) p.requiresGrad_(requiresGrad);
    return this;
  }

  /** Clears parameter gradients: drops them (default, like PyTorch) or zeroes them in place. */
  zeroGrad(setToNoneOrOptions?: boolean | { setToNone?: boolean }): void {
    const setToNone = setToNoneArg('zeroGrad', setToNoneOrOptions);
    for (const p of this.parameters()) {
      if (setToNone) {
        p.grad = null;
        continue;
      }
      const g = p.grad;
      if (g === null) continue;
      if (g.gradFn === null) {
        g.requiresGrad_(false);
        g.zero_();
      } else {
        // A grad with history (createGraph) is detached first, as PyTorch's detach_() does.
        const d = g.detach();
        p.grad = d;
        d.zero_();
        d.dispose();
      }
      g.dispose();
    }
  }

  // --- conversion -----------------------------------------------------------------------

  /**
   * Moves and/or casts parameters and buffers in place, like Module.to: `to('float64')`,
   * `to('double')`, `to('cuda:0')`, `to({ dtype: 'half' })`, `to({ memoryFormat:
   * 'channelsLast' })`. A string is a dtype when core/dtype.ts knows it (PyTorch's
   * aliases included), else a device. Only floating point tensors change dtype (integer
   * buffers such as num_batches_tracked keep theirs); an integer target dtype is refused,
   * as in PyTorch; memoryFormat applies to 4-d tensors. Parameters (and their .grad) keep
   * their identity — the data is swapped with aten::set_data, PyTorch's `param.data =` —
   * so optimizers built before the call still hold the right tensors.
   */
  to(target: t.DTypeName | t.DeviceLike | number | ModuleToOptions): this {
    const opts = toOptions(target);
    if (opts.dtype !== undefined && !isFloatingPoint(opts.dtype)) {
      throw new TypeError(
        `nn.Module.to only accepts floating point dtypes, but got desired dtype=${opts.dtype}`,
      );
    }
    const seen = new Set<t.Tensor>();
    const convert = (x: t.Tensor): void => {
      if (seen.has(x)) return;
      seen.add(x);
      t.tidy(() => {
        const target = targetOptions(x, opts);
        if (target === null) return;
        noGrad(() => {
          t.ops.call('aten::set_data', x, x.to(target));
          const g = x.grad;
          const gradTarget = g === null ? null : targetOptions(g, opts);
          if (g !== null && gradTarget !== null) x.grad = g.to(gradTarget);
        });
      });
    };
    for (const [, m] of this.namedModules()) {
      for (const p of m._parameters.values()) if (p !== null) convert(p);
      for (const b of m._buffers.values()) if (b !== null) convert(b);
    }
    return this;
  }

  float(): this {
    return this.to('float32');
  }
  double(): this {
    return this.to('float64');
  }
  half(): this {
    return this.to('float16');
  }
  cpu(): this {
    return this.to('cpu');
  }
  cuda(index = 0): this {
    return this.to(`cuda:${index}`);
  }

  // --- state ------------------------------------------------------------------------------

  /**
   * Parameters and persistent buffers by dotted name, in registration order, like
   * state_dict(): detached tensors sharing storage with the module's (owned by the
   * caller's scope), or the module's own tensors with `keepVars`.
   */
  stateDict(opts: { prefix?: string; keepVars?: boolean } = {}): StateDict {
    const out: StateDict = {};
    const keepVars = opts.keepVars ?? false;
    const save = (m: Module, prefix: string): void => {
      m.syncAttributes();
      for (const [name, p] of m._parameters) if (p !== null) out[prefix + name] = keepVars ? p : p.detach();
      for (const [name, b] of m._buffers) {
        if (b !== null && !m._nonPersistentBuffers.has(name)) out[prefix + name] = keepVars ? b : b.detach();
      }
      for (const [name, child] of m._modules) if (child !== null) save(child, `${prefix}${name}.`);
    };
    save(this, opts.prefix ?? '');
    return out;
  }

  /**
   * Copies parameters and buffers from `stateDict` (a record or Map of tensors) into this
   * module, like load_state_dict. Every key is checked before anything is copied: shape
   * mismatches always throw, missing and unexpected keys throw when `strict` (default),
   * and a thrown StateDictError means the module is unchanged.
   */
  loadStateDict(
    stateDict: StateDict | Map<string, t.Tensor>,
    opts: { strict?: boolean } = {},
  ): LoadStateDictResult {
    const strict = opts.strict ?? true;
    // A copy: upgradeStateDict may add entries, and the caller's dict stays as it was.
    const sd: Map<string, t.Tensor> =
      stateDict instanceof Map ? new Map(stateDict) : new Map(Object.entries(stateDict));
    const missingKeys: string[] = [];
    const unexpectedKeys: string[] = [];
    const errors: string[] = [];
    const mismatched: string[] = [];
    const copies: [t.Tensor, t.Tensor][] = [];
    const known = new Set<string>();
    const visit = (m: Module, prefix: string): void => {
      m.syncAttributes();
      m.upgradeStateDict(sd, prefix);
      const local: [string, t.Tensor][] = [];
      for (const [name, p] of m._parameters) if (p !== null) local.push([name, p]);
      for (const [name, b] of m._buffers) {
        if (b !== null && !m._nonPersistentBuffers.has(name)) local.push([name, b]);
      }
      for (const [name, param] of local) {
        const key = prefix + name;
        known.add(key);
        const input = sd.get(key);
        if (input === undefined) {
          missingKeys.push(key);
          continue;
        }
        if (!(input instanceof t.Tensor)) {
          errors.push(
            `While copying the parameter named "${key}", expected Tensor from checkpoint but received ${typeName(input)}`,
          );
          continue;
        }
        const have = param.shape;
        let src = input.shape;
        // PyTorch's backward compatibility: a [1] tensor loads into a 0-d one.
        if (have.length === 0 && src.length === 1 && src[0] === 1) src = [];
        if (!sameShape(src, have)) {
          const msg = `size mismatch for ${key}: copying a param with shape [${input.shape.join(', ')}] from checkpoint, the shape in current model is [${have.join(', ')}].`;
          errors.push(msg);
          mismatched.push(key);
          continue;
        }
        copies.push([param, input]);
      }
      for (const [name, child] of m._modules) if (child !== null) visit(child, `${prefix}${name}.`);
    };
    visit(this, '');
    for (const key of sd.keys()) if (!known.has(key)) unexpectedKeys.push(key);
    if (strict) {
      if (unexpectedKeys.length > 0) {
        errors.unshift(
          `Unexpected key(s) in state_dict: ${unexpectedKeys.map((k) => `"${k}"`).join(', ')}. `,
        );
      }
      if (missingKeys.length > 0) {
        errors.unshift(`Missing key(s) in state_dict: ${missingKeys.map((k) => `"${k}"`).join(', ')}. `);
      }
    }
    if (errors.length > 0) {
      throw new StateDictError(
        `Error(s) in loading state_dict for ${this.constructor.name}:\n\t${errors.join('\n\t')}`,
        missingKeys,
        unexpectedKeys,
        mismatched,
      );
    }
    noGrad(() => {
      t.tidy(() => {
        for (const [param, input] of copies) {
          if (param.ndim === 0 && input.ndim === 1) param.copy_(input.reshape([]));
          else param.copy_(input);
        }
      });
    });
    return { missingKeys, unexpectedKeys };
  }

  /**
   * Fills in, before loadStateDict checks this module's keys (those under `prefix`),
   * entries an older version of the module did not save; PyTorch's version-aware
   * `_load_from_state_dict`. tsddp's state dicts carry no version metadata, so this
   * runs as PyTorch does for a dict without `_metadata` (version None). `stateDict` is
   * loadStateDict's own copy. The default adds nothing.
   */
  protected upgradeStateDict(_stateDict: Map<string, t.Tensor>, _prefix: string): void {}

  // --- printing ---------------------------------------------------------------------------

  /** The constructor arguments shown by toString() (PyTorch's extra_repr). */
  extraRepr(): string {
    return '';
  }

  toString(): string {
    const children = this.namedChildren();
    const extra = this.extraRepr();
    if (children.length === 0) return `${this.constructor.name}(${extra})`;
    const lines = extra ? extra.split('\n') : [];
    for (const [name, m] of children) {
      lines.push(`(${name}): ${String(m).split('\n').join('\n  ')}`);
    }
    return `${this.constructor.name}(\n  ${lines.join('\n  ')}\n)`;
  }
}

/** PyTorch's KeyError: a name Module's registration refuses. */
export class KeyError extends TsddpError {
  override name = 'KeyError';
  readonly code = 'KEY';
}

/** Throws PyTorch's TypeError unless `v`, to be the parameter or buffer `name`, is a tensor. */
function expectTensor(v: unknown, kind: 'parameter' | 'buffer', name: string): asserts v is t.Tensor {
  if (!(v instanceof t.Tensor)) {
    throw new TypeError(`cannot assign '${typeName(v)}' as ${kind} '${name}' (Tensor or null expected)`);
  }
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'object') return (v as object).constructor?.name ?? 'object';
  return typeof v;
}

function sameShape(a: number[], b: number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

interface ResolvedToOptions {
  dtype?: t.DType;
  device?: t.DeviceLike;
  memoryFormat?: t.MemoryFormat;
}

/**
 * The one reading of to()'s argument: a string is a dtype when the core dtype table
 * knows it (aliases included), else a device, as torch's `module.to('double')` /
 * `module.to('cuda')`; an options object's dtype goes through the same table.
 */
function toOptions(target: t.DTypeName | t.DeviceLike | number | ModuleToOptions): ResolvedToOptions {
  if (typeof target === 'string') {
    const dtype = dtypeFromName(target);
    return dtype === undefined ? { device: resolveDevice(target, 'Module.to') } : { dtype };
  }
  if (typeof target === 'number') return { device: resolveDevice(target, 'Module.to') };
  if (target === null || typeof target !== 'object') {
    throw new TypeError(
      `Module.to: expected a dtype, a device or an options object, got ${typeName(target)}`,
    );
  }
  const { dtype, device, memoryFormat } = target;
  return {
    dtype: dtype === undefined ? undefined : toDType(dtype, 'Module.to: dtype'),
    device: device === undefined ? undefined : resolveDevice(device, 'Module.to'),
    memoryFormat,
  };
}

/** The `Tensor.to` options that change `x`, or null when it is already as asked. */
function targetOptions(x: t.Tensor, opts: ResolvedToOptions): t.ToOptions | null {
  const o: t.ToOptions = {};
  let change = false;
  if (opts.dtype !== undefined && isFloatingPoint(x.dtype)) {
    if (opts.dtype !== x.dtype) {
      o.dtype = opts.dtype;
      change = true;
    }
  }
  if (opts.device !== undefined && !sameDevice(x.device, opts.device)) {
    o.device = opts.device;
    change = true;
  }
  if (opts.memoryFormat !== undefined && x.ndim === 4 && !x.isContiguous(opts.memoryFormat)) {
    o.memoryFormat = opts.memoryFormat;
    change = true;
  }
  return change ? o : null;
}

function sameDevice(have: string, want: string): boolean {
  if (have === want) return true;
  // 'cuda' means the current CUDA device; treat it as index 0, like the default.
  return want === 'cuda' && have === 'cuda:0';
}

/**
 * A float as Python's repr prints it in an extra_repr: `1e-05`, `0.1`, `1.0` (JavaScript
 * would print 0.00001 and 1). Python switches to exponent notation below 1e-4 and from
 * 1e16, with at least two exponent digits.
 */
export function pyFloat(x: number): string {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? 'nan' : x > 0 ? 'inf' : '-inf';
  const exp = x === 0 ? 0 : Math.floor(Math.log10(Math.abs(x)));
  if (exp < -4 || exp >= 16) {
    const [mantissa, e] = x.toExponential().split('e');
    const n = Number(e);
    return `${mantissa}e${n < 0 ? '-' : '+'}${String(Math.abs(n)).padStart(2, '0')}`;
  }
  return Number.isInteger(x) ? x.toFixed(1) : String(x);
}
