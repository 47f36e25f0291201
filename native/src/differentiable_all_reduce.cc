// A summing all-reduce that autograd can differentiate, for nn.SyncBatchNorm: the
// gradient of sum_r x_r with respect to each rank's x is the sum of every rank's gradient
// of the output, so backward is the same all-reduce of the incoming gradient. Both
// directions wait for their collective on the calling thread, as PyTorch's SyncBatchNorm
// does inside forward and backward.
#include "distributed.h"

#include <torch/csrc/autograd/custom_function.h>

namespace tsddp {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Tensor allReduceNow(const c10::intrusive_ptr<c10d::ProcessGroup>& pg, const at::Tensor& x) {
  std::vector<at::Tensor> tensors{x.contiguous().clone()};
  pg->allreduce(tensors)->wait();
  return tensors[0];
}

struct AllReduceSum : public torch::autograd::Function<AllReduceSum> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, c10::intrusive_ptr<c10d::ProcessGroup> pg) {
    ctx->saved_data["pg"] = c10::IValue::make_capsule(pg);
    return allReduceNow(pg, x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto pg = c10::static_intrusive_pointer_cast<c10d::ProcessGroup>(ctx->saved_data["pg"].toCapsule());
    return {allReduceNow(pg, grads[0]), at::Tensor()};
  }
};

// allReduceSumAutograd(pg, tensor) -> tensor: the sum over the group's ranks, blocking.
Napi::Value AllReduceSumAutograd(const Napi::CallbackInfo& info) {
  const char* what = "allReduce (differentiable)";
  auto pg = processGroups().get(info.Env(), info[0], what);
  const at::Tensor& x = tensorArg(info[1], what);
  return guarded(info.Env(), what, [&] { return wrapTensor(info.Env(), AllReduceSum::apply(x, pg)); });
}

}  // namespace

void initDifferentiableAllReduce(Napi::Env env, Napi::Object exports) {
  exports.Set("allReduceSumAutograd", Napi::Function::New(env, AllReduceSumAutograd));
}

}  // namespace tsddp
