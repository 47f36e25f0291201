// Tensor.registerHook: PyTorch's tensor gradient hooks, written in JavaScript. The addon
// registers a C++ hook that calls one dispatcher with (hook id, gradient handle); the
// functions live here, by id, and are forgotten when their tensor is gone (the addon
// reports those ids). CPU tensors only: see native/src/autograd.cc (architecture §4).
import { native } from './native.ts';
import { Tensor, wrap } from './tensor.ts';

/** A hook: sees the gradient; returning a tensor replaces it, returning nothing keeps it. */
// biome-ignore lint/suspicious/noConfusingVoidType: a hook that only looks returns nothing (void)
export type TensorHook = (grad: Tensor) => Tensor | undefined | void;

/** What registerHook returns: remove() unregisters the hook (PyTorch's RemovableHandle). */
export interface RemovableHandle {
  remove(): void;
}

const hooks = new Map<number, TensorHook>();
let nextId = 0;
let installed = false;

function dispatch(id: number, gradHandle: number): number {
  const grad = wrap(gradHandle);
  const fn = hooks.get(id);
  if (fn === undefined) return -1;
  const out = fn(grad);
  if (out === undefined || out === null) return -1;
  if (!(out instanceof Tensor))
    throw new TypeError(`a tensor hook must return a Tensor or nothing, got ${typeof out}`);
  return out.h;
}

function forgetDeadHooks(): void {
  for (const id of native.drainDeadHooks()) hooks.delete(id);
}

/** Hook functions kept (for tests: it must not grow with hooks whose tensors are gone). */
export function keptHooks(): number {
  forgetDeadHooks();
  return hooks.size;
}

export function registerHook(tensor: Tensor, fn: TensorHook): RemovableHandle {
  if (typeof fn !== 'function') throw new TypeError(`registerHook(): expected a function, got ${typeof fn}`);
  if (!installed) {
    native.setHookDispatcher(dispatch);
    installed = true;
  }
  forgetDeadHooks();
  const id = nextId++;
  const position = native.registerHook(tensor.h, id);
  hooks.set(id, fn);
  let removed = false;
  return {
    remove() {
      if (removed) return;
      removed = true;
      hooks.delete(id);
      if (tensor.h >= 0) native.removeHook(tensor.h, position);
    },
  };
}
