// Shared pieces of the addon: the tensor slot table, error translation and small
// conversions. Kept narrow on purpose: every translation unit includes this file.
#pragma once

#include <napi.h>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tsddp {

// Tensors live in a per-thread slot table; JavaScript holds small integer handles.
// Creating a JS object per result costs ~3x more than PyTorch's whole op (architecture §4),
// so the JS Tensor is a plain class around the handle. Ops run on the calling JS
// thread, and each JS thread (main or worker) has its own table.
class Slots {
 public:
  int32_t put(at::Tensor t);
  // Throws a JS TypeError naming `what` when the handle is not a live tensor.
  const at::Tensor& get(Napi::Env env, int32_t handle, const char* what) const;
  // nullptr when the handle is not a live tensor.
  const at::Tensor* tryGet(int32_t h) const {
    if (h < 0 || static_cast<size_t>(h) >= table_.size() || !table_[h].defined()) return nullptr;
    return &table_[h];
  }
  void release(int32_t handle);
  size_t live() const { return live_; }
  // Sum of the distinct storages held by live handles (views are counted once).
  int64_t bytes() const;
  template <typename F>
  void forEach(F&& f) const {
    for (const auto& t : table_)
      if (t.defined()) f(t);
  }

 private:
  std::vector<at::Tensor> table_;
  std::vector<int32_t> free_;
  size_t live_ = 0;
};

Slots& slots();

// The JS class used for errors coming from libtorch (set once from JS at load time).
void setTorchErrorClass(Napi::Function ctor);
[[noreturn]] void throwTorchError(Napi::Env env, const std::string& op, const std::string& message);

// Wraps a native entry point: c10::Error and std::exception become JS TorchErrors
// naming `op`; Napi::Error passes through untouched. Nothing aborts the process.
template <typename F>
auto guarded(Napi::Env env, const std::string& op, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Napi::Error&) {
    throw;
  } catch (const c10::Error& e) {
    throwTorchError(env, op, e.what_without_backtrace());
  } catch (const std::exception& e) {
    throwTorchError(env, op, e.what());
  }
}

// Handle returned to JS for a new tensor (reports memory to V8 from time to time).
Napi::Value wrapTensor(Napi::Env env, at::Tensor t);
int32_t handleArg(const Napi::Value& v, const char* what);
std::vector<int64_t> intListArg(const Napi::Value& v, const char* what);
// A c10::Scalar as JS: a boolean, a number (uint64 read unsigned), or [re, im] for a complex.
Napi::Value scalarValue(Napi::Env env, const c10::Scalar& s);

// Generator argument: a handle from random.cc's table.
at::Generator generatorFromHandle(Napi::Env env, const Napi::Value& v, const char* what);

void initTensor(Napi::Env env, Napi::Object exports);
void initDispatch(Napi::Env env, Napi::Object exports);
void initAutograd(Napi::Env env, Napi::Object exports);
void initCheckpoint(Napi::Env env, Napi::Object exports);
void initFsdp(Napi::Env env, Napi::Object exports);
void initRandom(Napi::Env env, Napi::Object exports);
void initProfiler(Napi::Env env, Napi::Object exports);

}  // namespace tsddp
