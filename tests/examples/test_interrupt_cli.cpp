// tests/examples/test_interrupt_cli.cpp — SIGINT and SIGTERM keep the run:
// every trainer (the three recipes of `translate train`, and nw_regression)
// stops at a step boundary, writes its checkpoint and pictures as a set, says
// where it stopped and how to resume, and exits 130 or 143; `--resume` then
// ends with a checkpoint whose tensors (parameters and optimizer state) equal
// those of a run never interrupted, bit for bit; and a second signal during
// the save exits at once, leaving the previous checkpoint loadable.
//
// The signal comes at a known step: the programs read
// ATTOGRAD_TEST_INTERRUPT="<INT|TERM>@<N>[,again]" (examples/common/interrupt.hpp)
// and raise it to themselves after their N-th step, so nothing depends on
// timing. Runs are tiny (a few dozen pairs, sizes of 8) and take about a second.
#include <fmt/format.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "nn/safetensors.hpp"
#include "tests/support/translate_program.hpp"

namespace test_interrupt_cli {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

using namespace attograd::testing::translate_program;

const fs::path kNwBinary = fs::path(ATTOGRAD_BINARY_DIR) / "examples" / "nw_regression";

Run run_interrupted(const std::string& signal, const std::vector<std::string>& arguments,
                    const fs::path& scratch) {
  const attograd::testing::ScopedInterrupt interrupt(signal);
  return run(arguments, scratch);
}

std::vector<std::string> with(std::vector<std::string> arguments,
                              const std::vector<std::string>& more) {
  arguments.insert(arguments.end(), more.begin(), more.end());
  return arguments;
}

// Every tensor of two checkpoints (names, shapes and values) is the same.
void require_same_tensors(const fs::path& expected, const fs::path& actual) {
  const auto a = attograd::nn::read_safetensors(expected);
  const auto b = attograd::nn::read_safetensors(actual);
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    INFO(a.tensors[i].first);
    CHECK(a.tensors[i].first == b.tensors[i].first);
    CHECK(a.tensors[i].second.shape() == b.tensors[i].second.shape());
    CHECK(a.tensors[i].second.to_vector() == b.tensors[i].second.to_vector());
  }
}

// The first `count` short "I'm …" pairs of the shipped file (the tutorial's filter keeps them).
fs::path whole_line_data(const fs::path& folder, size_t count) {
  std::ifstream in(kShippedData);
  std::string text;
  size_t kept = 0;
  for (std::string line; kept < count && std::getline(in, line);) {
    const size_t tab = line.find('\t');
    if (line.rfind("I'm ", 0) != 0 || tab == std::string::npos || tab > 30) continue;
    const size_t end = line.find('\t', tab + 1);
    if ((end == std::string::npos ? line.size() : end) - tab > 40) continue;
    text += line + "\n";
    ++kept;
  }
  const fs::path path = folder / "pairs.tsv";
  write_file(path, text);
  return path;
}

std::vector<std::string> tutorial_train(const fs::path& data, const fs::path& out, int iterations) {
  return {"train",
          "--data",
          data.string(),
          "--out",
          out.string(),
          "--iters",
          std::to_string(iterations),
          "--hidden",
          "16",
          "--print-every",
          "10",
          "--plot-every",
          "5",
          "--examples",
          "1",
          "--validation",
          "0.1",
          "--lr",
          "0.1"};
}

// A batched or Transformer run of 3 epochs of 4 steps (48 pairs, batch 12),
// dropout on, so the dropout generators must be restored exactly too.
std::vector<std::string> batched_train(const std::string& recipe, const fs::path& out,
                                       int epochs = 3) {
  std::vector<std::string> arguments =
      recipe == "batched" ? quick_batched_train(out, epochs) : quick_transformer_train(out, epochs);
  return with(arguments, {"--num-examples", "48", "--batch", "12", "--dropout", "0.2",
                          "--lr-schedule", "step:1:0.5"});
}

}  // namespace

