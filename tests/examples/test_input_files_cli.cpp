// tests/examples/test_input_files_cli.cpp — the programs against hostile
// files, folders and text:
//   - every output folder keeps a user's files that merely look like
//     temporaries ("thesis.tmp.2023.docx"); only a stale temporary of the
//     project's own pattern ("<name>.attograd-tmp.<pid>.<tag>") is removed;
//   - only regular files are read as data: a device, a FIFO, a socket or a
//     folder is refused in one line naming it, whether the path comes from
//     --data or from a checkpoint's metadata, and nothing hangs;
//   - user text in warnings and in eval's examples is escaped and cut.
// The runs that could hang before the fix run under `timeout`, so a
// regression fails the case rather than stopping the suite; no time is
// asserted.
#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nn/safetensors.hpp"
#include "tests/support/socket_file.hpp"
#include "tests/support/translate_program.hpp"

namespace test_input_files_cli {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using namespace attograd::testing::translate_program;

using attograd::testing::make_socket;

namespace {

const attograd::testing::Program nw_regression(fs::path(ATTOGRAD_BINARY_DIR) / "examples" /
                                               "nw_regression");
const attograd::testing::Program higher_order(fs::path(ATTOGRAD_BINARY_DIR) / "examples" /
                                              "higher_order");
const attograd::testing::Program timeout("/usr/bin/timeout");

// `translate` with `arguments`, killed after 300 s (status 124) if it hangs.
Run run_guarded(const std::vector<std::string>& arguments, const fs::path& scratch,
                const std::string& input = "") {
  std::vector<std::string> command = {"300", kBinary.string()};
  command.insert(command.end(), arguments.begin(), arguments.end());
  return timeout(command, scratch, input);
}

// Users' files that an older cleanup took for stale temporaries (the last one
// has the project's own old pattern, "<name>.tmp.<pid>.<n>").
const std::vector<std::string> kLookAlikes = {"thesis.tmp.2023.docx", "IMG.tmp.31337.jpg",
                                              "budget.tmp.4242.xlsx",
                                              "checkpoint.safetensors.tmp.4194305.3"};
// A temporary of ours whose writer has ended: pid 2^22 + 1 is above Linux's
// largest pid, so no process has it.
const std::string kStaleTemporary = "loss.svg.attograd-tmp.4194305.7";

void seed_folder(const fs::path& folder) {
  fs::create_directories(folder);
  for (const std::string& name : kLookAlikes) write_file(folder / name, "the user's " + name);
  write_file(folder / kStaleTemporary, "half a picture");
}

void check_folder(const fs::path& folder) {
  INFO("folder " << folder.string());
  for (const std::string& name : kLookAlikes) {
    INFO(name);
    CHECK(read_file(folder / name) == "the user's " + name);
  }
  CHECK_FALSE(fs::exists(folder / kStaleTemporary));
}

// The first `count` short "I'm …" pairs of the shipped data, which the
// tutorial's filter keeps.
std::vector<std::string> tutorial_train(const fs::path& data, const fs::path& out) {
  return {"train",    "--data", data.string(), "--out", out.string(),    "--iters", "10",
          "--hidden", "8",      "--examples",  "1",     "--print-every", "5"};
}

// The inputs that are not regular files, with what the refusal says of each.
struct NotAFile {
  std::string path;
  std::string says;
};
std::vector<NotAFile> not_files(const fs::path& scratch) {
  const fs::path fifo = scratch / "pipe.tsv", socket = scratch / "socket.tsv";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);  // no writer: a blocking open waits forever
  make_socket(socket);
  fs::create_directories(scratch / "folder.tsv");
  return {{"/dev/zero", "is a character device, not a regular file"},
          {"/dev/full", "is a character device, not a regular file"},
          {fifo.string(), "is a FIFO (named pipe), not a regular file"},
          {socket.string(), "is a socket, not a regular file"},
          {(scratch / "folder.tsv").string(), "is a folder, not a file"}};
}

void check_refused(const Run& result, const NotAFile& input) {
  INFO("input " << input.path);
  require_one_line_error(result);
  CHECK_THAT(result.err, Contains("error: read_pairs: '" + input.path + "' " + input.says) &&
                             Contains("the pairs ship as data/eng-fra.tsv"));
  CHECK(result.out.empty());
}

// `checkpoint` with its metadata changed by `edit`, written to `edited`.
fs::path edited_checkpoint(const fs::path& checkpoint, const fs::path& edited,
                           const std::function<void(attograd::nn::Metadata&)>& edit) {
  attograd::nn::TensorFile file = attograd::nn::read_safetensors(checkpoint);
  edit(file.metadata);
  attograd::nn::write_safetensors(edited, file);
  return edited;
}

}  // namespace

