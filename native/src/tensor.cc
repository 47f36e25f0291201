// Tensor handles: the slot table, creation from JS memory, data out, metadata and
// memory accounting.
#include "common.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/ScalarType.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_set>

namespace tsddp {

// ---------------------------------------------------------------------------
// Slot table

int32_t Slots::put(at::Tensor t) {
  ++live_;
  if (!free_.empty()) {
    int32_t h = free_.back();
    free_.pop_back();
    table_[h] = std::move(t);
    return h;
  }
  table_.push_back(std::move(t));
  return static_cast<int32_t>(table_.size() - 1);
}

const at::Tensor& Slots::get(Napi::Env env, int32_t h, const char* what) const {
  if (h < 0 || static_cast<size_t>(h) >= table_.size() || !table_[h].defined()) {
    throw Napi::TypeError::New(env, std::string(what) + ": tensor was disposed (used after dispose())");
  }
  return table_[h];
}

void Slots::release(int32_t h) {
  if (h < 0 || static_cast<size_t>(h) >= table_.size() || !table_[h].defined()) return;
  table_[h] = at::Tensor();
  free_.push_back(h);
  --live_;
}

int64_t Slots::bytes() const {
  std::unordered_set<const void*> seen;
  int64_t total = 0;
  for (const auto& t : table_) {
    if (!t.defined() || !t.has_storage()) continue;
    const void* key = t.storage().unsafeGetStorageImpl();
    if (seen.insert(key).second) total += static_cast<int64_t>(t.storage().nbytes());
  }
  return total;
}

Slots& slots() {
  thread_local Slots table;
  return table;
}

// ---------------------------------------------------------------------------
// Memory reported to V8. V8 cannot see tensor memory, so its GC would not hurry to
// run finalizers. Recomputing the total costs O(live), so it is done only after
// max(kReportEvery, live) handle changes: amortised O(1) per op even when a scope
// holds hundreds of thousands of tensors.

namespace {
constexpr int kReportEvery = 1024;
thread_local int64_t changesSinceReport = 0;
thread_local int64_t reportedBytes = 0;

int64_t cpuBytes() {
  std::unordered_set<const void*> seen;
  int64_t total = 0;
  slots().forEach([&](const at::Tensor& t) {
    if (!t.has_storage() || !t.is_cpu()) return;
    const void* key = t.storage().unsafeGetStorageImpl();
    if (seen.insert(key).second) total += static_cast<int64_t>(t.storage().nbytes());
  });
  return total;
}

void reportMemory(Napi::Env env) {
  int64_t now = cpuBytes();
  Napi::MemoryManagement::AdjustExternalMemory(env, now - reportedBytes);
  reportedBytes = now;
  changesSinceReport = 0;
}

// Buffers aliased by fromBuffer() are kept alive with a napi_ref. libtorch may free the
// storage on any thread, but a reference may only be deleted on its JS thread, so the
// deleter queues it and the JS thread drains the queue on its next tensor creation.
struct PendingRefs {
  std::mutex mutex;
  std::vector<napi_ref> refs;
  std::atomic<bool> any{false};
};

PendingRefs& pendingRefs() {
  // Per JS thread; deliberately leaked so a late deleter never touches a dead object.
  thread_local PendingRefs* p = new PendingRefs();
  return *p;
}

void drainPendingRefs(Napi::Env env) {
  auto& p = pendingRefs();
  if (!p.any.load(std::memory_order_acquire)) return;
  std::vector<napi_ref> refs;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    refs.swap(p.refs);
    p.any.store(false, std::memory_order_release);
  }
  for (napi_ref r : refs) napi_delete_reference(env, r);
}
}  // namespace

Napi::Value wrapTensor(Napi::Env env, at::Tensor t) {
  drainPendingRefs(env);
  if (++changesSinceReport >= kReportEvery && changesSinceReport >= static_cast<int64_t>(slots().live()))
    reportMemory(env);
  return Napi::Number::New(env, slots().put(std::move(t)));
}

int32_t handleArg(const Napi::Value& v, const char* what) {
  if (!v.IsNumber()) throw Napi::TypeError::New(v.Env(), std::string(what) + ": expected a Tensor");
  return v.As<Napi::Number>().Int32Value();
}