TEST_CASE("interrupt: the tutorial recipe stops on SIGINT or SIGTERM and resumes exactly",
          "[interrupt][translate][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path data = whole_line_data(scratch.path, 40);
  const fs::path straight = scratch.path / "straight";
  const Run whole = run(tutorial_train(data, straight, 30), scratch.path);
  INFO("stderr: " << whole.err);
  REQUIRE(whole.status == 0);

  for (const auto& [signal, step, status] : std::vector<std::tuple<std::string, int, int>>{
           {"INT", 1, 130}, {"TERM", 17, 143}, {"TERM", 29, 143}}) {
    DYNAMIC_SECTION(signal << " after iteration " << step) {
      const fs::path out = scratch.path / ("cut_" + signal + std::to_string(step));
      const Run cut = run_interrupted(signal + "@" + std::to_string(step),
                                      tutorial_train(data, out, 30), scratch.path);
      INFO("stdout: " << cut.out << "\nstderr: " << cut.err);
      CHECK(cut.status == status);
      CHECK_THAT(cut.out,
                 Contains(fmt::format("Interrupted at iteration {} of 30 by SIG{}", step, signal)));
      CHECK_THAT(cut.out, Contains("--resume " + (out / "checkpoint.safetensors").string()));
      REQUIRE(fs::exists(out / "checkpoint.safetensors"));
      CHECK(fs::exists(out / "loss.svg"));
      const Run resumed = run(with(tutorial_train(data, out, 30),
                                   {"--resume", (out / "checkpoint.safetensors").string()}),
                              scratch.path);
      INFO("resumed stderr: " << resumed.err);
      REQUIRE(resumed.status == 0);
      require_same_tensors(straight / "checkpoint.safetensors", out / "checkpoint.safetensors");
    }
  }
}

TEST_CASE(
    "interrupt: a second signal during the tutorial's save exits at once, keeping the "
    "last checkpoint",
    "[interrupt][translate][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path data = whole_line_data(scratch.path, 40);
  const fs::path out = scratch.path / "run";
  const Run cut = run_interrupted("TERM@15,again",
                                  with(tutorial_train(data, out, 30), {"--checkpoint-every", "10"}),
                                  scratch.path);
  INFO("stdout: " << cut.out << "\nstderr: " << cut.err);
  CHECK(cut.status == 143);
  CHECK_THAT(cut.out, !Contains("Interrupted at"));
  // The checkpoint of iteration 10 is whole, and continues to the straight run's end.
  const Run resumed = run(
      with(tutorial_train(data, out, 30), {"--resume", (out / "checkpoint.safetensors").string()}),
      scratch.path);
  INFO("resumed stderr: " << resumed.err);
  REQUIRE(resumed.status == 0);
  CHECK_THAT(resumed.out, Contains("at iteration 10"));
  const fs::path straight = scratch.path / "straight";
  REQUIRE(run(tutorial_train(data, straight, 30), scratch.path).status == 0);
  require_same_tensors(straight / "checkpoint.safetensors", out / "checkpoint.safetensors");
}

TEST_CASE("interrupt: the batched and Transformer recipes stop between steps and resume exactly",
          "[interrupt][translate][cli]") {
  if constexpr (!kFloatBuild) return;
  for (const std::string recipe : {"batched", "transformer"}) {
    DYNAMIC_SECTION(recipe) {
      TemporaryFolder scratch;
      const fs::path straight = scratch.path / "straight";
      const Run whole = run(batched_train(recipe, straight), scratch.path);
      INFO("stderr: " << whole.err);
      REQUIRE(whole.status == 0);
      // Mid-epoch (step 2 of epoch 1), at an epoch's end (step 4), and late in the last epoch.
      for (const auto& [signal, step, status] : std::vector<std::tuple<std::string, int, int>>{
               {"INT", 2, 130}, {"TERM", 4, 143}, {"INT", 11, 130}}) {
        const fs::path out = scratch.path / ("cut_" + signal + std::to_string(step));
        const Run cut = run_interrupted(signal + "@" + std::to_string(step),
                                        batched_train(recipe, out), scratch.path);
        INFO(signal << " after step " << step << "\nstdout: " << cut.out
                    << "\nstderr: " << cut.err);
        CHECK(cut.status == status);
        CHECK_THAT(
            cut.out,
            Contains(step % 4 == 0
                         ? fmt::format("Interrupted after epoch {} of 3 by SIG{}", step / 4, signal)
                         : fmt::format("Interrupted in epoch {} of 3, after its step {}, "
                                       "by SIG{}",
                                       step / 4 + 1, step % 4, signal)));
        REQUIRE(fs::exists(out / "checkpoint.safetensors"));
        CHECK(fs::exists(out / "loss.svg"));
        // Resumed with nothing but --resume, --epochs and --out (the settings are the
        // checkpoint's).
        const Run resumed =
            run({"train", "--recipe", recipe, "--resume", (out / "checkpoint.safetensors").string(),
                 "--epochs", "3", "--out", out.string()},
                scratch.path);
        INFO("resumed stderr: " << resumed.err);
        REQUIRE(resumed.status == 0);
        require_same_tensors(straight / "checkpoint.safetensors", out / "checkpoint.safetensors");
        CHECK(read_file(out / "loss.svg") == read_file(straight / "loss.svg"));
      }
    }
  }
}

