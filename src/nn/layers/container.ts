// Sequential and ModuleList. Children are registered under '0', '1', ... (PyTorch's
// names, hence torchvision's `layer1.0.conv1.weight` keys) and reached with get(i).
import type * as t from '../../core/index.ts';
import { Module } from '../module.ts';

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
  constructor(modules: Iterable<Module> = []) {
    super();
    this.extend(modules);
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
