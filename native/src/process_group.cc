// Stores (TCPStore, FileStore), process groups (Gloo; NCCL on CUDA builds) and
// collectives. Collectives return promises settled from c10d's threads through one
// thread-safe function per JS thread; no JavaScript runs on a c10d thread.
#include "distributed.h"

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <functional>
#include <optional>
#include <thread>

#ifdef TSDDP_CUDA
#include "cuda/cuda.h"
#endif

namespace tsddp {

Table<c10d::Store>& stores() {
  thread_local Table<c10d::Store> t;
  return t;
}

Table<c10d::ProcessGroup>& processGroups() {
  thread_local Table<c10d::ProcessGroup> t;
  return t;
}

// ---------------------------------------------------------------------------
// Promise bridge

namespace {

struct Settlement {
  uint32_t id;
  bool ok;
  std::string error;
  std::optional<int64_t> value;  // a future's int result (recv's source rank)
};

struct PromiseBridge {
  Napi::ThreadSafeFunction tsfn;
  std::unordered_map<uint32_t, Napi::Promise::Deferred> pending;
  uint32_t nextId = 0;
};

PromiseBridge& bridge(Napi::Env env) {
  thread_local PromiseBridge* b = nullptr;
  if (b == nullptr) {
    b = new PromiseBridge();  // lives as long as the JS thread
    b->tsfn = Napi::ThreadSafeFunction::New(env, Napi::Function::New(env, [](const Napi::CallbackInfo&) {}),
                                            "tsddp-c10d", 0, 1);
    b->tsfn.Unref(env);  // only pending work keeps the event loop alive
  }
  return *b;
}

void settle(Napi::Env env, Napi::Function, Settlement* s) {
  auto& b = bridge(env);
  auto it = b.pending.find(s->id);
  if (it != b.pending.end()) {
    if (s->ok) {
      it->second.Resolve(s->value ? Napi::Number::New(env, static_cast<double>(*s->value)) : env.Undefined());
    } else {
      auto err = Napi::Error::New(env, s->error);
      it->second.Reject(err.Value());
    }
    b.pending.erase(it);
    if (b.pending.empty()) b.tsfn.Unref(env);
  }
  delete s;
}

}  // namespace

std::chrono::milliseconds msArg(const Napi::Value& v, int64_t fallback) {
  return std::chrono::milliseconds(v.IsNumber() ? v.As<Napi::Number>().Int64Value() : fallback);
}

std::string strArg(const Napi::Value& v, const char* what) {
  if (!v.IsString()) throw Napi::TypeError::New(v.Env(), std::string(what) + ": expected a string");
  return v.As<Napi::String>().Utf8Value();
}

const at::Tensor& tensorArg(const Napi::Value& v, const char* what) {
  return slots().get(v.Env(), handleArg(v, what), what);
}

std::vector<at::Tensor> tensorsArg(const Napi::Value& v, const char* what) {
  if (!v.IsArray()) throw Napi::TypeError::New(v.Env(), std::string(what) + ": expected an array of tensors");
  auto arr = v.As<Napi::Array>();
  std::vector<at::Tensor> out;
  for (uint32_t i = 0; i < arr.Length(); ++i) out.push_back(tensorArg(arr.Get(i), what));
  return out;
}

// torch.distributed.ReduceOp by its value in src/distributed/process-group.ts (PREMUL_SUM,
// which carries a factor, is not offered).
c10d::ReduceOp reduceOpArg(const Napi::Value& v) {
  std::string s = strArg(v, "reduce op");
  if (s == "sum") return c10d::ReduceOp::SUM;
  if (s == "product") return c10d::ReduceOp::PRODUCT;
  if (s == "min") return c10d::ReduceOp::MIN;
  if (s == "max") return c10d::ReduceOp::MAX;
  if (s == "avg") return c10d::ReduceOp::AVG;
  if (s == "band") return c10d::ReduceOp::BAND;
  if (s == "bor") return c10d::ReduceOp::BOR;
  if (s == "bxor") return c10d::ReduceOp::BXOR;
  throw Napi::TypeError::New(v.Env(),
                             "reduce op must be one of sum, avg, product, min, max, band, bor, bxor; got '" + s + "'");
}

Napi::Promise promiseFromFuture(Napi::Env env, const c10::intrusive_ptr<c10::ivalue::Future>& future,
                                const std::string& op) {
  auto& b = bridge(env);
  uint32_t id = b.nextId++;
  auto deferred = Napi::Promise::Deferred::New(env);
  auto promise = deferred.Promise();
  if (b.pending.empty()) b.tsfn.Ref(env);
  b.pending.emplace(id, std::move(deferred));
  Napi::ThreadSafeFunction tsfn = b.tsfn;
  future->addCallback([tsfn, id, op](c10::ivalue::Future& f) mutable {
    auto* s = new Settlement{id, !f.hasError(), "", std::nullopt};
    if (f.hasError()) s->error = op + ": " + f.tryRetrieveErrorMessage();
    else if (f.value().isInt()) s->value = f.value().toInt();
    if (tsfn.NonBlockingCall(s, settle) != napi_ok) delete s;
  });
  return promise;
}

// Some Gloo works (reduce_scatter, send, recv) implement wait() but not getFuture(): for
// those a waiting thread (Waiters, below) settles the promise through the same bridge.
Napi::Promise promiseFromWork(Napi::Env env, const c10::intrusive_ptr<c10d::Work>& work, const std::string& op) {
  c10::intrusive_ptr<c10::ivalue::Future> future;
  try {
    future = work->getFuture();
  } catch (const c10::Error&) {
    return promiseFromThread(env, [work] { work->wait(); }, op);
  }
  return promiseFromFuture(env, future, op);
}

Ending blockingArg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i) return Ending::Promise;
  if (info[i].IsString()) {
    if (info[i].As<Napi::String>().Utf8Value() == "handle") return Ending::Handle;
    throw Napi::TypeError::New(info.Env(), "a collective's ending must be true, false or 'handle'");
  }
  return info[i].ToBoolean().Value() ? Ending::Block : Ending::Promise;
}

