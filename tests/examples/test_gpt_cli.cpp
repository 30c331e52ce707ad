// tests/examples/test_gpt_cli.cpp — the `gpt` program end to end, on tiny
// models and texts the test writes: train's --json line, an exact resume
// (also after Ctrl-C), sample with and without the KV cache, and every bad
// input as exit status 2 and one line. Runs the built float program; in the
// double test binary the cases return at once.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "tensor/tensor.hpp"
#include "tests/support/program.hpp"

namespace test_gpt_cli {

namespace fs = std::filesystem;
using attograd::testing::ProgramRun;
using attograd::testing::TemporaryFolder;
using Catch::Matchers::Contains;

namespace {

constexpr bool kFloatBuild = std::is_same_v<attograd::real, float>;
const attograd::testing::Program run(fs::path(ATTOGRAD_BINARY_DIR) / "examples" / "gpt");

// A text of a few thousand characters with structure to learn.
std::string sample_text() {
  std::string text;
  for (int i = 0; i < 200; ++i) text += i % 3 == 0 ? "le chat dort. " : "un été à paris.\n";
  return text;
}

std::vector<std::string> tiny_train(const fs::path& data, const fs::path& out, int iters) {
  return {"train",
          "--data",
          data.string(),
          "--out",
          out.string(),
          "--iters",
          std::to_string(iters),
          "--batch",
          "4",
          "--block",
          "16",
          "--layers",
          "1",
          "--heads",
          "2",
          "--embd",
          "16",
          "--warmup",
          "2",
          "--decay-iters",
          "20",
          "--eval-every",
          "5",
          "--json"};
}

nlohmann::json last_json_line(const std::string& out) {
  const size_t end = out.find_last_not_of('\n');
  const size_t start = out.rfind('\n', end);
  return nlohmann::json::parse(out.substr(start == std::string::npos ? 0 : start + 1));
}

}  // namespace

TEST_CASE("gpt train: the JSON line, an exact resume, and sample with or without the cache",
          "[gpt][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path data = scratch.path / "text.txt";
  attograd::testing::write_file(data, sample_text());

  const ProgramRun whole = run(tiny_train(data, scratch.path / "whole", 20), scratch.path);
  INFO("stderr: " << whole.err);
  REQUIRE(whole.status == 0);
  const nlohmann::json summary = last_json_line(whole.out);
  CHECK(summary["iterations"] == 20);
  for (const char* key : {"train_loss", "val_loss", "tokens_per_second"}) {
    CHECK(summary[key].get<double>() > 0);
  }
  CHECK(summary["val_loss"].get<double>() < 3.0);  // below ln of the ~17 characters
  CHECK(fs::exists(scratch.path / "whole" / "loss.svg"));
  // Every block's and head's causal attention over a sample: 1 block x 2 heads.
  const std::string page = attograd::testing::read_file(scratch.path / "whole" / "report.html");
  size_t maps = 0;
  for (size_t at = page.find("<figure class=\"map\""); at != std::string::npos;
       at = page.find("<figure class=\"map\"", at + 1)) {
    ++maps;
  }
  CHECK(maps == 2);
  CHECK(page.find("data-kind=\"causal self\"") != std::string::npos);

  // 10 iterations, then 10 more from the checkpoint: the same weights, so
  // the same validation loss to the last digit.
  REQUIRE(run(tiny_train(data, scratch.path / "halves", 10), scratch.path).status == 0);
  std::vector<std::string> resume = tiny_train(data, scratch.path / "halves", 20);
  resume.insert(resume.end(),
                {"--resume", (scratch.path / "halves" / "checkpoint.safetensors").string()});
  const ProgramRun resumed = run(resume, scratch.path);
  INFO("stderr: " << resumed.err);
  REQUIRE(resumed.status == 0);
  CHECK(last_json_line(resumed.out)["val_loss"] == summary["val_loss"]);

  // Ctrl-C after 7 iterations keeps a checkpoint that resumes to the same end.
  {
    const attograd::testing::ScopedInterrupt interrupt("INT@7");
    const ProgramRun stopped = run(tiny_train(data, scratch.path / "stopped", 20), scratch.path);
    CHECK(stopped.status == 130);
    CHECK_THAT(stopped.err, Contains("--resume"));
  }
  std::vector<std::string> again = tiny_train(data, scratch.path / "stopped", 20);
  again.insert(again.end(),
               {"--resume", (scratch.path / "stopped" / "checkpoint.safetensors").string()});
  const ProgramRun finished = run(again, scratch.path);
  REQUIRE(finished.status == 0);
  CHECK(last_json_line(finished.out)["val_loss"] == summary["val_loss"]);

  const std::string checkpoint = (scratch.path / "whole" / "checkpoint.safetensors").string();
  const std::vector<std::string> sample = {
      "sample", "--checkpoint", checkpoint, "--prompt", "le ", "--tokens", "60", "--seed", "3"};
  const ProgramRun cached = run(sample, scratch.path);
  INFO("stderr: " << cached.err);
  REQUIRE(cached.status == 0);
  CHECK(cached.out.rfind("le ", 0) == 0);
  std::vector<std::string> recompute = sample;
  recompute.push_back("--no-kv-cache");
  CHECK(run(recompute, scratch.path).out == cached.out);
}

TEST_CASE("gpt: bad input is exit status 2 and one line naming it", "[gpt][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const auto refused = [&](const std::vector<std::string>& arguments, const std::string& part) {
    const ProgramRun result = run(arguments, scratch.path);
    INFO("arguments: " << arguments.back() << "; stderr: " << result.err);
    attograd::testing::require_one_line_error(result);
    CHECK_THAT(result.err, Contains(part));
  };
  const fs::path empty = scratch.path / "empty.txt", short_text = scratch.path / "short.txt",
                 binary = scratch.path / "binary.bin", latin1 = scratch.path / "latin1.txt",
                 good = scratch.path / "good.txt";
  attograd::testing::write_file(empty, "");
  attograd::testing::write_file(short_text, "abc abc abc");
  attograd::testing::write_file(binary, std::string("ab\0cd", 5));
  attograd::testing::write_file(latin1, "caf\xe9 au lait");
  attograd::testing::write_file(good, sample_text());
  const fs::path out = scratch.path / "run";
  refused(tiny_train(empty, out, 5), "is empty");
  refused(tiny_train(short_text, out, 5), "give a text of at least 170 characters");
  refused(tiny_train(binary, out, 5), "NUL byte at byte 2");
  refused(tiny_train(latin1, out, 5), "not UTF-8 at byte 3");
  refused({"train", "--data", good.string(), "--block", "0"}, "--block");
  refused({"train", "--data", good.string(), "--layers", "65"}, "--layers");
  refused({"train", "--data", good.string(), "--heads", "3", "--embd", "16", "--out", out.string()},
          "n_head 3 does not divide n_embd 16");
  refused({"train", "--data", good.string(), "--out", good.string()}, "--out");

  REQUIRE(run(tiny_train(good, out, 2), scratch.path).status == 0);
  const std::string checkpoint = (out / "checkpoint.safetensors").string();
  refused({"sample", "--checkpoint", checkpoint, "--prompt", "xyz"},
          "--prompt: Vocabulary: character 1 'x' is not in the model's vocabulary");
  refused({"sample", "--checkpoint", checkpoint, "--tokens", "0"}, "--tokens");
  refused({"sample", "--checkpoint", good.string()}, "good.txt");
  refused({"sample", "--checkpoint", checkpoint, "--prompt", ""}, "--prompt: expected a value");
}

}  // namespace test_gpt_cli
