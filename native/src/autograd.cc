// Autograd: backward, autograd.grad, .grad access, grad mode and autocast state.
// Grad mode and autocast are thread-local in libtorch, exactly as in PyTorch.
#include "common.h"

#include <c10/core/GradMode.h>

#include <memory>
#include <mutex>
#include <thread>
#include <vector>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>

// Declared here rather than through <ATen/autocast_mode.h>, which pulls in all of ATen;
// these signatures are stable across the supported torch versions (2.4+).
namespace at::autocast {
TORCH_API bool is_autocast_enabled(at::DeviceType device_type);
TORCH_API void set_autocast_enabled(at::DeviceType device_type, bool enabled);
TORCH_API at::ScalarType get_autocast_dtype(at::DeviceType device_type);
TORCH_API void set_autocast_dtype(at::DeviceType device_type, at::ScalarType dtype);
TORCH_API void clear_cache();
TORCH_API int increment_nesting();
TORCH_API int decrement_nesting();
}  // namespace at::autocast

namespace tsddp {
namespace {

const at::Tensor& T(const Napi::CallbackInfo& info, size_t i, const char* what) {
  return slots().get(info.Env(), handleArg(info[i], what), what);
}

std::vector<at::Tensor> tensorList(const Napi::Value& v, const char* what) {
  if (!v.IsArray()) throw Napi::TypeError::New(v.Env(), std::string(what) + ": expected an array of tensors");
  auto arr = v.As<Napi::Array>();
  std::vector<at::Tensor> out;
  out.reserve(arr.Length());
  for (uint32_t i = 0; i < arr.Length(); ++i) {
    Napi::Value x = arr.Get(i);
    if (x.IsNull() || x.IsUndefined()) out.emplace_back();
    else out.push_back(slots().get(v.Env(), handleArg(x, what), what));
  }
  return out;
}

std::optional<bool> optBool(const Napi::Value& v) {
  if (v.IsBoolean()) return v.As<Napi::Boolean>().Value();
  return std::nullopt;
}

// backward(tensors[], grads[] (null = implicit), retainGraph?, createGraph?, inputs[]?)
Napi::Value Backward(const Napi::CallbackInfo& info) {
  const char* what = "backward()";
  auto tensors = tensorList(info[0], what);
  auto grads = tensorList(info[1], what);
  auto retain = optBool(info[2]);
  bool create = optBool(info[3]).value_or(false);
  std::vector<at::Tensor> inputs;
  if (info.Length() > 4 && info[4].IsArray()) inputs = tensorList(info[4], what);
  return guarded(info.Env(), what, [&] {
    torch::autograd::backward(tensors, grads, retain, create, inputs);
    return info.Env().Undefined();
  });
}

// grad(outputs[], inputs[], gradOutputs[], retainGraph?, createGraph?, allowUnused?) -> (handle|null)[]
Napi::Value Grad(const Napi::CallbackInfo& info) {
  const char* what = "autograd.grad()";
  Napi::Env env = info.Env();
  auto outputs = tensorList(info[0], what);
  auto inputs = tensorList(info[1], what);
  auto gradOutputs = tensorList(info[2], what);
  auto retain = optBool(info[3]);
  bool create = optBool(info[4]).value_or(false);
  bool allowUnused = optBool(info[5]).value_or(false);
  return guarded(env, what, [&] {
    auto grads = torch::autograd::grad(outputs, inputs, gradOutputs, retain, create, allowUnused);
    auto arr = Napi::Array::New(env, grads.size());
    for (size_t i = 0; i < grads.size(); ++i)
      arr.Set(static_cast<uint32_t>(i), grads[i].defined() ? wrapTensor(env, grads[i]) : env.Null());
    return arr;
  });
}

// getGrad(h) -> handle | null (a new handle each call, aliasing the same tensor)
Napi::Value GetGrad(const Napi::CallbackInfo& info) {
  const at::Tensor& t = T(info, 0, "grad");
  const at::Tensor& g = t.grad();
  return g.defined() ? wrapTensor(info.Env(), g) : info.Env().Null();
}

// setGrad(h, gradHandle | null)
Napi::Value SetGrad(const Napi::CallbackInfo& info) {
  const char* what = "grad (setter)";
  const at::Tensor& t = T(info, 0, what);
  return guarded(info.Env(), what, [&] {
    if (info[1].IsNull() || info[1].IsUndefined()) t.mutable_grad().reset();
    else t.mutable_grad() = slots().get(info.Env(), handleArg(info[1], what), what);
    return info.Env().Undefined();
  });
}

Napi::Value RequiresGrad(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), T(info, 0, "requiresGrad").requires_grad());
}

