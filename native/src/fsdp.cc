// What fully sharded data parallel (src/distributed/fsdp/) needs from libtorch beyond ops,
// as PyTorch's FSDP2 uses it from Python: freeing and re-allocating the storage of an
// unsharded parameter while autograd's graph keeps referring to the tensor
// (UntypedStorage.resize_), refilling it without bumping its version counter
// (autograd._unsafe_preserve_version_counter), and a callback at the end of the current
// backward (Variable._execution_engine.queue_callback). The callback runs JavaScript, so
// only a CPU backward (run on the JS thread) can queue one (architecture §4).
#include "common.h"

#include <ATen/native/Resize.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/engine.h>

#include <thread>

namespace tsddp {
namespace {

Napi::FunctionReference* callback = new Napi::FunctionReference();  // never freed: see autograd.cc
napi_env callbackEnv = nullptr;
std::thread::id jsThread;

const at::Tensor& tensorAt(const Napi::CallbackInfo& info, size_t i, const char* what) {
  return slots().get(info.Env(), handleArg(info[i], what), what);
}

// storageResize(tensor, bytes): the tensor's storage grows or shrinks to `bytes` (0 frees it);
// its sizes and strides stay.
Napi::Value StorageResize(const Napi::CallbackInfo& info) {
  const char* what = "fsdp storage";
  const at::Tensor& t = tensorAt(info, 0, what);
  const int64_t bytes = info[1].As<Napi::Number>().Int64Value();
  return guarded(info.Env(), what, [&] {
    TORCH_CHECK(t.device().is_cpu(), "fully sharded data parallel runs on CPU tensors only for now; got ", t.device());
    TORCH_CHECK(bytes >= 0, "storage size must be >= 0");
    at::native::resize_bytes_cpu(t.storage().unsafeGetStorageImpl(), static_cast<size_t>(bytes));
    return info.Env().Undefined();
  });
}

// copyKeepingVersion(dst, src): dst.copy_(src) without grad and without counting as an
// in-place change of dst (autograd saved dst for backward; this refills the same values).
Napi::Value CopyKeepingVersion(const Napi::CallbackInfo& info) {
  const char* what = "fsdp copy";
  const at::Tensor& dst = tensorAt(info, 0, what);
  const at::Tensor& src = tensorAt(info, 1, what);
  return guarded(info.Env(), what, [&] {
    c10::AutoGradMode off(false);
    const int64_t version = dst._version();
    at::Tensor d = dst;
    d.copy_(src);
    c10::VariableVersion counter = d.unsafeGetTensorImpl()->version_counter();  // shares the count
    counter.set_version(version);
    return info.Env().Undefined();
  });
}

// setBackwardCallback(fn): fn(id) runs for queueBackwardCallback(id).
Napi::Value SetBackwardCallback(const Napi::CallbackInfo& info) {
  *callback = Napi::Persistent(info[0].As<Napi::Function>());
  callbackEnv = info.Env();
  jsThread = std::this_thread::get_id();
  return info.Env().Undefined();
}

// queueBackwardCallback(id): during a backward (from a hook), runs the callback with `id`
// when that backward has finished its graph.
Napi::Value QueueBackwardCallback(const Napi::CallbackInfo& info) {
  const int64_t id = info[0].As<Napi::Number>().Int64Value();
  return guarded(info.Env(), "queueBackwardCallback", [&] {
    torch::autograd::Engine::get_default_engine().queue_callback([id] {
      TORCH_CHECK(std::this_thread::get_id() == jsThread,
                  "a JavaScript backward callback was called off the JavaScript thread");
      Napi::Env env(callbackEnv);
      Napi::HandleScope scope(env);
      callback->Call({Napi::Number::New(env, static_cast<double>(id))});
    });
    return info.Env().Undefined();
  });
}

}  // namespace

void initFsdp(Napi::Env env, Napi::Object exports) {
  exports.Set("storageResize", Napi::Function::New(env, StorageResize));
  exports.Set("copyKeepingVersion", Napi::Function::New(env, CopyKeepingVersion));
  exports.Set("setBackwardCallback", Napi::Function::New(env, SetBackwardCallback));
  exports.Set("queueBackwardCallback", Napi::Function::New(env, QueueBackwardCallback));
}

}  // namespace tsddp
