// Module registration: each file contributes its functions to the exports object.
#include "distributed.h"

namespace tsddp {
namespace {
Napi::Value SetErrorClass(const Napi::CallbackInfo& info) {
  setTorchErrorClass(info[0].As<Napi::Function>());
  return info.Env().Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("setErrorClass", Napi::Function::New(env, SetErrorClass));
  initTensor(env, exports);
  initDispatch(env, exports);
  initAutograd(env, exports);
  initRandom(env, exports);
  initProcessGroup(env, exports);
  initReducer(env, exports);
  return exports;
}
}  // namespace
}  // namespace tsddp

static Napi::Object InitAddon(Napi::Env env, Napi::Object exports) { return tsddp::Init(env, exports); }
NODE_API_MODULE(tsddp, InitAddon)
