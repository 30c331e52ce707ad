// bench/bench_gpt.cpp — nanoGPT's character GPT and CPU recipe (`gpt train`)
// against the same model and recipe in PyTorch (bench/reference/gpt.py),
// alternately in one run, one thread a side on one core.
//
//   ./build/bench/bench_gpt [quick | seeds] [--rounds 3] [--iters 2000] [--seed 0]
//
//   (no mode)  --rounds runs a side of --iters iterations at --seed, alternating
//   quick      the same at 200 iterations: a ratio in a few minutes
//   seeds      seeds 0, 1 and 2 at --iters (2,000) once a side: the mean
//              validation loss of each side, the figure the recipe is held to
//              (attograd's within 0.03 of PyTorch's)
//
// Both sides see the same text, split and batches (gpt.py draws them from
// attograd's generator) and start from weights of the same distribution
// (each from its own generator). Prints the median tokens/s of the timed
// training iterations of each side, attograd's over PyTorch's, and each run's
// validation loss over every validation window at the end. Both programs time
// their training loops on the wall clock; on a shared machine the CPU seconds
// of each whole run (loading, training, every evaluation: getrusage of the
// finished program) are the figure other work disturbs least. Both sides run
// one thread (`gpt train --threads 1`, gpt.py's --threads 1). Timings
// are for reading, never for pass/fail.
#include <fmt/core.h>
#include <sys/resource.h>

#include <cstdlib>
#include <fstream>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/recipe_runs.hpp"
#include "tensor/kernels.hpp"