TEST_CASE(
    "interrupt: --checkpoint-every saves the batched recipes' runs, and a second signal "
    "leaves that checkpoint",
    "[interrupt][translate][cli]") {
  if constexpr (!kFloatBuild) return;
  for (const std::string recipe : {"batched", "transformer"}) {
    DYNAMIC_SECTION(recipe) {
      TemporaryFolder scratch;
      const fs::path out = scratch.path / "run";
      // --replicas 2: each replica's dropout generator is saved as well.
      const std::vector<std::string> arguments =
          with(batched_train(recipe, out), {"--checkpoint-every", "1", "--replicas", "2"});
      const Run cut = run_interrupted("INT@6,again", arguments, scratch.path);
      INFO("stdout: " << cut.out << "\nstderr: " << cut.err);
      CHECK(cut.status == 130);
      CHECK_THAT(cut.out, !Contains("Interrupted at"));
      // Epoch 1's checkpoint (written by --checkpoint-every) is there, whole.
      const nlohmann::json progress =
          nlohmann::json::parse(attograd::nn::read_safetensors(out / "checkpoint.safetensors")
                                    .metadata.at("resume.progress"));
      CHECK(progress.at("epochs_done") == 1);
      CHECK(progress.at("batches_done") == 0);
      const Run resumed =
          run({"train", "--recipe", recipe, "--resume", (out / "checkpoint.safetensors").string(),
               "--epochs", "3", "--out", out.string()},
              scratch.path);
      INFO("resumed stderr: " << resumed.err);
      REQUIRE(resumed.status == 0);
      CHECK_THAT(resumed.out, Contains("after epoch 1 of 3"));
      const fs::path straight = scratch.path / "straight";
      REQUIRE(
          run(with(batched_train(recipe, straight), {"--replicas", "2"}), scratch.path).status ==
          0);
      require_same_tensors(straight / "checkpoint.safetensors", out / "checkpoint.safetensors");
    }
  }
}

TEST_CASE("interrupt: --resume refuses a checkpoint of another recipe",
          "[interrupt][translate][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "run";
  REQUIRE(run(batched_train("batched", out, 1), scratch.path).status == 0);
  const Run wrong =
      run({"train", "--recipe", "transformer", "--resume",
           (out / "checkpoint.safetensors").string(), "--out", (scratch.path / "other").string()},
          scratch.path);
  require_one_line_error(wrong);
  CHECK_THAT(wrong.err, Contains("--recipe batched"));
  CHECK_FALSE(fs::exists(scratch.path / "other"));
}

TEST_CASE("interrupt: nw_regression stops at an epoch and draws the state reached",
          "[interrupt][nw_regression][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const attograd::testing::Program nw(kNwBinary);
  SECTION("one run") {
    const fs::path out = scratch.path / "pictures";
    const attograd::testing::ScopedInterrupt interrupt("TERM@7");
    const Run cut = nw({"--epochs", "50", "--out", out.string()}, scratch.path);
    INFO("stdout: " << cut.out << "\nstderr: " << cut.err);
    CHECK(cut.status == 143);
    CHECK_THAT(cut.out, Contains("Interrupted at epoch 7 of 50 by SIGTERM"));
    CHECK_THAT(cut.out, Contains("epoch 7, loss"));
    CHECK_THAT(cut.out, !Contains("epoch 8,"));
    for (const char* picture : {"nw_loss.svg", "nw_fit_learned.svg", "nw_kernels.svg"}) {
      CHECK(fs::exists(out / picture));
    }
  }
  SECTION("many seeds") {
    const attograd::testing::ScopedInterrupt interrupt("INT@2");
    const Run cut = nw({"--seeds", "5", "--epochs", "5"}, scratch.path);
    INFO("stdout: " << cut.out << "\nstderr: " << cut.err);
    CHECK(cut.status == 130);
    CHECK_THAT(cut.out, Contains("seeds 0…1"));
    CHECK_THAT(cut.out, Contains("Interrupted after seed 2 of 5 by SIGINT"));
  }
  SECTION("a second signal while the pictures are written leaves the earlier ones") {
    const fs::path out = scratch.path / "pictures";
    REQUIRE(nw({"--epochs", "3", "--out", out.string()}, scratch.path).status == 0);
    const std::string before = read_file(out / "nw_loss.svg");
    const attograd::testing::ScopedInterrupt interrupt("INT@2,again");
    const Run cut = nw({"--epochs", "50", "--out", out.string()}, scratch.path);
    CHECK(cut.status == 130);
    CHECK(read_file(out / "nw_loss.svg") == before);
  }
}

}  // namespace test_interrupt_cli