Napi::Value SetRequiresGrad(const Napi::CallbackInfo& info) {
  const char* what = "requiresGrad_()";
  const at::Tensor& t = T(info, 0, what);
  bool flag = info[1].ToBoolean().Value();
  return guarded(info.Env(), what, [&] {
    const_cast<at::Tensor&>(t).requires_grad_(flag);
    return info.Env().Undefined();
  });
}

Napi::Value IsLeaf(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), T(info, 0, "isLeaf").is_leaf());
}

Napi::Value RetainGrad(const Napi::CallbackInfo& info) {
  const char* what = "retainGrad()";
  const at::Tensor& t = T(info, 0, what);
  return guarded(info.Env(), what, [&] {
    t.retain_grad();
    return info.Env().Undefined();
  });
}

Napi::Value GradFn(const Napi::CallbackInfo& info) {
  const at::Tensor& t = T(info, 0, "gradFn");
  const auto& fn = t.grad_fn();
  return fn ? Napi::String::New(info.Env(), fn->name()) : info.Env().Null();
}

Napi::Value IsGradEnabled(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), c10::GradMode::is_enabled());
}

Napi::Value SetGradEnabled(const Napi::CallbackInfo& info) {
  c10::GradMode::set_enabled(info[0].ToBoolean().Value());
  return info.Env().Undefined();
}

at::DeviceType deviceTypeArg(const Napi::Value& v) {
  std::string s = v.As<Napi::String>().Utf8Value();
  if (s == "cpu") return at::kCPU;
  if (s == "cuda") return at::kCUDA;
  throw Napi::TypeError::New(v.Env(), "autocast: deviceType must be 'cpu' or 'cuda', got '" + s + "'");
}

// getAutocast(deviceType) -> [enabled, dtypeCode]
Napi::Value GetAutocast(const Napi::CallbackInfo& info) {
  auto dt = deviceTypeArg(info[0]);
  auto out = Napi::Array::New(info.Env(), 2);
  out.Set(0u, Napi::Boolean::New(info.Env(), at::autocast::is_autocast_enabled(dt)));
  out.Set(1u, Napi::Number::New(info.Env(), static_cast<int>(at::autocast::get_autocast_dtype(dt))));
  return out;
}

// setAutocast(deviceType, enabled, dtypeCode); nesting is tracked so that leaving the
// outermost autocast region clears the cast cache, as torch.autocast.__exit__ does.
Napi::Value SetAutocast(const Napi::CallbackInfo& info) {
  auto dt = deviceTypeArg(info[0]);
  at::autocast::set_autocast_enabled(dt, info[1].ToBoolean().Value());
  at::autocast::set_autocast_dtype(dt, static_cast<at::ScalarType>(info[2].As<Napi::Number>().Int32Value()));
  return info.Env().Undefined();
}

Napi::Value AutocastEnter(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), at::autocast::increment_nesting());
}

Napi::Value AutocastExit(const Napi::CallbackInfo& info) {
  int depth = at::autocast::decrement_nesting();
  if (depth == 0) at::autocast::clear_cache();
  return Napi::Number::New(info.Env(), depth);
}


// Tensor hooks written in JavaScript (Tensor.registerHook). The hook is a C++ lambda that
// calls one JS dispatcher with (hook id, gradient handle). JavaScript may only run on the
// JS thread: that holds for CPU graphs, whose backward runs on the calling thread; CUDA
// tensors are refused (their backward runs on the engine's device threads), and a hook
// called off the JS thread fails the backward instead of touching V8 (architecture §4).
// Heap objects never freed: hooks may be destroyed with their tensors during exit, after
// static objects are gone.
Napi::FunctionReference* hookDispatcher = new Napi::FunctionReference();
napi_env hookEnv = nullptr;
std::thread::id jsThread;
// Ids of hooks whose tensor is gone: the JS side forgets their functions (drainDeadHooks).
std::mutex* deadHooksMutex = new std::mutex();
std::vector<int64_t>* deadHooks = new std::vector<int64_t>();

// Reports its hook dead when the last copy of the hook (held by the tensor) goes.
struct HookToken {
  explicit HookToken(int64_t i) : id(i) {}
  HookToken(const HookToken&) = delete;
  HookToken& operator=(const HookToken&) = delete;
  const int64_t id;
  ~HookToken() {
    std::lock_guard<std::mutex> lock(*deadHooksMutex);
    deadHooks->push_back(id);
  }
};

