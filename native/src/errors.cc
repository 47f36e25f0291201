// libtorch errors -> JS TorchError (a class defined in TypeScript, registered at load).
#include "common.h"

namespace tsddp {
namespace {
thread_local Napi::FunctionReference* torchErrorClass = nullptr;
}

void setTorchErrorClass(Napi::Function ctor) {
  if (torchErrorClass == nullptr) torchErrorClass = new Napi::FunctionReference();
  *torchErrorClass = Napi::Persistent(ctor);
}

void throwTorchError(Napi::Env env, const std::string& op, const std::string& message) {
  // libtorch messages can carry a long C++ context after the first lines; keep them, the
  // first line says what went wrong.
  if (torchErrorClass != nullptr && !torchErrorClass->IsEmpty()) {
    Napi::Object err = torchErrorClass->New({Napi::String::New(env, op), Napi::String::New(env, message)});
    throw Napi::Error(env, err);
  }
  throw Napi::Error::New(env, op + ": " + message);
}

}  // namespace tsddp
