// PowerSGD as a C++ communication hook. Per bucket, as PyTorch's powerSGD_hook does:
// before `startIter` iterations a plain averaging all-reduce; then the local error of the
// last iteration is added back (error feedback), every gradient worth compressing (its
// n x m view costs more than (n + m) x rank by minCompressionRate) is approximated as
// P Q^T with P = M Q (Q kept from the last iteration: warm start; random at first), the
// others are all-reduced as they are, P is all-reduced and orthogonalised, Q = M^T P is
// all-reduced and averaged, and M is replaced by P Q^T. Only P, Q and the small tensors
// cross the network. Each step chains on the previous one's future (no blocking waits on
// c10d's threads), and each bucket's first all-reduce on the previous bucket's last, so
// every rank issues the collectives in the same order. (PyTorch's hook issues them from
// its callbacks as they come and blocks in them: over Gloo, several buckets deadlock at
// 2 threads and mismatch collectives at more; see test/fixtures/powersgd/gen.py.) The random Qs are drawn as PyTorch draws them (a seed from numpy's
// legacy RandomState(random_seed).randint(10^9), then torch.randn under that seed, in
// the same order), so a run matches PyTorch's hook step for step (test/powersgd.test.ts).
#include "powersgd.h"

#include "future_error.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <mutex>
#include <map>
#include <random>
#include <unordered_map>

namespace tsddp {
namespace {

// Gram-Schmidt on the columns of each matrix of a [b, n, r] batch.
void gramSchmidt(const at::Tensor& m, double eps) {
  int64_t cols = m.size(2);
  for (int64_t i = 0; i < cols; ++i) {
    auto col = m.narrow(2, i, 1);
    auto norm = at::norm(col, 2, {1}, /*keepdim=*/true);
    // Without an epsilon a column of zeros gives NaNs, as in PyTorch.
    if (eps == 0) col.div_(norm);
    else col.div_(norm + eps);
    if (i + 1 < cols) {
      auto rest = m.narrow(2, i + 1, cols - i - 1);
      rest.sub_((col * rest).sum({1}, /*keepdim=*/true) * col);
    }
  }
}

// PyTorch's _orthogonalize: Gram-Schmidt for rank <= 2 or half precision, else QR.
void orthogonalize(const at::Tensor& m, double eps) {
  auto dtype = m.scalar_type();
  if (m.size(2) <= 2 || dtype == at::kHalf || dtype == at::kBFloat16) {
    gramSchmidt(m, eps);
    return;
  }
  auto qr = at::linalg_qr(m);
  m.copy_(std::get<0>(qr));
}

struct BucketMemory {
  at::Tensor error;  // local error of the last iteration (error feedback)
  at::Tensor p, q;   // P and Q of all the bucket's compressed gradients, end to end
};

struct State {
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
  PowerSGDOptions opts;
  std::shared_ptr<PowerSGDCounters> counters;
  std::mutex mutex;  // buckets' callbacks may run on different c10d threads
  std::unordered_map<size_t, BucketMemory> buckets;
  // The last compressed bucket's future: the next bucket's all-reduces start after it.
  c10::intrusive_ptr<c10::ivalue::Future> tail;
  // numpy's legacy RandomState is MT19937 seeded as std::mt19937 seeds it.
  std::mt19937 seeds;

  // numpy's RandomState.randint(1_000_000_000): masked rejection sampling on 32-bit draws.
  uint64_t nextSeed() {
    constexpr uint32_t bound = 999999999, mask = (1u << 30) - 1;
    uint32_t v;
    do v = static_cast<uint32_t>(seeds()) & mask;
    while (v > bound);
    return v;
  }

