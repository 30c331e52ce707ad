// tests/examples/test_flag_limits_cli.cpp — every flag that sizes work or
// output has an upper limit, named in --help (as "[1, N]" or "[0, N]") and in
// the refusal of a value above it; integer ranges built from two flags never
// overflow; eval --examples prints each pair at most once, whatever the flag.
// Each refusal: status 2, one line, "error: --flag: …".
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "tests/support/translate_program.hpp"

namespace test_flag_limits_cli {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using namespace attograd::testing::translate_program;

namespace {

const fs::path kExamples = fs::path(ATTOGRAD_BINARY_DIR) / "examples";

// A flag with a limit: the program, the arguments before the flag (the
// command and recipe), the flag, and the range --help states.
struct LimitedFlag {
  std::string program;
  std::vector<std::string> command;
  std::string flag;
  long long low;
  long long high;
};

const std::vector<LimitedFlag>& limited_flags() {
  static const std::vector<LimitedFlag> flags = {
      {"translate", {"translate"}, "beam", 1, 64},
      {"translate", {"eval"}, "beam", 1, 64},
      {"translate", {"translate", "--recipe", "batched"}, "beam", 1, 64},
      {"translate", {"eval", "--recipe", "transformer"}, "beam", 1, 64},
      {"translate", {"eval"}, "examples", 0, 100000},
      {"translate", {"eval", "--recipe", "batched"}, "examples", 0, 100000},
      {"translate", {"train"}, "examples", 0, 100000},
      {"translate", {"train"}, "iters", 1, 10000000},
      {"translate", {"train"}, "threads", 1, 256},
      {"translate", {"train", "--recipe", "batched"}, "epochs", 1, 100000},
      {"translate", {"train", "--recipe", "batched"}, "threads", 0, 256},
      {"translate", {"train", "--recipe", "batched"}, "replicas", 1, 64},
      {"translate", {"train", "--recipe", "transformer"}, "epochs", 1, 100000},
      {"translate", {"train", "--recipe", "transformer"}, "threads", 0, 256},
      {"translate", {"train", "--recipe", "transformer"}, "replicas", 1, 64},
      {"translate", {"train"}, "hidden", 1, 4096},
      {"translate", {"train", "--recipe", "batched"}, "batch", 1, 4096},
      {"nw_regression", {}, "epochs", 1, 100000},
      {"nw_regression", {}, "seeds", 1, 10000},
      {"fit_mlp", {}, "steps", 1, 1000000},
      {"fit_mlp", {}, "hidden", 1, 1024},
      {"fit_mlp", {}, "samples", 1, 10000},
      {"higher_order", {}, "epochs", 1, 100000},
      {"higher_order", {}, "newton-steps", 1, 100000},
      {"higher_order", {}, "penalty-steps", 1, 100000},
  };
  return flags;
}

std::vector<std::string> with(std::vector<std::string> arguments,
                              const std::vector<std::string>& more) {
  arguments.insert(arguments.end(), more.begin(), more.end());
  return arguments;
}

// The first `count` short "I'm …" pairs of the shipped data, which the
// tutorial's filter keeps.
}  // namespace

TEST_CASE("Every flag that sizes work names its range in --help and refuses a value past it",
          "[cli][flag-limits]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  for (const LimitedFlag& limited : limited_flags()) {
    const attograd::testing::Program program(kExamples / limited.program);
    const std::string flag = "--" + limited.flag;
    std::string command = limited.program;
    for (const std::string& word : limited.command) command += " " + word;
    INFO(command << " " << flag);

    // --help: "--beam <int>  … (must be in [1, 64]; default: 1)".
    const Run help = program(with(limited.command, {"--help"}), scratch.path);
    REQUIRE(help.status == 0);
    std::string line;
    for (const std::string& candidate : lines_of(help.out)) {
      if (candidate.rfind("  " + flag + " ", 0) == 0) line = candidate;
    }
    CHECK_THAT(line,
               Contains(fmt::format("(must be in [{}, {}]; default: ", limited.low, limited.high)));

    // One past the limit: refused at the flag, naming the limit.
    const Run refused =
        program(with(limited.command, {flag, std::to_string(limited.high + 1)}), scratch.path);
    require_one_line_error(refused);
    CHECK_THAT(refused.err,
               StartsWith(fmt::format("error: {}: expected a {} integer at most {}, got '{}'", flag,
                                      limited.low == 0 ? "non-negative" : "positive", limited.high,
                                      limited.high + 1)));
    // A number past int64 names the same limit, not the type's range.
    const Run huge =
        program(with(limited.command, {flag, "99999999999999999999999"}), scratch.path);
    require_one_line_error(huge);
    CHECK_THAT(huge.err, Contains(fmt::format("at most {}, got '9999", limited.high)));
  }
}