namespace {

// A collective issued with Ending::Handle: what waitPending() waits for (once).
struct PendingCall {
  std::function<void()> wait;
  std::string op;
};

Napi::Value pendingHandle(Napi::Env env, std::function<void()> wait, const std::string& op) {
  return Napi::External<PendingCall>::New(env, new PendingCall{std::move(wait), op},
                                          [](Napi::Env, PendingCall* p) { delete p; });
}

// waitPending(handle): waits on this thread for a call issued with the "handle" ending;
// its failure throws here. A second wait returns at once.
Napi::Value WaitPending(const Napi::CallbackInfo& info) {
  if (!info[0].IsExternal()) throw Napi::TypeError::New(info.Env(), "waitPending: expected a pending collective");
  auto* p = info[0].As<Napi::External<PendingCall>>().Data();
  return guarded(info.Env(), p->op.c_str(), [&] {
    auto wait = std::move(p->wait);
    p->wait = nullptr;
    if (wait) wait();
    return info.Env().Undefined();
  });
}

}  // namespace

Napi::Value finishWork(Napi::Env env, const c10::intrusive_ptr<c10d::Work>& work, const std::string& op,
                       Ending ending) {
  if (ending == Ending::Promise) return promiseFromWork(env, work, op);
  if (ending == Ending::Handle) return pendingHandle(env, [work] { work->wait(); }, op);
  work->wait();
  return env.Undefined();
}

Napi::Value finishFuture(Napi::Env env, const c10::intrusive_ptr<c10::ivalue::Future>& future,
                         const std::string& op, Ending ending) {
  if (ending == Ending::Promise) return promiseFromFuture(env, future, op);
  if (ending == Ending::Handle) return pendingHandle(env, [future] { future->waitAndThrow(); }, op);
  future->waitAndThrow();
  return env.Undefined();
}