// setHookDispatcher(fn): fn(hookId, gradHandle) -> handle of the replacement gradient, or -1.
Napi::Value SetHookDispatcher(const Napi::CallbackInfo& info) {
  *hookDispatcher = Napi::Persistent(info[0].As<Napi::Function>());
  hookEnv = info.Env();
  jsThread = std::this_thread::get_id();
  return info.Env().Undefined();
}

// registerHook(handle, hookId) -> position (for removeHook)
Napi::Value RegisterHook(const Napi::CallbackInfo& info) {
  const char* what = "registerHook()";
  at::Tensor t = T(info, 0, what);
  const int64_t id = info[1].As<Napi::Number>().Int64Value();
  return guarded(info.Env(), what, [&] {
    TORCH_CHECK(t.requires_grad(), "cannot register a hook on a tensor that doesn't require gradient");
    TORCH_CHECK(t.device().is_cpu(),
                "hooks written in JavaScript run on CPU tensors only (a CUDA backward runs its hooks on "
                "libtorch's device threads, where JavaScript cannot run); got a tensor on ",
                t.device());
    auto token = std::make_shared<HookToken>(id);
    unsigned pos = t.register_hook([token](const at::Tensor& grad) -> at::Tensor {
      TORCH_CHECK(std::this_thread::get_id() == jsThread,
                  "a JavaScript tensor hook was called off the JavaScript thread");
      Napi::Env env(hookEnv);
      Napi::HandleScope scope(env);
      Napi::Value r = hookDispatcher->Call({Napi::Number::New(env, static_cast<double>(token->id)), wrapTensor(env, grad)});
      const int32_t h = r.IsNumber() ? r.As<Napi::Number>().Int32Value() : -1;
      if (h < 0) return at::Tensor();
      const at::Tensor* out = slots().tryGet(h);
      TORCH_CHECK(out != nullptr, "the hook returned a disposed tensor");
      return *out;
    });
    return Napi::Number::New(info.Env(), pos);
  });
}

// removeHook(handle, position)
Napi::Value RemoveHook(const Napi::CallbackInfo& info) {
  const char* what = "RemovableHandle.remove()";
  at::Tensor t = T(info, 0, what);
  const unsigned pos = info[1].As<Napi::Number>().Uint32Value();
  return guarded(info.Env(), what, [&] {
    t.remove_hook(pos);
    return info.Env().Undefined();
  });
}

// drainDeadHooks() -> ids of hooks whose tensor was freed since the last call
Napi::Value DrainDeadHooks(const Napi::CallbackInfo& info) {
  std::vector<int64_t> ids;
  {
    std::lock_guard<std::mutex> lock(*deadHooksMutex);
    ids.swap(*deadHooks);
  }
  auto out = Napi::Array::New(info.Env(), ids.size());
  for (size_t i = 0; i < ids.size(); i++) out.Set(static_cast<uint32_t>(i), static_cast<double>(ids[i]));
  return out;
}

}  // namespace

void initAutograd(Napi::Env env, Napi::Object exports) {
  exports.Set("backward", Napi::Function::New(env, Backward));
  exports.Set("grad", Napi::Function::New(env, Grad));
  exports.Set("getGrad", Napi::Function::New(env, GetGrad));
  exports.Set("setGrad", Napi::Function::New(env, SetGrad));
  exports.Set("requiresGrad", Napi::Function::New(env, RequiresGrad));
  exports.Set("setRequiresGrad", Napi::Function::New(env, SetRequiresGrad));
  exports.Set("isLeaf", Napi::Function::New(env, IsLeaf));
  exports.Set("retainGrad", Napi::Function::New(env, RetainGrad));
  exports.Set("gradFn", Napi::Function::New(env, GradFn));
  exports.Set("setHookDispatcher", Napi::Function::New(env, SetHookDispatcher));
  exports.Set("registerHook", Napi::Function::New(env, RegisterHook));
  exports.Set("removeHook", Napi::Function::New(env, RemoveHook));
  exports.Set("drainDeadHooks", Napi::Function::New(env, DrainDeadHooks));
  exports.Set("isGradEnabled", Napi::Function::New(env, IsGradEnabled));
  exports.Set("setGradEnabled", Napi::Function::New(env, SetGradEnabled));
  exports.Set("getAutocast", Napi::Function::New(env, GetAutocast));
  exports.Set("setAutocast", Napi::Function::New(env, SetAutocast));
  exports.Set("autocastEnter", Napi::Function::New(env, AutocastEnter));
  exports.Set("autocastExit", Napi::Function::New(env, AutocastExit));
}

}  // namespace tsddp
