// bench/recipe_runs.hpp — a training recipe run by attograd's program and by
// its PyTorch reference, alternately, in the same run.
//
// Both sides print one JSON line with their figures; a round runs each side
// once, and the table gives the median over rounds. attograd's side is the
// example program as a user runs it (`translate train --recipe … --json`),
// whose ms_per_epoch and tokens_per_second time the training loop alone, as
// the references do. One thread on both sides by default.
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/pytorch.hpp"
#include "bench/timing.hpp"

namespace attograd::bench {

// The path of one of the example programs in the build folder.
inline std::string example_program(const std::string& name) {
  return std::string(ATTOGRAD_BINARY_DIR) + "/examples/" + name;
}

struct RecipeComparison {
  std::string recipe;  // translate's --recipe: batched or transformer
  std::string script;  // its reference in bench/reference/
  int epochs = 30;
  int rounds = 3;
  int threads = 1;
  int replicas = 1;  // attograd's --replicas: copies of the model sharing each batch
};

// Runs the comparison and prints a table of tokens/s and ms per epoch. Returns
// false when attograd's program failed.
inline bool compare_recipe(const RecipeComparison& c) {
  const bool torch = have_pytorch();
  // One thread a side: both on the same core. Two: the whole machine.
  std::optional<PinnedToOneCpu> pinned;
  if (c.threads == 1) pinned.emplace();
  std::vector<double> ours_tokens, ours_ms, ours_loss, theirs_tokens, theirs_ms, theirs_loss;
  const std::string ours_command = fmt::format(
      "'{}' train --recipe {} --epochs {} --threads {} --replicas {} --json --out '{}/bench-{}'",
      example_program("translate"), c.recipe, c.epochs, c.threads, c.replicas, ATTOGRAD_BINARY_DIR,
      c.recipe);
  const std::string theirs_arguments = fmt::format("--epochs {} --threads {}", c.epochs, c.threads);
  for (int round = 0; round < c.rounds; ++round) {
    const auto ours = last_json_line(ours_command);
    if (!ours) {
      fmt::print(stderr, "bench: `{}` failed\n", ours_command);
      return false;
    }
    ours_tokens.push_back((*ours)["tokens_per_second"].get<double>());
    ours_ms.push_back((*ours)["ms_per_epoch"].get<double>());
    ours_loss.push_back((*ours)["final_loss"].get<double>());
    if (!torch) continue;
    if (const auto theirs = run_reference(c.script, theirs_arguments)) {
      theirs_tokens.push_back((*theirs)["tokens_per_second"].get<double>());
      theirs_ms.push_back((*theirs)["ms_per_epoch"].get<double>());
      theirs_loss.push_back((*theirs)["final_loss"].get<double>());
    }
  }
  fmt::print(
      "the {} recipe, {} epochs on {} thread(s){}{}, medians of {} alternating round(s)\n\n",
      c.recipe, c.epochs, c.threads,
      c.replicas > 1 ? fmt::format(" ({} replicas for attograd)", c.replicas) : std::string(),
      pinned ? ", " + pinned->describe() : std::string(), c.rounds);
  fmt::print("{:<28} {:>14} {:>12} {:>12}\n", "", "tokens/s", "ms/epoch", "final loss");
  fmt::print("{:<28} {:>14.0f} {:>12.1f} {:>12.4f}\n", "attograd (translate train)",
             median(ours_tokens), median(ours_ms), median(ours_loss));
  if (theirs_tokens.empty()) {
    fmt::print("PyTorch: not run ({} has no torch, or bench/reference/{} failed)\n",
               "/usr/bin/python3", c.script);
    return true;
  }
  fmt::print("{:<28} {:>14.0f} {:>12.1f} {:>12.4f}\n", "PyTorch (" + c.script + ")",
             median(theirs_tokens), median(theirs_ms), median(theirs_loss));
  fmt::print("\nattograd / PyTorch, tokens/s: {:.2f}x\n",
             median(ours_tokens) / median(theirs_tokens));
  return true;
}

// A benchmark flag that takes a count: `--name N`, N read as at least 1.
struct CountFlag {
  std::string_view name;
  int* value;
};

// Reads the command line as `--name N` pairs of the given flags. False for a
// name it does not know or a name without its number: the caller then prints
// its usage and runs nothing.
inline bool read_count_flags(int argc, char** argv, std::initializer_list<CountFlag> flags) {
  if (argc % 2 == 0) return false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const auto flag = std::find_if(flags.begin(), flags.end(),
                                   [&](const CountFlag& known) { return known.name == argv[i]; });
    if (flag == flags.end()) return false;
    *flag->value = std::max(1, std::atoi(argv[i + 1]));
  }
  return true;
}

// bench_batched / bench_transformer's command line:
// [--epochs N] [--rounds N] [--threads N] [--replicas N].
inline int recipe_main(int argc, char** argv, RecipeComparison comparison) {
  if (!read_count_flags(argc, argv,
                        {{"--epochs", &comparison.epochs},
                         {"--rounds", &comparison.rounds},
                         {"--threads", &comparison.threads},
                         {"--replicas", &comparison.replicas}})) {
    fmt::print(stderr, "usage: {} [--epochs N] [--rounds N] [--threads N] [--replicas N]\n",
               argv[0]);
    return 2;
  }
  return compare_recipe(comparison) ? 0 : 1;
}

}  // namespace attograd::bench
