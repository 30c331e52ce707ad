// bench/bench_threads.cpp — what a second thread gives, with the other core
// idle and with it busy.
//
//   ./build/bench/bench_threads [matmul | translate] [--rounds N] [--epochs N]
//
// "Busy" is a child process (tests/support/busy_cpu.hpp) that spins on the
// last CPU this process may use for as long as the row runs — any other
// program taking a core. This process is not pinned: the scheduler places its threads as it
// would for a user. Each row alternates one-thread and two-thread samples in
// the same run and reports two threads' speed over one thread's (above 1 is
// faster). Both sides read the wall clock (work shared between threads cannot
// be timed by one thread's CPU time), so a host that runs other work as well
// inflates both sides of a row alike. Timings are for reading, never for
// pass/fail.
//
// matmul: c = a @ b, square, n = 128, 256, 512 (kernels::matmul_forward,
// which splits by column panels). translate: `translate train --recipe
// batched --replicas 2` (two copies of the model, each on half of every
// batch: the same numbers on any thread count) with `--threads 1` against
// `--threads 2`, tokens/s, by default for the recipe's 250 epochs (a run
// long enough that what the pool learns at its start does not decide it).
#include <fmt/core.h>

#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attograd.hpp"
#include "bench/recipe_runs.hpp"
#include "bench/timing.hpp"
#include "tensor/kernels.hpp"
#include "tensor/parallel.hpp"
#include "tests/support/busy_cpu.hpp"

using namespace attograd;
using attograd::testing::BusyCpu;
using bench::median;

namespace {

// Two threads' speed over one thread's for `work`: the median over kRatios
// pairs of adjacent samples (wall clock), one on one thread and one on two,
// and the median one-thread seconds per call. One thread is a work threshold
// no job reaches, so the pool — and what it has learnt of the machine, as
// over a long run — stays.
constexpr int kRatios = 21;

struct Ratio {
  double one_thread_seconds, ratio;
};

template <typename Work>
Ratio two_over_one(Work&& work) {
  const int64_t min_work = parallel::min_parallel_work();
  parallel::set_num_threads(2);
  const int64_t calls = bench::calls_per_sample(work, bench::wall_seconds);
  std::vector<double> one, ratios;
  for (int s = 0; s < kRatios; ++s) {
    parallel::set_min_parallel_work(std::numeric_limits<int64_t>::max());
    one.push_back(bench::sample_seconds(work, calls, bench::wall_seconds));
    parallel::set_min_parallel_work(min_work);
    ratios.push_back(one.back() / bench::sample_seconds(work, calls, bench::wall_seconds));
  }
  return {median(one), median(ratios)};
}

void matmul_rows(const std::string& condition) {
  Generator generator(1);
  for (int64_t n : {128, 256, 512}) {
    const std::vector<real> a = uniform({n * n}, -1, 1, generator).to_vector();
    const std::vector<real> b = uniform({n * n}, -1, 1, generator).to_vector();
    std::vector<real> c(static_cast<size_t>(n * n));
    const Ratio r = two_over_one([&] {
      kernels::matmul_forward(c.data(), a.data(), kernels::Layout::normal, b.data(),
                              kernels::Layout::normal, n, n, n);
    });
    fmt::print("{:<10} {:<28} {:>14.1f} {:>14.2f}x\n", condition,
               fmt::format("matmul {0}x{0} @ {0}x{0}", n), r.one_thread_seconds * 1e6, r.ratio);
  }
}

// tokens/s of `translate train --recipe batched` with the given flags, the
// median of `rounds` runs alternating with the other side.
void translate_row(const std::string& condition, int rounds, int epochs) {
  const std::string command =
      fmt::format("'{}' train --recipe batched --epochs {} --json --out '{}/bench-threads' ",
                  bench::example_program("translate"), epochs, ATTOGRAD_BINARY_DIR);
  std::vector<double> one, two;
  for (int round = 0; round < rounds; ++round) {
    for (const char* flags : {"--threads 1 --replicas 2", "--threads 2 --replicas 2"}) {
      const auto result = bench::last_json_line(command + flags);
      if (!result) {
        fmt::print(stderr, "bench: `{}{}` failed\n", command, flags);
        return;
      }
      (flags[10] == '1' ? one : two).push_back((*result)["tokens_per_second"].get<double>());
    }
  }
  fmt::print("{:<10} {:<28} {:>14.0f} {:>14.2f}x\n", condition, "translate batched --replicas 2",
             median(one), median(two) / median(one));
}

}  // namespace

int main(int argc, char** argv) {
  std::string_view only;
  if (argc > 1 &&
      (std::string_view(argv[1]) == "matmul" || std::string_view(argv[1]) == "translate")) {
    only = argv[1];
    --argc;
    ++argv;
  }
  int rounds = 3, epochs = 250;  // the recipe's default epochs
  if (!bench::read_count_flags(argc, argv, {{"--rounds", &rounds}, {"--epochs", &epochs}})) {
    fmt::print(stderr, "usage: bench_threads [matmul | translate] [--rounds N] [--epochs N]\n");
    return 2;
  }
  fmt::print(
      "two threads over one, other core idle and busy (wall clock; matmul: median of {} ratios\n"
      "of adjacent samples, µs per product on one thread; translate: medians of {} alternating\n"
      "runs of {} epochs, target tokens/s on one thread)\n\n",
      kRatios, rounds, epochs);
  fmt::print("{:<10} {:<28} {:>14} {:>15}\n", "other core", "work", "1 thread", "2 threads / 1");
  const int threads = parallel::num_threads();
  for (const bool busy : {false, true}) {
    std::optional<BusyCpu> busy_cpu;
    if (busy) busy_cpu.emplace();
    const std::string condition = busy ? "busy" : "idle";
    if (only != "translate") matmul_rows(condition);
    if (only != "matmul") translate_row(condition, rounds, epochs);
    if (busy) {
      fmt::print("(busy: {})\n",
                 busy_cpu->spinning()
                     ? fmt::format("a spinning process pinned to CPU {}", busy_cpu->cpu())
                     : std::string("no busy process: fork or sched_getaffinity failed"));
    }
  }
  parallel::set_num_threads(threads);
  return 0;
}
