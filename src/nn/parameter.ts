// nn.Parameter. A parameter is an ordinary Tensor (a leaf that requires grad), marked
// in a WeakSet rather than a subclass: tensors are plain handle objects made by the
// op wrappers, so a subclass could only be had by copying handles around, while a
// mark costs nothing on the hot path and lets Module find parameters assigned to plain
// properties (`this.scale = Parameter(t.ones([4]))`), as PyTorch's __setattr__ does.
import * as t from '../core/index.ts';

const PARAMETERS = new WeakSet<t.Tensor>();

/**
 * Marks `data` as a parameter, like `torch.nn.Parameter(data, requires_grad)`, and
 * returns it: the same tensor when it is a leaf, else a detached alias of it (sharing
 * storage, as PyTorch's Parameter does). Parameters are kept (exempt from the
 * enclosing scope): a module's state outlives the scope it was built in.
 */
export function Parameter(data: t.Tensor, requiresGrad = true): t.Tensor {
  const p = data.isLeaf ? data : data.detach();
  p.requiresGrad_(requiresGrad);
  PARAMETERS.add(p);
  return p.keep();
}

/** Whether `x` was made by Parameter() (or registered with Module.registerParameter). */
export function isParameter(x: unknown): x is t.Tensor {
  return x instanceof t.Tensor && PARAMETERS.has(x);
}