TEST_CASE("The limit itself is accepted by the parser", "[cli][flag-limits]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  // The error is about the missing checkpoint, after the flags were taken.
  const fs::path missing = scratch.path / "missing.safetensors";
  for (const std::vector<std::string>& arguments :
       {std::vector<std::string>{"eval", "--beam", "64", "--examples", "100000"},
        std::vector<std::string>{"translate", "--recipe", "batched", "--beam", "64"}}) {
    const Run refused = run(with(arguments, {"--checkpoint", missing.string()}), scratch.path);
    require_one_line_error(refused);
    CHECK_THAT(refused.err, Contains("missing.safetensors"));
    CHECK_THAT(refused.err, !Contains("--beam") && !Contains("--examples"));
  }
}

TEST_CASE("translate: --threads past the limit is refused at the flag, not by the thread pool",
          "[translate][cli][flag-limits]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const Run refused = run({"train", "--threads", "1000000"}, scratch.path);
  require_one_line_error(refused);
  CHECK_THAT(refused.err,
             StartsWith("error: --threads: expected a positive integer at most 256, got "
                        "'1000000'"));
  CHECK_THAT(refused.err, !Contains("set_num_threads"));
  CHECK(!fs::exists(scratch.path / "out"));
}

TEST_CASE("nw_regression: --seed + --seeds never passes the largest int64",
          "[nw_regression][cli][flag-limits]") {
  TemporaryFolder scratch;
  const attograd::testing::Program nw_regression(kExamples / "nw_regression");
  const Run overflow =
      nw_regression({"--seed", "9223372036854775807", "--seeds", "5"}, scratch.path);
  require_one_line_error(overflow);
  CHECK_THAT(overflow.err,
             StartsWith("error: --seed 9223372036854775807 with --seeds 5: the last seed, --seed "
                        "+ --seeds - 1, would pass 9223372036854775807, the largest seed; use a "
                        "--seed of at most 9223372036854775803"));
  CHECK(overflow.out.empty());

  // The largest range that fits runs, and its report names it without wrapping.
  const Run largest = nw_regression(
      {"--seed", "9223372036854775806", "--seeds", "2", "--epochs", "2"}, scratch.path);
  INFO("stderr: " << largest.err);
  REQUIRE(largest.status == 0);
  CHECK_THAT(largest.out, Contains("seeds 9223372036854775806…9223372036854775807"));
  CHECK_THAT(largest.out, !Contains("-922"));
}

TEST_CASE("translate eval --examples prints each pair at most once, drawn by --seed",
          "[translate][cli][flag-limits]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path data = tutorial_data(scratch.path, 30);
  const fs::path out = scratch.path / "out";
  const Run trained = run({"train", "--data", data.string(), "--out", out.string(), "--iters", "20",
                           "--hidden", "8", "--examples", "100000", "--print-every", "10"},
                          scratch.path);
  INFO("train stderr: " << trained.err);
  REQUIRE(trained.status == 0);
  // train --examples past the split's size prints each training pair once.
  std::set<std::string> train_sources;
  size_t train_lines = 0;
  bool in_training = false;
  for (const std::string& line : lines_of(trained.out)) {
    if (line == "Training sentences:") in_training = true;
    if (line == "Held-out sentences:") in_training = false;
    if (in_training && line.rfind("> ", 0) == 0) {
      ++train_lines;
      train_sources.insert(line);
    }
  }
  CHECK(train_lines > 0);
  CHECK(train_lines <= 30);

  const fs::path checkpoint = out / "checkpoint.safetensors";
  const auto examples_of = [&](const std::string& seed) {
    const Run evaluated = run({"eval", "--checkpoint", checkpoint.string(), "--data", data.string(),
                               "--examples", "100000", "--seed", seed},
                              scratch.path);
    INFO("eval stderr: " << evaluated.err);
    REQUIRE(evaluated.status == 0);
    std::vector<std::string> sources;
    for (const std::string& line : lines_of(evaluated.out)) {
      if (line.rfind("> ", 0) == 0) sources.push_back(line);
    }
    return sources;
  };
  const std::vector<std::string> first = examples_of("1");
  // 30 pairs; each distinct source sentence printed exactly once.
  const std::set<std::string> distinct(first.begin(), first.end());
  CHECK(first.size() == distinct.size());
  CHECK(!first.empty());
  CHECK(first.size() <= 30);
  // The same seed draws the same examples in the same order; another seed, another order.
  CHECK(examples_of("1") == first);
  const std::vector<std::string> other = examples_of("2");
  CHECK(std::set<std::string>(other.begin(), other.end()) == distinct);
  CHECK(other != first);

  // Past the limit the flag is refused before any work.
  const Run refused =
      run({"eval", "--checkpoint", checkpoint.string(), "--examples", "1000000000"}, scratch.path);
  require_one_line_error(refused);
  CHECK_THAT(refused.err, StartsWith("error: --examples: expected a non-negative integer at most "
                                     "100000, got '1000000000'"));
  CHECK(refused.out.empty());
}

}  // namespace test_flag_limits_cli