std::vector<int64_t> intListArg(const Napi::Value& v, const char* what) {
  if (!v.IsArray()) throw Napi::TypeError::New(v.Env(), std::string(what) + ": expected an array of integers");
  auto arr = v.As<Napi::Array>();
  std::vector<int64_t> out(arr.Length());
  for (uint32_t i = 0; i < arr.Length(); ++i) {
    Napi::Value e = arr.Get(i);
    if (!e.IsNumber()) throw Napi::TypeError::New(v.Env(), std::string(what) + ": expected an array of integers");
    out[i] = e.As<Napi::Number>().Int64Value();
  }
  return out;
}

Napi::Value scalarValue(Napi::Env env, const c10::Scalar& s) {
  if (s.isBoolean()) return Napi::Boolean::New(env, s.toBool());
  if (s.isComplex()) {
    auto z = s.toComplexDouble();
    auto out = Napi::Array::New(env, 2);
    out.Set(0u, Napi::Number::New(env, z.real()));
    out.Set(1u, Napi::Number::New(env, z.imag()));
    return out;
  }
  // A uint64 past int64's range is held unsigned: toLong() would refuse it.
  if (s.type() == at::kUInt64) return Napi::Number::New(env, static_cast<double>(s.toUInt64()));
  if (s.isIntegral(false)) return Napi::Number::New(env, static_cast<double>(s.toLong()));
  return Napi::Number::New(env, s.toDouble());
}

namespace {

const at::Tensor& T(const Napi::CallbackInfo& info, size_t i, const char* what) {
  return slots().get(info.Env(), handleArg(info[i], what), what);
}

at::ScalarType dtypeArg(const Napi::Value& v, const char* what) {
  if (!v.IsNumber()) throw Napi::TypeError::New(v.Env(), std::string(what) + ": expected a dtype");
  int code = v.As<Napi::Number>().Int32Value();
  if (code < 0 || code >= static_cast<int>(at::ScalarType::NumOptions))
    throw Napi::TypeError::New(v.Env(), std::string(what) + ": unknown dtype code " + std::to_string(code));
  return static_cast<at::ScalarType>(code);
}

// The bytes of a JS TypedArray / ArrayBuffer / Buffer argument.
struct JsBytes {
  void* data;
  size_t length;
  Napi::Object owner;  // the ArrayBuffer that owns the memory
};

JsBytes bytesArg(const Napi::Value& v, const char* what) {
  if (v.IsTypedArray()) {
    auto ta = v.As<Napi::TypedArray>();
    auto ab = ta.ArrayBuffer();
    return {static_cast<uint8_t*>(ab.Data()) + ta.ByteOffset(), ta.ByteLength(), ab};
  }
  if (v.IsArrayBuffer()) {
    auto ab = v.As<Napi::ArrayBuffer>();
    return {ab.Data(), ab.ByteLength(), ab};
  }
  if (v.IsDataView()) {
    auto dv = v.As<Napi::DataView>();
    auto ab = dv.ArrayBuffer();
    return {static_cast<uint8_t*>(ab.Data()) + dv.ByteOffset(), dv.ByteLength(), ab};
  }
  throw Napi::TypeError::New(v.Env(), std::string(what) + ": expected a TypedArray or ArrayBuffer");
}

int64_t numelOf(const std::vector<int64_t>& shape, Napi::Env env, const char* what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Napi::TypeError::New(env, std::string(what) + ": negative dimension in shape");
    if (d != 0 && n > INT64_MAX / d) throw Napi::TypeError::New(env, std::string(what) + ": shape too large");
    n *= d;
  }
  return n;
}

// fromTyped(bytes, shape, srcDtype, dstDtype, device?) -> handle. Copies.
Napi::Value FromTyped(const Napi::CallbackInfo& info) {
  const char* what = "tensor()";
  Napi::Env env = info.Env();
  JsBytes b = bytesArg(info[0], what);
  auto shape = intListArg(info[1], what);
  auto src = dtypeArg(info[2], what);
  auto dst = dtypeArg(info[3], what);
  int64_t numel = numelOf(shape, env, what);
  size_t need = static_cast<size_t>(numel) * c10::elementSize(src);
  if (b.length != need)
    throw Napi::TypeError::New(env, std::string(what) + ": data has " + std::to_string(b.length) +
                                        " bytes, shape needs " + std::to_string(need));
  return guarded(env, what, [&] {
    at::Tensor t = at::empty(shape, at::TensorOptions().dtype(src));
    if (need) std::memcpy(t.data_ptr(), b.data, need);
    if (dst != src) t = t.to(dst);
    if (info.Length() > 4 && info[4].IsString()) {
      c10::Device dev(info[4].As<Napi::String>().Utf8Value());
      if (!dev.is_cpu()) t = t.to(dev);
    }
    return wrapTensor(env, std::move(t));
  });
}