namespace {

// The threads that wait for works without a future (Gloo's send and recv, monitoredBarrier).
// A thread per wait in flight, so a long wait (a recv whose sender is late) never holds up
// another; kept for reuse, because starting one per call tripled a send/recv round trip.
// A thread idle for 30 s ends. Never destroyed: threads may still wait at exit.
class Waiters {
 public:
  void run(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
    if (idle_ >= tasks_.size()) {
      cv_.notify_one();
    } else {
      std::thread([this] { loop(); }).detach();
    }
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      ++idle_;
      bool got = cv_.wait_for(lock, std::chrono::seconds(30), [this] { return !tasks_.empty(); });
      --idle_;
      if (!got) return;
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  size_t idle_ = 0;
};

Waiters& waiters() {
  static auto* w = new Waiters();
  return *w;
}

}  // namespace

Napi::Promise promiseFromThreadInt(Napi::Env env, std::function<std::optional<int64_t>()> body, const std::string& op) {
  auto future = c10::make_intrusive<c10::ivalue::Future>(c10::AnyType::get());
  waiters().run([body = std::move(body), future] {
    try {
      auto v = body();
      future->markCompleted(v ? c10::IValue(*v) : c10::IValue());
    } catch (...) {
      future->setError(std::current_exception());
    }
  });
  return promiseFromFuture(env, future, op);
}

Napi::Promise promiseFromThread(Napi::Env env, std::function<void()> body, const std::string& op) {
  return promiseFromThreadInt(env, [body = std::move(body)] {
    body();
    return std::optional<int64_t>();
  }, op);
}

namespace {

// ---------------------------------------------------------------------------
// Stores

// The store is unauthenticated (as PyTorch's): when the job's address is loopback, serve
// it on loopback only, instead of TCPStore's default of every interface. Returns a
// listening socket for TCPStoreOptions::masterListenFd, or nullopt for other hosts.
std::optional<int> loopbackListener(const std::string& host, uint16_t port) {
  bool v4 = host == "localhost" || host.rfind("127.", 0) == 0;
  bool v6 = host == "::1";
  if (!v4 && !v6) return std::nullopt;
  int fd = ::socket(v4 ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket() failed: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage addr{};
  socklen_t len;
  if (v4) {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    ::inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(), &a->sin_addr);
    len = sizeof(sockaddr_in);
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    a->sin6_addr = in6addr_loopback;
    len = sizeof(sockaddr_in6);
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    int err = errno;
    ::close(fd);
    throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                             std::strerror(err) + (err == EADDRINUSE ? " (the port is in use)" : ""));
  }
  return fd;
}

// tcpStoreNew(host, port, isServer, worldSize, timeoutMs, waitWorkers) -> handle.
// Blocks until connected (clients retry until the timeout, like PyTorch).
Napi::Value TcpStoreNew(const Napi::CallbackInfo& info) {
  const char* what = "TCPStore";
  Napi::Env env = info.Env();
  std::string host = strArg(info[0], what);
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<uint16_t>(info[1].As<Napi::Number>().Uint32Value());
  opts.isServer = info[2].ToBoolean().Value();
  if (info[3].IsNumber()) opts.numWorkers = info[3].As<Napi::Number>().Uint32Value();
  opts.timeout = msArg(info[4], 300000);
  opts.waitWorkers = info.Length() > 5 ? info[5].ToBoolean().Value() : false;
  return guarded(env, what, [&] {
    if (opts.isServer) opts.masterListenFd = loopbackListener(host, opts.port);
    auto store = c10::make_intrusive<c10d::TCPStore>(host, opts);
    auto out = Napi::Array::New(env, 2);
    out.Set(0u, Napi::Number::New(env, stores().put(store)));
    out.Set(1u, Napi::Number::New(env, store->getPort()));  // the bound port when 0 was asked
    return out;
  });
}

Napi::Value FileStoreNew(const Napi::CallbackInfo& info) {
  const char* what = "FileStore";
  std::string path = strArg(info[0], what);
  int world = info[1].As<Napi::Number>().Int32Value();
  auto timeout = msArg(info[2], 300000);
  return guarded(info.Env(), what, [&] {
    auto store = c10::make_intrusive<c10d::FileStore>(path, world);
    store->setTimeout(timeout);
    return Napi::Number::New(info.Env(), stores().put(store));
  });
}

Napi::Value StoreSet(const Napi::CallbackInfo& info) {
  const char* what = "Store.set";
  auto& s = stores().get(info.Env(), info[0], what);
  std::string key = strArg(info[1], what), value = strArg(info[2], what);
  return guarded(info.Env(), what, [&] {
    s->set(key, std::vector<uint8_t>(value.begin(), value.end()));
    return info.Env().Undefined();
  });
}

Napi::Value StoreAdd(const Napi::CallbackInfo& info) {
  const char* what = "Store.add";
  auto& s = stores().get(info.Env(), info[0], what);
  std::string key = strArg(info[1], what);
  int64_t delta = info[2].As<Napi::Number>().Int64Value();
  return guarded(info.Env(), what, [&] { return Napi::Number::New(info.Env(), static_cast<double>(s->add(key, delta))); });
}

Napi::Value StoreCheck(const Napi::CallbackInfo& info) {
  const char* what = "Store.check";
  auto& s = stores().get(info.Env(), info[0], what);
  std::string key = strArg(info[1], what);
  return guarded(info.Env(), what, [&] { return Napi::Boolean::New(info.Env(), s->check({key})); });
}

// Blocking store calls (get waits for the key) run on the libuv pool.
class StoreGetWorker : public Napi::AsyncWorker {
 public:
  StoreGetWorker(Napi::Env env, c10::intrusive_ptr<c10d::Store> store, std::string key, std::chrono::milliseconds timeout)
      : Napi::AsyncWorker(env), store_(std::move(store)), key_(std::move(key)), timeout_(timeout),
        deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override {
    try {
      store_->wait({key_}, timeout_);
      auto v = store_->get(key_);
      value_.assign(v.begin(), v.end());
    } catch (const c10::Error& e) {
      SetError("Store.get('" + key_ + "'): " + e.what_without_backtrace());
    } catch (const std::exception& e) {
      SetError("Store.get('" + key_ + "'): " + e.what());
    }
  }
  void OnOK() override { deferred_.Resolve(Napi::String::New(Env(), value_)); }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  std::string key_, value_;
  std::chrono::milliseconds timeout_;
  Napi::Promise::Deferred deferred_;
};

Napi::Value StoreGet(const Napi::CallbackInfo& info) {
  const char* what = "Store.get";
  auto& s = stores().get(info.Env(), info[0], what);
  auto* w = new StoreGetWorker(info.Env(), s, strArg(info[1], what), msArg(info[2], s->getTimeout().count()));
  auto p = w->promise();
  w->Queue();
  return p;
}

Napi::Value StoreDestroy(const Napi::CallbackInfo& info) {
  stores().reset(info[0].As<Napi::Number>().Int32Value());
  return info.Env().Undefined();
}

// ---------------------------------------------------------------------------
// Process groups

// The Gloo backend of a group, over PrefixStore("cpu/", prefix) as torch.distributed's.
c10::intrusive_ptr<c10d::Backend> makeGloo(const c10::intrusive_ptr<c10d::Store>& prefix, int rank, int size,
                                           std::chrono::milliseconds timeout, const std::string& hostname,
                                           const std::string& interfaces) {
  auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
  for (size_t start = 0; start < interfaces.size();) {
    size_t end = std::min(interfaces.find(',', start), interfaces.size());
    if (end > start) opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interfaces.substr(start, end - start)));
    start = end + 1;
  }
  if (opts->devices.empty()) {
    opts->devices.push_back(hostname.empty() ? c10d::ProcessGroupGloo::createDefaultDevice()
                                             : c10d::ProcessGroupGloo::createDeviceForHostname(hostname));
  }
  auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(c10::make_intrusive<c10d::PrefixStore>("cpu/", prefix),
                                                          rank, size, opts);
  // As torch.distributed's init_process_group: rank 0 draws the group's sequence number
  // and publishes it in the store (SEQ_NUM_STORE_KEY), the others read it; a PyTorch
  // rank in the same world waits for that key.
  gloo->setSequenceNumberForGroup();
  return gloo;
}

