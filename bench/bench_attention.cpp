// bench/bench_attention.cpp — the fused causal attention op against its
// composed twin, time and memory, one thread.
//
//   taskset -c 0 build/bench/bench_attention [--quick]   (the float library)
//
// For N = 4 heads, d = 32 and 64, L = 64 … 2048 (--quick: up to 512):
//
//   causal_attention           tensor/kernels_causal_attention.cpp: the online
//                              softmax forward, y and the log-sum-exp kept;
//                              the backward recomputes the weights tile by tile
//   causal_attention_composed  bmm(q, kᵀ)·scale, masked_softmax (one valid
//                              length per query), bmm(·, v): (N,L,L) scores,
//                              scaled scores and weights, and in the backward
//                              their gradients
//
// Time: the median of 7 samples of thread CPU time (bench/timing.hpp), of the
// forward under a NoGradGuard, and of forward + backward (autograd::grad of
// y with a fixed output gradient, every input's gradient formed). The ratio
// is composed ÷ fused (above 1: fused faster); the crossover is the
// shortest L from which the fused op is faster at every longer L measured.
//
// Memory: the peak resident set of a child process (fork) that runs one
// forward + backward from the same inputs, less that of a child that runs
// nothing — the bytes the op and its gradients had live at once, to a page
// (the inputs and their gradients included, 4·N·L·d floats each side), with
// the storage cache off (pool::set_pooling(false): every block from
// aligned_alloc, back to free) so that freed blocks are not counted twice.
#include <fmt/format.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "attograd.hpp"
#include "bench/timing.hpp"
#include "tensor/fast/pool.hpp"
#include "tensor/fast/storage_cache.hpp"

namespace {

using namespace attograd;
using attograd::bench::median_seconds;

using Attention = Tensor (*)(const Tensor&, const Tensor&, const Tensor&);

struct Inputs {
  Tensor q, k, v, dy;
};

Inputs inputs(int64_t N, int64_t L, int64_t d) {
  Generator generator(2024);
  return {uniform({N, L, d}, -1.0, 1.0, generator), uniform({N, L, d}, -1.0, 1.0, generator),
          uniform({N, L, d}, -1.0, 1.0, generator), uniform({N, L, d}, -1.0, 1.0, generator)};
}

double forward_seconds(Attention f, const Inputs& x) {
  return median_seconds([&] {
    const NoGradGuard no_grad;
    const Tensor y = f(x.q, x.k, x.v);
  });
}

// Forward, then dq, dk, dv for the output gradient dy.
void forward_backward(Attention f, const Inputs& x) {
  const Tensor q = requires_grad_(detach(x.q)), k = requires_grad_(detach(x.k)),
               v = requires_grad_(detach(x.v));
  const Tensor y = f(q, k, v);
  const std::vector<Tensor> grads = autograd::grad({y}, {q, k, v}, {x.dy});
}

double forward_backward_seconds(Attention f, const Inputs& x) {
  return median_seconds([&] { forward_backward(f, x); });
}

// Peak resident bytes of a child running one forward + backward of f (null:
// nothing). The parent first gives its free blocks back to the system, so
// that the child's allocations cannot land on pages already resident; the
// child takes every block of 64 KiB or more straight from mmap, so that each
// one is counted when it is touched and gone when it is freed.
int64_t child_peak_bytes(Attention f, const Inputs& x) {
  storage::release_cache();
  malloc_trim(0);
  const pid_t child = fork();
  if (child == 0) {
    mallopt(M_MMAP_THRESHOLD, 64 * 1024);
    pool::set_pooling(false);
    if (f != nullptr) forward_backward(f, x);
    _exit(0);
  }
  int status = 0;
  rusage usage{};
  if (child < 0 || wait4(child, &status, 0, &usage) != child || !WIFEXITED(status)) return -1;
  return int64_t(usage.ru_maxrss) * 1024;
}

std::string mebibytes(double bytes) { return fmt::format("{:.2f}", bytes / (1024.0 * 1024.0)); }

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  if (argc > 2 || (argc == 2 && !quick)) {
    fmt::print(stderr, "usage: {} [--quick]\n", argv[0]);
    return 2;
  }
  // One thread, so that the thread clock sees all the work and a forked child
  // has no pool to wait for.
  parallel::set_num_threads(1);
  const bench::PinnedToOneCpu pinned;
  constexpr int64_t N = 4;
  std::vector<int64_t> lengths = {64, 128, 256, 512, 1024, 2048};
  if (quick) lengths.resize(4);
  fmt::print("causal attention, fused vs composed: N = {} heads, float, {}, one thread, {}\n", N,
             kernels::simd_description(), pinned.describe());
  fmt::print(
      "time: ms per call, median of {} samples (thread CPU time); ratio = composed / fused\n",
      bench::kSamples);
  fmt::print(
      "memory: peak resident MiB of one forward + backward above an idle child; ratio = "
      "composed / fused\n");
  for (const int64_t d : {32, 64}) {
    fmt::print("\nd = {}\n", d);
    fmt::print("{:>6} | {:>10} {:>10} {:>6} | {:>10} {:>10} {:>6} | {:>10} {:>10} {:>6}\n", "L",
               "fwd fused", "composed", "ratio", "f+b fused", "composed", "ratio", "MiB fused",
               "composed", "ratio");
    int64_t forward_crossover = -1, training_crossover = -1;
    for (const int64_t L : lengths) {
      const Inputs x = inputs(N, L, d);
      const double forward_fused = forward_seconds(causal_attention, x);
      const double forward_composed = forward_seconds(causal_attention_composed, x);
      const double training_fused = forward_backward_seconds(causal_attention, x);
      const double training_composed = forward_backward_seconds(causal_attention_composed, x);
      const int64_t idle = child_peak_bytes(nullptr, x);
      const double memory_fused = double(child_peak_bytes(causal_attention, x) - idle);
      const double memory_composed = double(child_peak_bytes(causal_attention_composed, x) - idle);
      const double forward_ratio = forward_composed / forward_fused;
      const double training_ratio = training_composed / training_fused;
      if (forward_ratio > 1) {
        if (forward_crossover < 0) forward_crossover = L;
      } else {
        forward_crossover = -1;
      }
      if (training_ratio > 1) {
        if (training_crossover < 0) training_crossover = L;
      } else {
        training_crossover = -1;
      }
      fmt::print(
          "{:>6} | {:>10.3f} {:>10.3f} {:>6.2f} | {:>10.3f} {:>10.3f} {:>6.2f} | {:>10} {:>10} "
          "{:>6.1f}\n",
          L, 1e3 * forward_fused, 1e3 * forward_composed, forward_ratio, 1e3 * training_fused,
          1e3 * training_composed, training_ratio, mebibytes(memory_fused),
          mebibytes(memory_composed), memory_composed / std::max(memory_fused, 4096.0));
      std::fflush(stdout);
    }
    auto crossover = [&](int64_t L) {
      return L < 0                  ? std::string("never, at the lengths measured")
             : L == lengths.front() ? fmt::format("at every L measured (from {})", L)
                                    : fmt::format("from L = {}", L);
    };
    fmt::print("crossover, d = {}: fused faster forward {}; forward + backward {}\n", d,
               crossover(forward_crossover), crossover(training_crossover));
  }
  return 0;
}