namespace {

using namespace attograd;

constexpr int kQuickIterations = 200;

// One run of one side: what its JSON line says.
struct Run {
  double tokens_per_second = 0;
  double val_loss = 0;
  double train_loss = 0;
  long parameters = 0;
  double cpu_seconds = 0;  // the whole program: loading, training, every evaluation
};

// CPU seconds (user + system) of the finished programs this one started.
double children_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  const auto seconds = [](const timeval& t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::optional<Run> read_run(const std::optional<nlohmann::json>& line, double cpu_seconds) {
  if (!line) return std::nullopt;
  return Run{(*line)["tokens_per_second"].get<double>(), (*line)["val_loss"].get<double>(),
             (*line)["train_loss"].get<double>(), (*line)["parameters"].get<long>(), cpu_seconds};
}

std::optional<Run> run_attograd(int iterations, int seed) {
  const double before = children_cpu_seconds();
  const auto line = bench::last_json_line(
      fmt::format("'{}' train --iters {} --seed {} --threads 1 --json --out '{}/bench-gpt'",
                  bench::example_program("gpt"), iterations, seed, ATTOGRAD_BINARY_DIR));
  return read_run(line, children_cpu_seconds() - before);
}

std::optional<Run> run_pytorch(int iterations, int seed) {
  const double before = children_cpu_seconds();
  const auto line = bench::run_reference(
      "gpt.py", fmt::format("--iters {} --seed {} --threads 1", iterations, seed));
  return read_run(line, children_cpu_seconds() - before);
}

double mean(const std::vector<double>& values) {
  return values.empty()
             ? 0
             : std::accumulate(values.begin(), values.end(), 0.0) / double(values.size());
}

std::string losses_text(const std::vector<double>& losses) {
  std::string text;
  for (double loss : losses) text += fmt::format("{}{:.4f}", text.empty() ? "" : " ", loss);
  return text;
}

struct Side {
  std::vector<double> tokens, val_losses, cpu_seconds;
  long parameters = 0;
  void add(const Run& run) {
    tokens.push_back(run.tokens_per_second);
    cpu_seconds.push_back(run.cpu_seconds);
    val_losses.push_back(run.val_loss);
    parameters = run.parameters;
  }
};

// The runs: (seed, iterations) pairs, each once a side, attograd first.
bool compare(const std::vector<int>& seeds, int iterations, bool by_seed) {
  const bool torch = bench::have_pytorch();
  const bench::PinnedToOneCpu pinned;
  fmt::print("CPU: {}; kernels: {}\n", bench::cpu_model(), kernels::simd_description());
  fmt::print(
      "gpt train (4 layers, 4 heads, 128 channels, batch 12 x block 64) against "
      "bench/reference/gpt.py, {} iterations, 1 thread a side, {}\n",
      iterations, pinned.describe());
  Side ours, theirs;
  for (size_t i = 0; i < seeds.size(); ++i) {
    const auto mine = run_attograd(iterations, seeds[i]);
    if (!mine) {
      fmt::print(stderr, "bench_gpt: `gpt train --iters {} --seed {}` failed\n", iterations,
                 seeds[i]);
      return false;
    }
    ours.add(*mine);
    std::optional<Run> reference;
    if (torch) reference = run_pytorch(iterations, seeds[i]);
    if (reference) theirs.add(*reference);
    fmt::print("  run {} (seed {}): attograd {:.0f} tokens/s, val loss {:.4f}; PyTorch {}\n", i + 1,
               seeds[i], mine->tokens_per_second, mine->val_loss,
               reference ? fmt::format("{:.0f} tokens/s, val loss {:.4f}",
                                       reference->tokens_per_second, reference->val_loss)
                         : std::string("not run"));
    std::fflush(stdout);
  }
  const char* what = by_seed ? "mean val loss" : "median val loss";
  const auto loss_of = [&](const Side& side) {
    return by_seed ? mean(side.val_losses) : bench::median(side.val_losses);
  };
  fmt::print("\nmedians of {} alternating run(s)\n\n", seeds.size());
  fmt::print("{:<24} {:>10} {:>10} {:>16} {:>11}  {}\n", "", "tokens/s", "CPU s/run", what,
             "parameters", "val loss of each run");
  fmt::print("{:<24} {:>10.0f} {:>10.1f} {:>16.4f} {:>11}  {}\n", "attograd (gpt train)",
             bench::median(ours.tokens), bench::median(ours.cpu_seconds), loss_of(ours),
             ours.parameters, losses_text(ours.val_losses));
  if (theirs.tokens.empty()) {
    fmt::print(
        "PyTorch: not run (/usr/bin/python3 has no torch, or bench/reference/gpt.py failed)\n");
    return true;
  }
  fmt::print("{:<24} {:>10.0f} {:>10.1f} {:>16.4f} {:>11}  {}\n", "PyTorch (gpt.py)",
             bench::median(theirs.tokens), bench::median(theirs.cpu_seconds), loss_of(theirs),
             theirs.parameters, losses_text(theirs.val_losses));
  fmt::print("\nattograd / PyTorch, tokens/s: {:.2f}x\n",
             bench::median(ours.tokens) / bench::median(theirs.tokens));
  fmt::print("attograd / PyTorch, CPU time of a whole run: {:.2f}x faster\n",
             bench::median(theirs.cpu_seconds) / bench::median(ours.cpu_seconds));
  fmt::print("attograd - PyTorch, {}: {:+.4f}\n", what, loss_of(ours) - loss_of(theirs));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int first_flag = 1;
  std::string_view mode;
  if (argc > 1 && argv[1][0] != '-') {
    mode = argv[1];
    first_flag = 2;
  }
  int rounds = 3, iterations = mode == "quick" ? kQuickIterations : 2000, seed = 0;
  bool flags_read = (argc - first_flag) % 2 == 0;
  for (int i = first_flag; flags_read && i + 1 < argc; i += 2) {
    const std::string_view name = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (name == "--rounds" && value >= 1) {
      rounds = value;
    } else if (name == "--iters" && value >= 1) {
      iterations = value;
    } else if (name == "--seed" && value >= 0) {
      seed = value;
    } else {
      flags_read = false;
    }
  }
  if (!flags_read || (mode != "" && mode != "quick" && mode != "seeds")) {
    fmt::print(stderr, "usage: {} [quick | seeds] [--rounds N] [--iters N] [--seed N]\n", argv[0]);
    return 2;
  }
  std::vector<int> seeds;
  if (mode == "seeds") {
    seeds = {0, 1, 2};
  } else {
    seeds.assign(size_t(rounds), seed);
  }
  return compare(seeds, iterations, mode == "seeds") ? 0 : 1;
}