// processGroupNew(storeHandle, rank, size, backends, timeoutMs, hostname?, prefix?, interfaces?,
// cudaDevice?, groupName?) -> handle. groupName is torch.distributed's ("0" for the default
// group, then "1", "2", ... in the order new_group is called). `backends` is 'gloo', 'nccl' or 'gloo,nccl' (torch.distributed's
// "cpu:gloo,cuda:nccl"). `interfaces` (GLOO_SOCKET_IFNAME: comma-separated) gives one Gloo
// device per interface and wins over `hostname`. `cudaDevice` (>= 0) connects NCCL
// eagerly on that device, as init_process_group's device_id.
// `prefix` is the store prefix of the group: torch.distributed's key layout by default
// (default_pg/0/, then cpu/ for Gloo and cuda/ for NCCL), or tsrun's per-attempt one.
Napi::Value ProcessGroupNew(const Napi::CallbackInfo& info) {
  const char* what = "initProcessGroup";
  Napi::Env env = info.Env();
  auto store = stores().get(env, info[0], what);
  int rank = info[1].As<Napi::Number>().Int32Value();
  int size = info[2].As<Napi::Number>().Int32Value();
  std::string backends = strArg(info[3], what);
  auto timeout = msArg(info[4], 1800000);
  std::string hostname = info.Length() > 5 && info[5].IsString() ? info[5].As<Napi::String>().Utf8Value() : "";
  std::string prefixName = info.Length() > 6 && info[6].IsString() ? info[6].As<Napi::String>().Utf8Value() : "default_pg";
  std::string interfaces = info.Length() > 7 && info[7].IsString() ? info[7].As<Napi::String>().Utf8Value() : "";
  int cudaDevice = info.Length() > 8 && info[8].IsNumber() ? info[8].As<Napi::Number>().Int32Value() : -1;
  std::string groupName = info.Length() > 9 && info[9].IsString() ? info[9].As<Napi::String>().Utf8Value() : "0";
  bool useGloo = backends == "gloo" || backends == "gloo,nccl";
  bool useNccl = backends == "nccl" || backends == "gloo,nccl";
  return guarded(env, what, [&]() -> Napi::Value {
    if (!useGloo && !useNccl) throw std::runtime_error("unknown backend '" + backends + "'");
#ifndef TSDDP_CUDA
    if (useNccl)
      throw std::runtime_error(
          "backend 'nccl' is not built into this addon (its libtorch has no CUDA); use 'gloo'");
#endif
    auto prefix = c10::make_intrusive<c10d::PrefixStore>(prefixName, store);
    auto pg = c10::make_intrusive<c10d::ProcessGroup>(prefix, rank, size);
    if (useGloo) {
      auto gloo = makeGloo(prefix, rank, size, timeout, hostname, interfaces);
      pg->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, gloo);
      // Gloo alone also serves CUDA tensors, as torch.distributed's 'gloo' does.
      if (!useNccl) pg->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::GLOO, gloo);
      pg->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
    }
#ifdef TSDDP_CUDA
    if (useNccl) {
      auto nccl = makeNcclBackend(prefix, rank, size, timeout, cudaDevice);
      pg->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL, nccl);
      pg->setDefaultBackend(c10d::ProcessGroup::BackendType::NCCL);
      if (cudaDevice >= 0) pg->setBoundDeviceId(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(cudaDevice)));
    }
