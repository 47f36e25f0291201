// torch.profiler's CPU op events for the JS side (libtorch's Kineto profiler): start,
// then stop with every aten op's name, thread, start and duration. The same machinery
// as torch.profiler.profile(activities=[CPU]), so the two sides' numbers compare.
#include "common.h"

#include <torch/csrc/autograd/profiler_kineto.h>

namespace tsddp {
namespace {

namespace prof = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

Napi::Value ProfilerStart(const Napi::CallbackInfo& info) {
  bool shapes = info.Length() > 0 && info[0].ToBoolean().Value();
  return guarded(info.Env(), "profiler.start", [&] {
    ProfilerConfig config(ProfilerState::KINETO, /*report_input_shapes=*/shapes, /*profile_memory=*/false);
    prof::prepareProfiler(config, {ActivityType::CPU});
    prof::enableProfiler(config, {ActivityType::CPU});
    return info.Env().Undefined();
  });
}

// -> [{ name, thread, startUs, durationUs, shapes? }], in start order.
Napi::Value ProfilerStop(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, "profiler.stop", [&]() -> Napi::Value {
    auto result = prof::disableProfiler();
    const auto& events = result->events();
    auto out = Napi::Array::New(env, events.size());
    uint32_t i = 0;
    for (const auto& e : events) {
      auto o = Napi::Object::New(env);
      o.Set("name", e.name());
      o.Set("thread", static_cast<double>(e.startThreadId()));
      o.Set("startUs", static_cast<double>(e.startNs()) / 1e3);
      o.Set("durationUs", static_cast<double>(e.durationNs()) / 1e3);
      if (e.hasShapes()) {
        std::string s;
        for (const auto& shape : e.shapes()) {
          s += "[";
          for (size_t k = 0; k < shape.size(); ++k) s += (k ? "," : "") + std::to_string(shape[k]);
          s += "]";
        }
        o.Set("shapes", s);
      }
      out.Set(i++, o);
    }
    return out;
  });
}

}  // namespace

void initProfiler(Napi::Env env, Napi::Object exports) {
  exports.Set("profilerStart", Napi::Function::New(env, ProfilerStart));
  exports.Set("profilerStop", Napi::Function::New(env, ProfilerStop));
}

}  // namespace tsddp
