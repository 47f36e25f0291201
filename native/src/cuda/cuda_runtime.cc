// torch.cuda's runtime calls for the JS side (CUDA builds only; see cuda.h): the current
// device, synchronize, the caching allocator's statistics, and events for timing.
#include <c10/core/Event.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <optional>

#include "cuda.h"

namespace tsddp {
namespace {

c10::DeviceIndex deviceArg(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (info.Length() <= i || info[i].IsUndefined() || info[i].IsNull()) return c10::cuda::current_device();
  int d = info[i].IsNumber() ? info[i].As<Napi::Number>().Int32Value() : -1;
  if (d < 0 || d >= c10::cuda::device_count())
    throw Napi::RangeError::New(info.Env(), std::string(what) + ": no CUDA device " + std::to_string(d) + " (" +
                                                std::to_string(c10::cuda::device_count()) + " visible)");
  return static_cast<c10::DeviceIndex>(d);
}

Napi::Value SetDevice(const Napi::CallbackInfo& info) {
  const char* what = "cuda.setDevice";
  return guarded(info.Env(), what, [&] {
    c10::cuda::set_device(deviceArg(info, 0, what));
    return info.Env().Undefined();
  });
}

Napi::Value CurrentDevice(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), "cuda.currentDevice",
                 [&] { return Napi::Number::New(info.Env(), c10::cuda::current_device()); });
}

Napi::Value Synchronize(const Napi::CallbackInfo& info) {
  const char* what = "cuda.synchronize";
  return guarded(info.Env(), what, [&] {
    c10::cuda::CUDAGuard guard(deviceArg(info, 0, what));
    c10::cuda::device_synchronize();
    return info.Env().Undefined();
  });
}

// {allocated, maxAllocated, reserved, maxReserved} in bytes, as torch.cuda.memory_stats'
// "allocated_bytes.all.current/peak" and "reserved_bytes.all.current/peak".
Napi::Value MemoryStats(const Napi::CallbackInfo& info) {
  const char* what = "cuda.memoryStats";
  return guarded(info.Env(), what, [&] {
    auto s = c10::cuda::CUDACachingAllocator::getDeviceStats(deviceArg(info, 0, what));
    constexpr auto all = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    auto o = Napi::Object::New(info.Env());
    o.Set("allocated", static_cast<double>(s.allocated_bytes[all].current));
    o.Set("maxAllocated", static_cast<double>(s.allocated_bytes[all].peak));
    o.Set("reserved", static_cast<double>(s.reserved_bytes[all].current));
    o.Set("maxReserved", static_cast<double>(s.reserved_bytes[all].peak));
    return o;
  });
}

Napi::Value ResetPeakMemoryStats(const Napi::CallbackInfo& info) {
  const char* what = "cuda.resetPeakMemoryStats";
  return guarded(info.Env(), what, [&] {
    c10::cuda::CUDACachingAllocator::resetPeakStats(deviceArg(info, 0, what));
    return info.Env().Undefined();
  });
}

Napi::Value EmptyCache(const Napi::CallbackInfo& info) {
  return guarded(info.Env(), "cuda.emptyCache", [&] {
    c10::cuda::CUDACachingAllocator::emptyCache();
    return info.Env().Undefined();
  });
}

// ---- events: a per-thread table, like the other handles --------------------------
std::vector<std::optional<c10::Event>>& events() {
  thread_local std::vector<std::optional<c10::Event>> table;
  return table;
}

c10::Event& eventArg(const Napi::Value& v, const char* what) {
  auto& table = events();
  int32_t h = v.IsNumber() ? v.As<Napi::Number>().Int32Value() : -1;
  if (h < 0 || static_cast<size_t>(h) >= table.size() || !table[h])
    throw Napi::TypeError::New(v.Env(), std::string(what) + ": invalid or destroyed cuda.Event");
  return *table[h];
}

// cudaEventNew(enableTiming) -> handle. torch.cuda.Event's default has timing off.
Napi::Value EventNew(const Napi::CallbackInfo& info) {
  bool timing = info.Length() > 0 && info[0].ToBoolean().Value();
  auto& table = events();
  table.emplace_back(std::in_place, c10::DeviceType::CUDA,
                     timing ? c10::EventFlag::BACKEND_DEFAULT : c10::EventFlag::PYTORCH_DEFAULT);
  return Napi::Number::New(info.Env(), static_cast<double>(table.size() - 1));
}

// Records on the current stream of the current device, as Event.record() does.
Napi::Value EventRecord(const Napi::CallbackInfo& info) {
  const char* what = "cuda.Event.record";
  auto& e = eventArg(info[0], what);
  return guarded(info.Env(), what, [&] {
    e.record(c10::cuda::getCurrentCUDAStream());
    return info.Env().Undefined();
  });
}

Napi::Value EventSynchronize(const Napi::CallbackInfo& info) {
  const char* what = "cuda.Event.synchronize";
  auto& e = eventArg(info[0], what);
  return guarded(info.Env(), what, [&] {
    e.synchronize();
    return info.Env().Undefined();
  });
}

Napi::Value EventQuery(const Napi::CallbackInfo& info) {
  const char* what = "cuda.Event.query";
  auto& e = eventArg(info[0], what);
  return guarded(info.Env(), what, [&] { return Napi::Boolean::New(info.Env(), e.query()); });
}

// Milliseconds from `start` to `end`, both recorded and completed (torch's elapsed_time).
Napi::Value EventElapsedTime(const Napi::CallbackInfo& info) {
  const char* what = "cuda.Event.elapsedTime";
  auto& start = eventArg(info[0], what);
  auto& end = eventArg(info[1], what);
  return guarded(info.Env(), what, [&] { return Napi::Number::New(info.Env(), start.elapsedTime(end)); });
}

Napi::Value EventDestroy(const Napi::CallbackInfo& info) {
  auto& table = events();
  int32_t h = info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : -1;
  if (h >= 0 && static_cast<size_t>(h) < table.size()) table[h].reset();
  return info.Env().Undefined();
}

}  // namespace

void initCuda(Napi::Env env, Napi::Object exports) {
  exports.Set("cudaSetDevice", Napi::Function::New(env, SetDevice));
  exports.Set("cudaCurrentDevice", Napi::Function::New(env, CurrentDevice));
  exports.Set("cudaSynchronize", Napi::Function::New(env, Synchronize));
  exports.Set("cudaMemoryStats", Napi::Function::New(env, MemoryStats));
  exports.Set("cudaResetPeakMemoryStats", Napi::Function::New(env, ResetPeakMemoryStats));
  exports.Set("cudaEmptyCache", Napi::Function::New(env, EmptyCache));
  exports.Set("cudaEventNew", Napi::Function::New(env, EventNew));
  exports.Set("cudaEventRecord", Napi::Function::New(env, EventRecord));
  exports.Set("cudaEventSynchronize", Napi::Function::New(env, EventSynchronize));
  exports.Set("cudaEventQuery", Napi::Function::New(env, EventQuery));
  exports.Set("cudaEventElapsedTime", Napi::Function::New(env, EventElapsedTime));
  exports.Set("cudaEventDestroy", Napi::Function::New(env, EventDestroy));
}

}  // namespace tsddp