#endif
    pg->setGroupName(groupName);
    pg->setGroupDesc(groupName == "0" ? "default_pg" : "undefined");
    return Napi::Number::New(env, processGroups().put(pg));
  });
}

Napi::Value ProcessGroupDestroy(const Napi::CallbackInfo& info) {
  const char* what = "destroyProcessGroup";
  auto pg = processGroups().get(info.Env(), info[0], what);
  processGroups().reset(info[0].As<Napi::Number>().Int32Value());
  return guarded(info.Env(), what, [&] {
    pg->shutdown();
    return info.Env().Undefined();
  });
}

// allReduce(pg, tensor, op, timeoutMs?, blocking?)
Napi::Value AllReduce(const Napi::CallbackInfo& info) {
  const char* what = "allReduce";
  Napi::Env env = info.Env();
  auto& pg = processGroups().get(env, info[0], what);
  std::vector<at::Tensor> tensors{tensorArg(info[1], what)};
  c10d::AllreduceOptions opts;
  opts.reduceOp = reduceOpArg(info[2]);
  if (info[3].IsNumber()) opts.timeout = msArg(info[3], 0);
  Ending blocking = blockingArg(info, 4);
  return guarded(env, what, [&] { return finishWork(env, pg->allreduce(tensors, opts), what, blocking); });
}