// fromBuffer(bytes, shape, dtype) -> handle aliasing the JS memory (kept alive).
Napi::Value FromBuffer(const Napi::CallbackInfo& info) {
  const char* what = "fromBuffer()";
  Napi::Env env = info.Env();
  JsBytes b = bytesArg(info[0], what);
  auto shape = intListArg(info[1], what);
  auto dtype = dtypeArg(info[2], what);
  size_t need = static_cast<size_t>(numelOf(shape, env, what)) * c10::elementSize(dtype);
  if (b.length < need)
    throw Napi::TypeError::New(env, std::string(what) + ": buffer has " + std::to_string(b.length) +
                                        " bytes, shape needs " + std::to_string(need));
  if (reinterpret_cast<uintptr_t>(b.data) % c10::elementSize(dtype) != 0)
    throw Napi::TypeError::New(env, std::string(what) + ": buffer is not aligned to the dtype's size");
  napi_ref ref;
  NAPI_THROW_IF_FAILED(env, napi_create_reference(env, b.owner, 1, &ref), Napi::Value());
  PendingRefs* pending = &pendingRefs();
  return guarded(env, what, [&] {
    at::Tensor t = at::from_blob(
        b.data, shape,
        [pending, ref](void*) {
          std::lock_guard<std::mutex> lock(pending->mutex);
          pending->refs.push_back(ref);
          pending->any.store(true, std::memory_order_release);
        },
        at::TensorOptions().dtype(dtype));
    return wrapTensor(env, std::move(t));
  });
}

// Host copy of a tensor's data, contiguous. float16/bfloat16 come out as float32 and
// bool as uint8, since JS has no typed arrays for them; float8 keeps its bits (the JS
// side casts with to() where it wants values). A lazy conjugate or negation (x.conj(),
// x.conj().imag) is applied, as contiguous() alone would copy the unconjugated memory.
at::Tensor hostCopy(const at::Tensor& t, bool raw = false) {
  at::Tensor h = t.detach().resolve_conj().resolve_neg();
  if (!raw && (h.scalar_type() == at::kHalf || h.scalar_type() == at::kBFloat16)) h = h.to(at::kFloat);
  if (!h.is_cpu()) h = h.to(at::kCPU);
  return h.contiguous();
}

Napi::Value bytesOut(Napi::Env env, const at::Tensor& h) {
  size_t n = h.nbytes();
  auto ab = Napi::ArrayBuffer::New(env, n);
  if (n) std::memcpy(ab.Data(), h.const_data_ptr(), n);
  auto out = Napi::Array::New(env, 2);
  out.Set(0u, ab);
  out.Set(1u, Napi::Number::New(env, static_cast<int>(h.scalar_type())));
  return out;
}

// toBytes(h, raw?) -> [ArrayBuffer, dtypeCode]. raw keeps float16/bfloat16 bits as they
// are (for writing files); otherwise they are widened to float32 for JS.
Napi::Value ToBytes(const Napi::CallbackInfo& info) {
  const char* what = "toTypedArray()";
  const at::Tensor& t = T(info, 0, what);
  bool raw = info.Length() > 1 && info[1].ToBoolean().Value();
  return guarded(info.Env(), what, [&] { return bytesOut(info.Env(), hostCopy(t, raw)); });
}

