// Tensor methods written by hand over other parts of core (creation, hand-written ops),
// which tensor.ts cannot import without a cycle: attached to the prototype here, as
// ops.generated.ts attaches the generated ones.
import { type TensorOptions, tensor } from './creation.ts';
import { type UniqueOptions, unique } from './extra-ops.ts';
import { type RemovableHandle, registerHook, type TensorHook } from './hooks.ts';
import { type NestedArray, Tensor } from './tensor.ts';

declare module './tensor.ts' {
  interface Tensor {
    /**
     * torch.Tensor.new_tensor: a tensor from data with this tensor's dtype and device
     * unless `opts` says otherwise.
     */
    newTensor(data: NestedArray | ArrayBufferView, opts?: TensorOptions): Tensor;
    /**
     * torch.Tensor.register_hook: `fn(grad)` runs when this tensor's gradient is computed;
     * returning a tensor replaces the gradient. CPU tensors only (a CUDA backward runs
     * hooks on libtorch's threads, where JavaScript cannot run).
     */
    registerHook(fn: TensorHook): RemovableHandle;
    /** torch.Tensor.unique (see unique()). */
    unique(opts?: UniqueOptions & { returnInverse?: false; returnCounts?: false }): Tensor;
    unique(opts: UniqueOptions & { returnInverse: true; returnCounts: true }): [Tensor, Tensor, Tensor];
    unique(opts: UniqueOptions): [Tensor, Tensor];
  }
}

const proto = Tensor.prototype as unknown as Record<string, unknown>;

proto.newTensor = function (this: Tensor, data: NestedArray | ArrayBufferView, opts: TensorOptions = {}) {
  return tensor(data, { ...opts, dtype: opts.dtype ?? this.dtype, device: opts.device ?? this.device });
};

proto.registerHook = function (this: Tensor, fn: TensorHook) {
  return registerHook(this, fn);
};

proto.unique = function (this: Tensor, opts?: UniqueOptions) {
  return unique(this, opts as UniqueOptions);
};