// broadcast(pg, tensor, src, timeoutMs?, blocking?)
Napi::Value Broadcast(const Napi::CallbackInfo& info) {
  const char* what = "broadcast";
  Napi::Env env = info.Env();
  auto& pg = processGroups().get(env, info[0], what);
  std::vector<at::Tensor> tensors{tensorArg(info[1], what)};
  c10d::BroadcastOptions opts;
  opts.rootRank = info[2].As<Napi::Number>().Int64Value();
  if (info[3].IsNumber()) opts.timeout = msArg(info[3], 0);
  Ending blocking = blockingArg(info, 4);
  return guarded(env, what, [&] { return finishWork(env, pg->broadcast(tensors, opts), what, blocking); });
}

// allGather(pg, outputs[], input, timeoutMs?, blocking?)
Napi::Value AllGather(const Napi::CallbackInfo& info) {
  const char* what = "allGather";
  Napi::Env env = info.Env();
  auto& pg = processGroups().get(env, info[0], what);
  std::vector<std::vector<at::Tensor>> outputs{tensorsArg(info[1], what)};
  std::vector<at::Tensor> inputs{tensorArg(info[2], what)};
  c10d::AllgatherOptions opts;
  if (info[3].IsNumber()) opts.timeout = msArg(info[3], 0);
  Ending blocking = blockingArg(info, 4);
  return guarded(env, what, [&] { return finishWork(env, pg->allgather(outputs, inputs, opts), what, blocking); });
}

// reduceScatter(pg, output, inputs[], op, timeoutMs?, blocking?)
Napi::Value ReduceScatter(const Napi::CallbackInfo& info) {
  const char* what = "reduceScatter";
  Napi::Env env = info.Env();
  auto& pg = processGroups().get(env, info[0], what);
  std::vector<at::Tensor> outputs{tensorArg(info[1], what)};
  std::vector<std::vector<at::Tensor>> inputs{tensorsArg(info[2], what)};
  c10d::ReduceScatterOptions opts;
  opts.reduceOp = reduceOpArg(info[3]);
  if (info[4].IsNumber()) opts.timeout = msArg(info[4], 0);
  Ending blocking = blockingArg(info, 5);
  return guarded(env, what,
                 [&] { return finishWork(env, pg->reduce_scatter(outputs, inputs, opts), what, blocking); });
}

// barrier(pg, timeoutMs?, blocking?)
Napi::Value Barrier(const Napi::CallbackInfo& info) {
  const char* what = "barrier";
  Napi::Env env = info.Env();
  auto& pg = processGroups().get(env, info[0], what);
  c10d::BarrierOptions opts;
  if (info[1].IsNumber()) opts.timeout = msArg(info[1], 0);
  Ending blocking = blockingArg(info, 2);
  return guarded(env, what, [&] { return finishWork(env, pg->barrier(opts), what, blocking); });
}

}  // namespace

void initProcessGroup(Napi::Env env, Napi::Object exports) {
  exports.Set("waitPending", Napi::Function::New(env, WaitPending));
  exports.Set("tcpStoreNew", Napi::Function::New(env, TcpStoreNew));
  exports.Set("fileStoreNew", Napi::Function::New(env, FileStoreNew));
  exports.Set("storeSet", Napi::Function::New(env, StoreSet));
  exports.Set("storeGet", Napi::Function::New(env, StoreGet));
  exports.Set("storeAdd", Napi::Function::New(env, StoreAdd));
  exports.Set("storeCheck", Napi::Function::New(env, StoreCheck));
  exports.Set("storeDestroy", Napi::Function::New(env, StoreDestroy));
  exports.Set("processGroupNew", Napi::Function::New(env, ProcessGroupNew));
  exports.Set("processGroupDestroy", Napi::Function::New(env, ProcessGroupDestroy));
  exports.Set("allReduce", Napi::Function::New(env, AllReduce));
  exports.Set("broadcast", Napi::Function::New(env, Broadcast));
  exports.Set("allGather", Napi::Function::New(env, AllGather));
  exports.Set("reduceScatter", Napi::Function::New(env, ReduceScatter));
  exports.Set("barrier", Napi::Function::New(env, Barrier));
}

}  // namespace tsddp
