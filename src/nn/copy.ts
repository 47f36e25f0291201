// copy.deepcopy of a module: fresh copies of its parameters (still Parameters, with the
// same requires_grad), buffers and submodules, with no random draws; a tensor or module
// reached twice (tied weights, a shared submodule) is copied once, as deepcopy's memo
// does. Other attributes are shared. PyTorch's _get_clones (TransformerEncoder's stacked
// layers) and swa_utils.AveragedModel use it.
import * as t from '../core/index.ts';
import { Module } from './module.ts';
import { isParameter, Parameter } from './parameter.ts';

export function deepCopyModule<M extends Module>(m: M, memo = new Map<object, unknown>()): M {
  const seen = memo.get(m);
  if (seen !== undefined) return seen as M;
  const copy = Object.create(Object.getPrototypeOf(m)) as M;
  memo.set(m, copy);
  const hidden = (value: unknown) => ({ value, enumerable: false, writable: false, configurable: false });
  const tensorCopy = (x: t.Tensor): t.Tensor => {
    const done = memo.get(x);
    if (done !== undefined) return done as t.Tensor;
    const data = x.detach().clone();
    const c = isParameter(x) ? Parameter(data, x.requiresGrad) : data.keep();
    memo.set(x, c);
    return c;
  };
  const copyValue = (v: unknown): unknown =>
    v instanceof Module ? deepCopyModule(v, memo) : v instanceof t.Tensor ? tensorCopy(v) : v;
  const mapCopy = <V>(src: Map<string, V>) => new Map([...src].map(([k, v]) => [k, copyValue(v) as V]));
  Object.defineProperties(copy, {
    _parameters: hidden(mapCopy(m._parameters)),
    _buffers: hidden(mapCopy(m._buffers)),
    _nonPersistentBuffers: hidden(new Set(m._nonPersistentBuffers)),
    _modules: hidden(mapCopy(m._modules)),
  });
  for (const key of Object.keys(m)) {
    (copy as Record<string, unknown>)[key] = copyValue((m as Record<string, unknown>)[key]);
  }
  return copy;
}