TEST_CASE("Every output folder keeps users' files that look like temporaries", "[inputs][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "out", maps = scratch.path / "maps";
  const std::string input = "i m home .\ngo .\n";

  SECTION("nw_regression --out") {
    seed_folder(out);
    REQUIRE(nw_regression({"--epochs", "5", "--out", out.string()}, scratch.path).status == 0);
    check_folder(out);
  }
  SECTION("higher_order --out") {
    seed_folder(out);
    const Run result = higher_order({"--out", out.string(), "--penalty-steps", "20"}, scratch.path);
    INFO("stderr: " << result.err);
    REQUIRE(result.status == 0);
    check_folder(out);
  }
  SECTION("translate, tutorial recipe: train --out and translate --attention") {
    seed_folder(out);
    const Run trained = run(tutorial_train(tutorial_data(scratch.path, 30), out), scratch.path);
    INFO("stderr: " << trained.err);
    REQUIRE(trained.status == 0);
    check_folder(out);
    seed_folder(maps);
    REQUIRE(run({"translate", "--checkpoint", (out / "checkpoint.safetensors").string(),
                 "--attention", maps.string()},
                scratch.path, input)
                .status == 0);
    check_folder(maps);
    CHECK(fs::exists(maps / "attention_1.svg"));
  }
  SECTION("translate, batched and Transformer recipes: train --out and translate --attention") {
    for (const std::string recipe : {"batched", "transformer"}) {
      INFO("recipe " << recipe);
      const fs::path folder = out / recipe, pictures = maps / recipe;
      seed_folder(folder);
      const Run trained = run(
          recipe == "batched" ? quick_batched_train(folder, 1) : quick_transformer_train(folder, 1),
          scratch.path);
      INFO("stderr: " << trained.err);
      REQUIRE(trained.status == 0);
      check_folder(folder);
      seed_folder(pictures);
      REQUIRE(run({"translate", "--recipe", recipe, "--checkpoint",
                   (folder / "checkpoint.safetensors").string(), "--attention", pictures.string()},
                  scratch.path, input)
                  .status == 0);
      check_folder(pictures);
      CHECK(fs::exists(pictures / "attention_1.svg"));
    }
  }
}

