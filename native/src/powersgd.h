// PowerSGD gradient compression (Vogels et al., 2019) as a DDP communication hook, with the
// semantics of PyTorch's torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook.
#pragma once

#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <atomic>
#include <memory>

namespace tsddp {

struct PowerSGDOptions {
  int64_t matrixApproximationRank = 1;
  // Plain all-reduce for the first iterations (PyTorch: start_powerSGD_iter).
  int64_t startIter = 1000;
  double minCompressionRate = 2;
  bool useErrorFeedback = true;
  bool warmStart = true;
  double orthogonalizationEpsilon = 0;
  uint64_t randomSeed = 0;
};

// What the hook sent, read by DistributedDataParallel.stats(). Counters are updated from
// c10d's threads, hence atomics.
struct PowerSGDCounters {
  std::atomic<int64_t> iter{0};
  // Elements all-reduced in the iteration in progress, and in the last complete one.
  std::atomic<int64_t> elementsThisIter{0};
  std::atomic<int64_t> elementsLastIter{0};
  // Gradient elements (before compression) of the last complete iteration.
  std::atomic<int64_t> gradientElementsThisIter{0};
  std::atomic<int64_t> gradientElementsLastIter{0};
  std::atomic<int64_t> elementSize{4};
};

std::unique_ptr<c10d::CommHookInterface> makePowerSGDHook(const c10::intrusive_ptr<c10d::ProcessGroup>& pg,
                                                          const PowerSGDOptions& opts,
                                                          std::shared_ptr<PowerSGDCounters> counters);

}  // namespace tsddp