  // The iteration ends with the bucket c10d reports as last (PyTorch: maybe_increase_iter).
  void endBucket(bool last) {
    if (!last) return;
    counters->elementsLastIter = counters->elementsThisIter.exchange(0);
    counters->gradientElementsLastIter = counters->gradientElementsThisIter.exchange(0);
    counters->iter++;
  }
};

c10::intrusive_ptr<c10::ivalue::Future> allreduce(State& st, const at::Tensor& t) {
  std::vector<at::Tensor> tensors = {t};
  return st.pg->allreduce(tensors)->getFuture();
}

class PowerSGDHook : public c10d::CppCommHookInterface<std::shared_ptr<State>> {
 public:
  explicit PowerSGDHook(std::shared_ptr<State> st) : c10d::CppCommHookInterface<std::shared_ptr<State>>(st) {}

  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override {
    auto st = state_;
    at::Tensor input = bucket.getBufferRef();
    const bool last = bucket.isLast();
    const int64_t world = st->pg->getSize();
    st->counters->elementSize = static_cast<int64_t>(input.element_size());
    st->counters->gradientElementsThisIter += input.numel();
    if (st->counters->iter < st->opts.startIter) {
      input.div_(world);
      st->counters->elementsThisIter += input.numel();
      return allreduce(*st, input)->then(
          [st, last, input](c10::ivalue::Future& parent) {
            rethrowIfFailed(parent);
            st->endBucket(last);
            return c10::IValue(input);
          },
          c10::TensorType::get());
    }

    const size_t index = bucket.getIndex();
    at::Tensor inputCopy;
    BucketMemory* mem;
    {
      std::lock_guard<std::mutex> lock(st->mutex);
      mem = &st->buckets[index];  // references into unordered_map stay valid
    }
    if (st->opts.useErrorFeedback) {
      if (mem->error.defined()) input.add_(mem->error);
      else mem->error = at::zeros({input.numel()}, input.options());
      inputCopy = input.detach().clone();
    }

    // Which gradients are worth compressing (their views into the bucket), grouped by
    // shape in order of first appearance, as PyTorch's hook lays out its Ps and Qs.
    std::vector<at::Tensor> plain;
    std::vector<std::vector<at::Tensor>> groups;
    std::map<std::pair<int64_t, int64_t>, size_t> groupOf;
    for (const auto& g : bucket.getGradients()) {
      auto m = g.dim() == 0 ? g.view({1, 1}) : g.view({g.size(0), -1});
      int64_t n = m.size(0), k = m.size(1);
      int64_t r = std::min({n, k, st->opts.matrixApproximationRank});
      // PyTorch's _should_compress: compressed size (n + k) r, min_compression_rate times smaller.
      if (static_cast<double>((n + k) * r) * st->opts.minCompressionRate < static_cast<double>(n * k)) {
        auto [it, added] = groupOf.try_emplace({n, k}, groups.size());
        if (added) groups.emplace_back();
        groups[it->second].push_back(m.unsqueeze(0));
      } else {
        plain.push_back(g);
      }
    }
    std::vector<at::Tensor> matrices;
    for (auto& group : groups) matrices.insert(matrices.end(), group.begin(), group.end());
    std::vector<int64_t> ranks;
    int64_t pSize = 0, qSize = 0;
    for (const auto& m : matrices) {
      int64_t r = std::min({m.size(1), m.size(2), st->opts.matrixApproximationRank});
      ranks.push_back(r);
      pSize += m.size(1) * r;
      qSize += m.size(2) * r;
    }
    std::vector<at::Tensor> flat;
    for (const auto& g : plain) flat.push_back(g.reshape({-1}));
    at::Tensor plainMemory = flat.empty() ? at::empty({0}, input.options()) : at::cat(flat);

    bool randomize = !st->opts.warmStart || !mem->p.defined();
    if (randomize) {
      mem->p = at::empty({pSize}, input.options());
      mem->q = at::empty({qSize}, input.options());
    }
    std::vector<at::Tensor> ps, qs;
    int64_t pi = 0, qi = 0;
    for (size_t i = 0; i < matrices.size(); ++i) {
      int64_t n = matrices[i].size(1), k = matrices[i].size(2), r = ranks[i];
      ps.push_back(mem->p.narrow(0, pi, n * r).view({1, n, r}));
      qs.push_back(mem->q.narrow(0, qi, k * r).view({1, k, r}));
      pi += n * r;
      qi += k * r;
    }
    if (randomize) {
      // The same draws on every rank: one seed per initialisation from the shared sequence.
      uint64_t seed;
      {
        std::lock_guard<std::mutex> lock(st->mutex);
        seed = st->nextSeed();
      }
      auto gen = at::detail::createCPUGenerator(seed);
      for (auto& q : qs) q.copy_(at::randn(q.sizes(), gen, q.options().device(at::kCPU)));
    }
    for (auto& q : qs) orthogonalize(q, st->opts.orthogonalizationEpsilon);
    for (size_t i = 0; i < matrices.size(); ++i) at::bmm_out(ps[i], matrices[i], qs[i]);

    st->counters->elementsThisIter += plainMemory.numel() + pSize + qSize;
    at::Tensor p = mem->p, q = mem->q;
    auto afterPlain = [st, plain, plainMemory, p, world](c10::ivalue::Future& parent) {
      rethrowIfFailed(parent);
      plainMemory.div_(world);
      int64_t at = 0;
      for (const auto& g : plain) {
        g.copy_(plainMemory.narrow(0, at, g.numel()).view_as(g));
        at += g.numel();
      }
      return allreduce(*st, p);
    };
    auto afterP = [st, matrices, ps, qs, q](c10::ivalue::Future& parent) {
      rethrowIfFailed(parent);
      for (auto& pm : ps) orthogonalize(pm, st->opts.orthogonalizationEpsilon);
      for (size_t i = 0; i < matrices.size(); ++i) {
        at::Tensor out = qs[i];  // a handle: the lambda's copies are const
        at::bmm_out(out, matrices[i].transpose(1, 2), ps[i]);
      }
      return allreduce(*st, q);
    };
    auto afterQ = [st, matrices, ps, qs, q, input, inputCopy, mem, last, world](c10::ivalue::Future& parent) {
      rethrowIfFailed(parent);
      q.div_(world);
      for (size_t i = 0; i < matrices.size(); ++i) {
        at::Tensor out = matrices[i];
        at::bmm_out(out, ps[i], qs[i].transpose(1, 2));
      }
      if (st->opts.useErrorFeedback) mem->error = inputCopy - input;
      if (!st->opts.warmStart) {
        mem->p = at::Tensor();
        mem->q = at::Tensor();
      }
      st->endBucket(last);
      return c10::IValue(input);
    };
    auto listType = c10::ListType::ofTensors();
    std::lock_guard<std::mutex> lock(st->mutex);
    auto afterTail = [st, plainMemory](c10::ivalue::Future& parent) {
      rethrowIfFailed(parent);
      return allreduce(*st, plainMemory);
    };
    auto start = st->tail && !st->tail->completed() ? st->tail->thenAsync(afterTail, listType)
                                                     : allreduce(*st, plainMemory);
    st->tail = start->thenAsync(afterPlain, listType)
                   ->thenAsync(afterP, listType)
                   ->then(afterQ, c10::TensorType::get());
    return st->tail;
  }
};

}  // namespace

std::unique_ptr<c10d::CommHookInterface> makePowerSGDHook(const c10::intrusive_ptr<c10d::ProcessGroup>& pg,
                                                          const PowerSGDOptions& opts,
                                                          std::shared_ptr<PowerSGDCounters> counters) {
  auto st = std::make_shared<State>();
  st->pg = pg;
  st->opts = opts;
  st->counters = std::move(counters);
  st->seeds.seed(opts.randomSeed);
  return std::make_unique<PowerSGDHook>(st);
}

}  // namespace tsddp