TEST_CASE("Only regular files are read as data, from a flag or from checkpoint metadata",
          "[inputs][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const std::vector<NotAFile> inputs = not_files(scratch.path);
  const fs::path out = scratch.path / "out";
  const fs::path checkpoint = out / "checkpoint.safetensors";
  const fs::path edited = scratch.path / "edited.safetensors";

  SECTION("tutorial recipe") {
    for (const NotAFile& input : inputs) {
      check_refused(run_guarded(tutorial_train(input.path, scratch.path / "refused"), scratch.path),
                    input);
    }
    REQUIRE(run(tutorial_train(tutorial_data(scratch.path, 30), out), scratch.path).status == 0);
    for (const NotAFile& input : inputs) {
      check_refused(run_guarded({"eval", "--checkpoint", checkpoint.string(), "--data", input.path},
                                scratch.path),
                    input);
      // No flag names the file: the checkpoint's seq2seq.data.path does.
      edited_checkpoint(checkpoint, edited, [&](attograd::nn::Metadata& metadata) {
        nlohmann::json data = nlohmann::json::parse(metadata.at("seq2seq.data"));
        data["path"] = input.path;
        metadata["seq2seq.data"] = data.dump();
      });
      check_refused(run_guarded({"eval", "--checkpoint", edited.string()}, scratch.path), input);
    }
  }
  SECTION("batched and Transformer recipes") {
    for (const std::string recipe : {"batched", "transformer"}) {
      INFO("recipe " << recipe);
      for (const NotAFile& input : inputs) {
        std::vector<std::string> train = recipe == "batched"
                                             ? quick_batched_train(scratch.path / "refused", 1)
                                             : quick_transformer_train(scratch.path / "refused", 1);
        train[4] = input.path;  // the value of --data
        check_refused(run_guarded(train, scratch.path), input);
      }
      const Run trained =
          run(recipe == "batched" ? quick_batched_train(out, 1) : quick_transformer_train(out, 1),
              scratch.path);
      REQUIRE(trained.status == 0);
      for (const NotAFile& input : inputs) {
        check_refused(run_guarded({"eval", "--recipe", recipe, "--checkpoint", checkpoint.string(),
                                   "--data", input.path},
                                  scratch.path),
                      input);
        // No flag names the file: the checkpoint's "data" does.
        edited_checkpoint(checkpoint, edited,
                          [&](attograd::nn::Metadata& metadata) { metadata["data"] = input.path; });
        check_refused(run_guarded({"eval", "--recipe", recipe, "--checkpoint", edited.string()},
                                  scratch.path),
                      input);
      }
    }
  }
}

TEST_CASE("A 10 MB unknown word gives a warning of a few hundred bytes", "[inputs][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "out";
  const std::string checkpoint = (out / "checkpoint.safetensors").string();
  const std::string word(10'000'000, 'q');

  SECTION("tutorial recipe") {
    REQUIRE(run(tutorial_train(tutorial_data(scratch.path, 30), out), scratch.path).status == 0);
    const Run result =
        run({"translate", "--checkpoint", checkpoint}, scratch.path, "i m " + word + " .\n");
    INFO("stderr: " << result.err.substr(0, 2000));
    CHECK(result.status == 0);
    CHECK(result.err.size() < 1000);
    // The word is quoted cut to its first 80 bytes.
    CHECK_THAT(result.err, Contains("warning: stdin:1: ") && Contains(" mapped to <unk>: ") &&
                               Contains("'" + std::string(80, 'q') + "…'\n"));
  }
  SECTION("batched recipe") {
    REQUIRE(run(quick_batched_train(out, 1), scratch.path).status == 0);
    const Run result = run({"translate", "--recipe", "batched", "--checkpoint", checkpoint},
                           scratch.path, "go " + word + " .\n");
    INFO("stderr: " << result.err.substr(0, 2000));
    CHECK(result.status == 0);
    CHECK(result.err.size() < 1000);
  }
}

TEST_CASE("eval prints data-file text with control characters escaped", "[inputs][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "out";
  const fs::path data = scratch.path / "escapes.tsv";
  // An ESC (clear the screen) in the English and in the French sentence.
  write_file(data, "Go \x1b[2J now.\tVa \x1b[2J !\n");
  for (const std::string recipe : {"batched", "transformer"}) {
    INFO("recipe " << recipe);
    REQUIRE(run(recipe == "batched" ? quick_batched_train(out, 1) : quick_transformer_train(out, 1),
                scratch.path)
                .status == 0);
    const Run result =
        run({"eval", "--recipe", recipe, "--checkpoint", (out / "checkpoint.safetensors").string(),
             "--data", data.string(), "--examples", "1"},
            scratch.path);
    INFO("stdout: " << result.out);
    INFO("stderr: " << result.err);
    CHECK(result.status == 0);
    CHECK(result.out.find('\x1b') == std::string::npos);
    CHECK(result.err.find('\x1b') == std::string::npos);
    CHECK_THAT(result.out, Contains("> go \\x1b[2j now .") && Contains("= va \\x1b[2j !"));
  }
}

}  // namespace test_input_files_cli
