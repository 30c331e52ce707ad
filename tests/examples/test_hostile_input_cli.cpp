// tests/examples/test_hostile_input_cli.cpp — the example programs against
// hostile input: runs that diverge (a non-finite loss, gradient norm or
// weight, or a loss over 100 times the first step's) stop with status 2 and
// leave the last good checkpoint (or pictures) untouched, output folders are
// checked before the work, checkpoints with NaN or absurd sizes are refused,
// stale temporary files of killed writers are cleaned up. Every failure is
// one line, status 2.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "examples/common/output_folder.hpp"
#include "nn/safetensors.hpp"
#include "tests/support/translate_program.hpp"

namespace test_hostile_input_cli {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using namespace attograd::testing::translate_program;

namespace {

const attograd::testing::Program nw_regression(fs::path(ATTOGRAD_BINARY_DIR) / "examples" /
                                               "nw_regression");

// The first `count` short "I'm …" pairs of the shipped data, which the
// tutorial's filter keeps.
std::vector<std::string> tutorial_train(const fs::path& data, const fs::path& out,
                                        const std::string& lr) {
  return {"train", "--data",        data.string(), "--out", out.string(), "--iters",
          "20",    "--hidden",      "8",           "--lr",  lr,           "--examples",
          "1",     "--print-every", "10"};
}

std::vector<std::string> batched_train(const fs::path& out, const std::string& lr) {
  std::vector<std::string> arguments = quick_batched_train(out, 3);
  arguments.back() = lr;  // --lr
  return arguments;
}

// Every file name in `folder`, to see that nothing was added or left behind.
std::vector<std::string> names_in(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Runs `good`, then `bad` into the same folder: the second must stop with one
// line containing every piece of `expected` and leave the first run's files
// byte for byte, with no temporary file added.
void check_diverged_run_keeps_files(const fs::path& scratch, const fs::path& out,
                                    const std::vector<std::string>& good,
                                    const std::vector<std::string>& bad,
                                    const std::vector<std::string>& expected) {
  const Run normal = run(good, scratch);
  INFO("stderr of the normal run: " << normal.err);
  REQUIRE(normal.status == 0);
  CHECK(normal.err.find("diverged") == std::string::npos);
  const std::string checkpoint = read_file(out / "checkpoint.safetensors");
  const std::string curve = read_file(out / "loss.svg");
  const std::vector<std::string> files = names_in(out);

  const Run diverged = run(bad, scratch);
  require_one_line_error(diverged);
  for (const std::string& piece : expected) CHECK_THAT(diverged.err, Contains(piece));
  CHECK(read_file(out / "checkpoint.safetensors") == checkpoint);
  CHECK(read_file(out / "loss.svg") == curve);
  CHECK(names_in(out) == files);
}

}  // namespace

TEST_CASE("A diverging run stops with status 2 and keeps the last good checkpoint",
          "[translate][cli][hostile]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "out";

  SECTION("tutorial recipe") {
    const fs::path data = tutorial_data(scratch.path, 30);
    check_diverged_run_keeps_files(
        scratch.path, out, tutorial_train(data, out, "0.05"), tutorial_train(data, out, "1e30"),
        {"training diverged at iteration ", "(learning rate 1e+30); stopped before writing, so '",
         "keeps the last good state; try a smaller --lr, e.g. 1e+29"});
  }
  SECTION("batched recipe") {
    // 1e39 is past float's range, so the first Adam step leaves non-finite
    // weights. (At 1e12 the loss grows to about 3e11 and stays finite: the
    // growth check's case, below.)
    check_diverged_run_keeps_files(scratch.path, out, batched_train(out, "0.02"),
                                   batched_train(out, "1e39"),
                                   {"training diverged at epoch ", "try a smaller --lr"});
  }
}

TEST_CASE("A loss that explodes but stays finite stops the run with status 2",
          "[translate][cli][hostile]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "out";
  const std::string kept = "stopped before writing, so '" +
                           (out / "checkpoint.safetensors").string() +
                           "' keeps the last good state; try a smaller --lr, e.g. ";

  SECTION("tutorial recipe") {
    // SGD at 1e6 takes the loss per word from about 3 to about 1e7 in the
    // first 10 iterations, and it stays finite.
    const fs::path data = tutorial_data(scratch.path, 30);
    check_diverged_run_keeps_files(
        scratch.path, out, tutorial_train(data, out, "0.05"), tutorial_train(data, out, "1e6"),
        {"error: training diverged at iteration 10: the loss is ",
         ", over 100 times the first step's ", " (learning rate 1e+06); " + kept + "100000"});
  }
  SECTION("batched recipe") {
    // Four batches an epoch: the loss of epoch 1 has exploded already, which
    // only the first step's loss (before any update) shows. At 1e12 it stays
    // finite in the AVX-512, AVX2 and scalar builds alike; at 1e20 the scalar
    // loops' gradients already turn NaN (the case of the test below).
    std::vector<std::string> bad = batched_train(out, "1e12");
    bad.insert(bad.end(), {"--batch", "16"});
    check_diverged_run_keeps_files(
        scratch.path, out, batched_train(out, "0.02"), bad,
        {"error: training diverged at epoch 1: the loss is ", ", over 100 times the first step's ",
         " (learning rate 1e+12); " + kept + "1e+11"});
  }
  SECTION("transformer recipe") {
    std::vector<std::string> bad = quick_transformer_train(out, 2);
    bad.insert(bad.end(), {"--lr", "1000"});
    check_diverged_run_keeps_files(
        scratch.path, out, quick_transformer_train(out, 2), bad,
        {"error: training diverged at epoch 2: the loss is ", ", over 100 times the first step's ",
         " (learning rate 1000); " + kept + "100"});
  }
}

TEST_CASE("A non-finite gradient norm stops the batched loop before the step with status 2",
          "[translate][cli][hostile]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "out";
  // Adam at 1e10 leaves the Transformer's weights finite after epoch 1, and
  // its loss and gradients NaN in epoch 2: clip_grad_norm throws.
  std::vector<std::string> bad = quick_transformer_train(out, 2);
  bad.insert(bad.end(), {"--lr", "1e10"});
  check_diverged_run_keeps_files(
      scratch.path, out, quick_transformer_train(out, 2), bad,
      {"error: training diverged at epoch 2: the gradient norm is nan (learning rate 1e+10); "
       "stopped before writing, so '" +
       (out / "checkpoint.safetensors").string() +
       "' keeps the last good state; try a smaller --lr, e.g. 1e+09"});
}

TEST_CASE("nw_regression stops at a non-finite loss and keeps the old pictures",
          "[nw_regression][cli][hostile]") {
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "pictures";
  REQUIRE(nw_regression({"--epochs", "5", "--out", out.string()}, scratch.path).status == 0);
  const std::vector<std::string> files = names_in(out);
  const std::string loss = read_file(out / "nw_loss.svg");

  const Run diverged =
      nw_regression({"--epochs", "5", "--lr", "1e308", "--out", out.string()}, scratch.path);
  require_one_line_error(diverged);
  CHECK_THAT(diverged.err, Contains("training diverged at epoch "));
  CHECK_THAT(diverged.err, Contains("try a smaller --lr"));
  CHECK(names_in(out) == files);
  CHECK(read_file(out / "nw_loss.svg") == loss);
}

TEST_CASE("Output folders are checked before the work, with the flag and the reason",
          "[translate][cli][hostile]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path file = scratch.path / "FILE";
  write_file(file, "a file");
  const fs::path data = tutorial_data(scratch.path, 30);

  const Run train = run(tutorial_train(data, file / "sub", "0.05"), scratch.path);
  require_one_line_error(train);
  CHECK_THAT(train.err, Contains("error: --out '" + (file / "sub").string() +
                                 "': cannot create the folder: '" + file.string() +
                                 "' is a file, not a folder"));
  CHECK_FALSE(train.err.find("filesystem error") != std::string::npos);

  const Run batched = run(batched_train(file / "sub", "0.02"), scratch.path);
  require_one_line_error(batched);
  CHECK_THAT(batched.err, Contains("--out '"));

  const Run maps = run({"translate", "--attention", (file / "maps").string()}, scratch.path, "");
  require_one_line_error(maps);
  CHECK_THAT(maps.err, Contains("error: --attention '"));
  CHECK(read_file(file) == "a file");

  const Run resume = run({"train", "--resume", ""}, scratch.path);
  require_one_line_error(resume);
  CHECK_THAT(resume.err, Contains("--resume: expected a value, got an empty string"));
}

TEST_CASE("Sizes from flags and checkpoints are bounded before anything is allocated",
          "[translate][cli][hostile]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const Run hidden = run({"train", "--hidden", "100000000"}, scratch.path);
  require_one_line_error(hidden);
  CHECK_THAT(hidden.err,
             Contains("--hidden: expected a positive integer at most 4096, got '100000000'"));
  const Run batch = run({"train", "--recipe", "batched", "--batch", "1000000"}, scratch.path);
  require_one_line_error(batch);
  CHECK_THAT(batch.err, Contains("--batch: expected a positive integer at most 4096"));

  // A batched checkpoint whose metadata claims a hidden size of 2^62.
  const fs::path out = scratch.path / "out";
  REQUIRE(run(batched_train(out, "0.02"), scratch.path).status == 0);
  attograd::nn::TensorFile file = attograd::nn::read_safetensors(out / "checkpoint.safetensors");
  file.metadata["hidden_size"] = "4611686018427387904";
  const fs::path edited = scratch.path / "edited.safetensors";
  attograd::nn::write_safetensors(edited, file);
  const Run refused = run({"translate", "--recipe", "batched", "--checkpoint", edited.string()},
                          scratch.path, "i'm home .\n");
  require_one_line_error(refused);
  CHECK_THAT(refused.err,
             Contains("error: '" + edited.string() +
                      "': the metadata says hidden_size 4611686018427387904 but its weight "
                      "encoder.rnn.weight_hh_l0 has shape (24,8), size 8 on axis 1; the file was "
                      "edited or damaged"));
  CHECK(refused.out.empty());

  // The same checkpoint with a NaN weight.
  file = attograd::nn::read_safetensors(out / "checkpoint.safetensors");
  file.tensors[0].second.data()[0] = std::numeric_limits<attograd::real>::quiet_NaN();
  attograd::nn::write_safetensors(edited, file);
  const Run nan = run({"translate", "--recipe", "batched", "--checkpoint", edited.string()},
                      scratch.path, "i'm home .\n");
  require_one_line_error(nan);
  CHECK_THAT(nan.err, Contains("holds nan at flat index 0"));
}

namespace {

// `checkpoint` with its metadata changed by `edit`, written to `edited`; then
// `translate translate` on it must fail with one line holding `expected`.
void check_refused(const fs::path& folder, const std::string& recipe, const fs::path& checkpoint,
                   const std::function<void(attograd::nn::Metadata&)>& edit,
                   const std::string& expected) {
  attograd::nn::TensorFile file = attograd::nn::read_safetensors(checkpoint);
  edit(file.metadata);
  const fs::path edited = folder / "edited.safetensors";
  attograd::nn::write_safetensors(edited, file);
  const Run refused = run({"translate", "--recipe", recipe, "--checkpoint", edited.string()},
                          folder, "i'm home .\n");
  require_one_line_error(refused);
  CHECK_THAT(refused.err,
             Contains("error: '" + edited.string() + "': the metadata says " + expected) &&
                 Contains("; the file was edited or damaged: retrain, or restore the "
                          "file"));
  CHECK(refused.out.empty());
}

}  // namespace

TEST_CASE("Every recipe checks its checkpoint's sizes against the weights in the file",
          "[translate][cli][hostile]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "out";
  const fs::path checkpoint = out / "checkpoint.safetensors";

  SECTION("tutorial") {
    const fs::path data = tutorial_data(scratch.path, 30);
    REQUIRE(run(tutorial_train(data, out, "0.05"), scratch.path).status == 0);
    const auto model_entry = [](const std::string& key, const nlohmann::json& value) {
      return [key, value](attograd::nn::Metadata& metadata) {
        nlohmann::json model = nlohmann::json::parse(metadata.at("seq2seq.model"));
        model[key] = value;
        metadata["seq2seq.model"] = model.dump();
      };
    };
    check_refused(scratch.path, "tutorial", checkpoint, model_entry("hidden_size", 100000),
                  "hidden_size 100000 but its weight encoder.embedding.weight has shape");
    check_refused(scratch.path, "tutorial", checkpoint, model_entry("max_length", 100000),
                  "max_length 100000 but its weight decoder.attn.weight has shape (10,16), size "
                  "10 on axis 0");
    check_refused(scratch.path, "tutorial", checkpoint, model_entry("dropout", 1.5),
                  "dropout 1.5, outside [0, 1)");
  }
  SECTION("batched") {
    REQUIRE(run(batched_train(out, "0.02"), scratch.path).status == 0);
    const auto entry = [](const std::string& key, const std::string& value) {
      return [key, value](attograd::nn::Metadata& metadata) { metadata[key] = value; };
    };
    check_refused(
        scratch.path, "batched", checkpoint, entry("num_layers", "1000000"),
        "num_layers 1000000 but the file holds weights for 2 (encoder.rnn.weight_ih_l<k>)");
    check_refused(scratch.path, "batched", checkpoint, entry("embed_size", "100000"),
                  "embed_size 100000 but its weight encoder.embedding.weight has shape");
    check_refused(scratch.path, "batched", checkpoint, entry("dropout", "-0.5"),
                  "dropout -0.5, outside [0, 1)");
  }
  SECTION("transformer") {
    REQUIRE(run(quick_transformer_train(out, 2), scratch.path).status == 0);
    const auto entry = [](const std::string& key, const std::string& value) {
      return [key, value](attograd::nn::Metadata& metadata) { metadata[key] = value; };
    };
    check_refused(scratch.path, "transformer", checkpoint, entry("num_hiddens", "100000"),
                  "num_hiddens 100000 but its weight encoder.embedding.weight has shape");
    check_refused(scratch.path, "transformer", checkpoint, entry("ffn_num_hiddens", "100000"),
                  "ffn_num_hiddens 100000 but its weight encoder.blks.block0.ffn.dense1.weight");
    check_refused(scratch.path, "transformer", checkpoint, entry("num_blocks", "1000"),
                  "num_blocks 1000 but the file holds weights for 2");
    check_refused(scratch.path, "transformer", checkpoint, entry("dropout", "1"),
                  "dropout 1, outside [0, 1)");
    check_refused(scratch.path, "transformer", checkpoint, entry("num_heads", "3"),
                  "num_heads 3, which does not divide num_hiddens 8");
  }
}

TEST_CASE("The next writer removes temporaries whose writer process has ended", "[cli][hostile]") {
  TemporaryFolder scratch;
  // pid 2^22 + 1 is above Linux's largest pid, so no process has it.
  const fs::path stale = scratch.path / "checkpoint.safetensors.attograd-tmp.4194305.3";
  const fs::path live = scratch.path / fmt::format("loss.svg.attograd-tmp.{}.0", ::getpid());
  const fs::path other = scratch.path / "notes.tmp.txt";
  for (const fs::path& path : {stale, live, other}) write_file(path, "x");
  attograd::cli::prepare_output_folder("--out", scratch.path);
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(live));   // this process is alive
  CHECK(fs::exists(other));  // not the project's pattern
  CHECK(names_in(scratch.path) ==
        std::vector<std::string>{live.filename().string(), "notes.tmp.txt"});
}

TEST_CASE("An output set that fails part way leaves the old files", "[cli][hostile]") {
  TemporaryFolder scratch;
  write_file(scratch.path / "a.svg", "old a");
  write_file(scratch.path / "b.svg", "old b");
  {
    attograd::cli::OutputSet set(scratch.path);
    write_file(set.staged("a.svg"), "new a");
    // b is never written: the producer failed, so commit() is never reached.
  }
  CHECK(read_file(scratch.path / "a.svg") == "old a");
  CHECK(names_in(scratch.path) == std::vector<std::string>{"a.svg", "b.svg"});
  {
    attograd::cli::OutputSet set(scratch.path);
    write_file(set.staged("a.svg"), "new a");
    write_file(set.staged("b.svg"), "new b");
    set.commit();
  }
  CHECK(read_file(scratch.path / "a.svg") == "new a");
  CHECK(read_file(scratch.path / "b.svg") == "new b");
  CHECK(names_in(scratch.path) == std::vector<std::string>{"a.svg", "b.svg"});
}

}  // namespace test_hostile_input_cli