// toBytesAsync(h) -> Promise<[ArrayBuffer, dtypeCode]>: the device-to-host copy runs
// off the JS thread.
class ToBytesWorker : public Napi::AsyncWorker {
 public:
  ToBytesWorker(Napi::Env env, at::Tensor t)
      : Napi::AsyncWorker(env), t_(std::move(t)), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override {
    try {
      host_ = hostCopy(t_);
    } catch (const c10::Error& e) {
      SetError(e.what_without_backtrace());
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  void OnOK() override { deferred_.Resolve(bytesOut(Env(), host_)); }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  at::Tensor t_, host_;
  Napi::Promise::Deferred deferred_;
};

Napi::Value ToBytesAsync(const Napi::CallbackInfo& info) {
  auto* w = new ToBytesWorker(info.Env(), T(info, 0, "data()"));
  auto p = w->promise();
  w->Queue();
  return p;
}

Napi::Value Item(const Napi::CallbackInfo& info) {
  const char* what = "item()";
  const at::Tensor& t = T(info, 0, what);
  return guarded(info.Env(), what, [&]() -> Napi::Value { return scalarValue(info.Env(), t.item()); });
}

Napi::Value Dispose(const Napi::CallbackInfo& info) {
  slots().release(info[0].As<Napi::Number>().Int32Value());
  return info.Env().Undefined();
}

// disposeMany(handles: Int32Array | number[], count)
Napi::Value DisposeMany(const Napi::CallbackInfo& info) {
  auto arr = info[0].As<Napi::Int32Array>();
  size_t n = info.Length() > 1 ? info[1].As<Napi::Number>().Uint32Value() : arr.ElementLength();
  for (size_t i = 0; i < n; ++i) slots().release(arr[i]);
  return info.Env().Undefined();
}

Napi::Value Shape(const Napi::CallbackInfo& info) {
  const at::Tensor& t = T(info, 0, "shape");
  auto sizes = t.sizes();
  auto out = Napi::Array::New(info.Env(), sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) out.Set(static_cast<uint32_t>(i), Napi::Number::New(info.Env(), sizes[i]));
  return out;
}

Napi::Value Strides(const Napi::CallbackInfo& info) {
  const at::Tensor& t = T(info, 0, "strides");
  return guarded(info.Env(), "strides", [&] {
    auto st = t.strides();
    auto out = Napi::Array::New(info.Env(), st.size());
    for (size_t i = 0; i < st.size(); ++i) out.Set(static_cast<uint32_t>(i), Napi::Number::New(info.Env(), st[i]));
    return out;
  });
}

Napi::Value Dim(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(T(info, 0, "dim").dim()));
}
Napi::Value Numel(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(T(info, 0, "numel").numel()));
}
Napi::Value Dtype(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<int>(T(info, 0, "dtype").scalar_type()));
}
Napi::Value Device(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), T(info, 0, "device").device().str());
}
Napi::Value IsContiguous(const Napi::CallbackInfo& info) {
  const at::Tensor& t = T(info, 0, "isContiguous");
  auto fmt = info.Length() > 1 && info[1].IsNumber() ? static_cast<at::MemoryFormat>(info[1].As<Napi::Number>().Int32Value())
                                                     : at::MemoryFormat::Contiguous;
  return Napi::Boolean::New(info.Env(), t.is_contiguous(fmt));
}
Napi::Value SameStorage(const Napi::CallbackInfo& info) {
  const at::Tensor& a = T(info, 0, "sameStorage");
  const at::Tensor& b = T(info, 1, "sameStorage");
  return Napi::Boolean::New(info.Env(), a.has_storage() && b.has_storage() && a.storage().is_alias_of(b.storage()));
}

Napi::Value Memory(const Napi::CallbackInfo& info) {
  auto out = Napi::Object::New(info.Env());
  out.Set("tensors", Napi::Number::New(info.Env(), static_cast<double>(slots().live())));
  out.Set("bytes", Napi::Number::New(info.Env(), static_cast<double>(slots().bytes())));
  reportMemory(info.Env());
  return out;
}

}  // namespace

void initTensor(Napi::Env env, Napi::Object exports) {
  exports.Set("fromTyped", Napi::Function::New(env, FromTyped));
  exports.Set("fromBuffer", Napi::Function::New(env, FromBuffer));
  exports.Set("toBytes", Napi::Function::New(env, ToBytes));
  exports.Set("toBytesAsync", Napi::Function::New(env, ToBytesAsync));
  exports.Set("item", Napi::Function::New(env, Item));
  exports.Set("dispose", Napi::Function::New(env, Dispose));
  exports.Set("disposeMany", Napi::Function::New(env, DisposeMany));
  exports.Set("shape", Napi::Function::New(env, Shape));
  exports.Set("strides", Napi::Function::New(env, Strides));
  exports.Set("dim", Napi::Function::New(env, Dim));
  exports.Set("numel", Napi::Function::New(env, Numel));
  exports.Set("dtype", Napi::Function::New(env, Dtype));
  exports.Set("device", Napi::Function::New(env, Device));
  exports.Set("isContiguous", Napi::Function::New(env, IsContiguous));
  exports.Set("sameStorage", Napi::Function::New(env, SameStorage));
  exports.Set("memory", Napi::Function::New(env, Memory));
}

}  // namespace tsddp
