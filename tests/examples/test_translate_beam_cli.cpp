// tests/examples/test_translate_beam_cli.cpp — the decoding flags of
// `translate translate` and `translate eval` in every recipe: --beam K,
// --length-penalty and --nbest (examples/translate/beam_flags.hpp). A beam of
// 1 prints what the default prints; --nbest prints K ranked, scored lines per
// sentence; eval names its decoding and puts it in the --json summary; a bad
// value ends in one line "error: …" naming the flag, and exit status 2.
//
// Each case trains a tiny model for a second first. Like the other CLI tests
// it runs the built float program; in the double test binary the cases
// return at once.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/translate_program.hpp"

namespace test_translate_beam_cli {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

using namespace attograd::testing::translate_program;

// The fields of a --nbest line: line, rank, score, log-probability, translation.
std::vector<std::string> tab_fields(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (size_t tab = line.find('\t'); tab != std::string::npos; tab = line.find('\t', start)) {
    fields.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
  fields.push_back(line.substr(start));
  return fields;
}

// --nbest output of `sentences` input lines with a beam of K: K lines per
// sentence at most, ranked 1, 2, … with falling scores, each score
// log p / L^α no larger than 0.
void check_nbest(const std::string& out, int sentences, int K) {
  const std::vector<std::string> lines = lines_of(out);
  INFO("stdout: " << out);
  REQUIRE(!lines.empty());
  int previous_line = 0, previous_rank = 0;
  double previous_score = 0;
  for (const std::string& line : lines) {
    const std::vector<std::string> fields = tab_fields(line);
    REQUIRE(fields.size() == 5);
    const int number = std::stoi(fields[0]), rank = std::stoi(fields[1]);
    const double score = std::stod(fields[2]), log_probability = std::stod(fields[3]);
    CHECK(number >= 1);
    CHECK(number <= sentences);
    CHECK(score <= 0);
    CHECK(log_probability <= score);  // L^α ≥ 1
    if (number == previous_line) {
      CHECK(rank == previous_rank + 1);
      CHECK(score <= previous_score);
    } else {
      CHECK(number == previous_line + 1);
      CHECK(rank == 1);
    }
    CHECK(rank <= K);
    previous_line = number;
    previous_rank = rank;
    previous_score = score;
  }
  CHECK(previous_line == sentences);
}

void check_bad_flags(const std::vector<std::string>& command, const TemporaryFolder& scratch) {
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> arguments = command;
    arguments.insert(arguments.end(), more.begin(), more.end());
    return arguments;
  };
  const Run zero = run(with({"--beam", "0"}), scratch.path, "a\n");
  require_one_line_error(zero);
  CHECK_THAT(zero.err, Contains("--beam: expected a positive integer at most 64, got '0'"));
  const Run negative = run(with({"--length-penalty", "-0.5"}), scratch.path, "a\n");
  require_one_line_error(negative);
  CHECK_THAT(negative.err,
             Contains("--length-penalty: expected a non-negative number, got '-0.5'"));
  const Run not_a_number = run(with({"--length-penalty", "nan"}), scratch.path, "a\n");
  require_one_line_error(not_a_number);
  CHECK_THAT(not_a_number.err, Contains("--length-penalty: expected a finite number, got 'nan'"));
}

}  // namespace

TEST_CASE("translate: --beam, --length-penalty and --nbest, tutorial recipe", "[translate][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "run";
  const Run trained =
      run({"train", "--data", kShippedData.string(), "--out", out.string(), "--iters", "40",
           "--hidden", "8", "--print-every", "20", "--examples", "0", "--decoder", "bahdanau"},
          scratch.path);
  INFO("stderr: " << trained.err);
  REQUIRE(trained.status == 0);
  const std::string checkpoint = (out / "checkpoint.safetensors").string();
  const std::string input = "je suis fatigue .\nil est grand .\nnous sommes la .\n";

  const Run greedy = run({"translate", "--checkpoint", checkpoint}, scratch.path, input);
  const Run beam_one =
      run({"translate", "--checkpoint", checkpoint, "--beam", "1"}, scratch.path, input);
  REQUIRE(greedy.status == 0);
  CHECK(beam_one.status == 0);
  CHECK(beam_one.out == greedy.out);
  const Run beam = run({"translate", "--checkpoint", checkpoint, "--beam", "4", "--length-penalty",
                        "1", "--attention", (scratch.path / "maps").string()},
                       scratch.path, input);
  CHECK(beam.status == 0);
  CHECK(lines_of(beam.out).size() == 3);
  CHECK(parse_picture(scratch.path / "maps" / "attention_3.svg").well_formed);
  const Run nbest =
      run({"translate", "--checkpoint", checkpoint, "--beam", "4", "--nbest"}, scratch.path, input);
  CHECK(nbest.status == 0);
  check_nbest(nbest.out, 3, 4);

  const Run evaluated = run(
      {"eval", "--checkpoint", checkpoint, "--beam", "3", "--nbest", "--examples", "2", "--json"},
      scratch.path);
  INFO("eval stderr: " << evaluated.err);
  REQUIRE(evaluated.status == 0);
  const nlohmann::json summary = nlohmann::json::parse(lines_of(evaluated.out).back());
  CHECK(summary["beam"].get<int>() == 3);
  CHECK(summary["length_penalty"].get<double>() == 0.75);
  CHECK(summary["bleu"].get<double>() >= 0);
  CHECK_THAT(evaluated.err, Contains("decoding: beam search, K = 3, length penalty alpha = 0.75"));
  CHECK_THAT(evaluated.err, Contains("\n  1. "));
  CHECK_THAT(run({"eval", "--checkpoint", checkpoint, "--examples", "0"}, scratch.path).out,
             Contains("decoding: greedy decoding"));
  CHECK_THAT(run({"translate", "--help"}, scratch.path).out, Contains("--nbest"));

  check_bad_flags({"translate", "--checkpoint", checkpoint}, scratch);
  check_bad_flags({"eval", "--checkpoint", checkpoint}, scratch);
}

namespace {

// A recipe of the batched loop (batched, transformer) trained briefly with
// `model_flags`, then: --beam 1 is greedy, --beam 5 --nbest lists 5 per
// line, eval reports the beam, bad flags are refused.
void check_batched_loop_recipe(const std::string& recipe,
                               const std::vector<std::string>& model_flags) {
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "run";
  std::vector<std::string> train = {
      "train", "--recipe",   recipe,           "--data", kShippedData.string(),
      "--out", out.string(), "--num-examples", "64",     "--epochs",
      "3"};
  train.insert(train.end(), model_flags.begin(), model_flags.end());
  const Run trained = run(train, scratch.path);
  INFO("stderr: " << trained.err);
  REQUIRE(trained.status == 0);
  const std::string checkpoint = (out / "checkpoint.safetensors").string();
  const std::string input = "go .\ni'm home .\n";

  const Run greedy =
      run({"translate", "--recipe", recipe, "--checkpoint", checkpoint}, scratch.path, input);
  const Run beam_one =
      run({"translate", "--recipe", recipe, "--checkpoint", checkpoint, "--beam", "1"},
          scratch.path, input);
  REQUIRE(greedy.status == 0);
  CHECK(beam_one.out == greedy.out);
  const Run nbest =
      run({"translate", "--recipe", recipe, "--checkpoint", checkpoint, "--beam", "5", "--nbest"},
          scratch.path, input);
  CHECK(nbest.status == 0);
  check_nbest(nbest.out, 2, 5);

  const Run evaluated = run({"eval", "--recipe", recipe, "--checkpoint", checkpoint, "--beam", "5",
                             "--nbest", "--examples", "2", "--json"},
                            scratch.path);
  INFO("eval stderr: " << evaluated.err);
  REQUIRE(evaluated.status == 0);
  const nlohmann::json summary = nlohmann::json::parse(lines_of(evaluated.out).back());
  CHECK(summary["beam"].get<int>() == 5);
  CHECK_THAT(evaluated.err, Contains("decoding: beam search, K = 5"));
  CHECK_THAT(evaluated.err, Contains("\n  1. "));

  check_bad_flags({"translate", "--recipe", recipe, "--checkpoint", checkpoint}, scratch);
  check_bad_flags({"eval", "--recipe", recipe, "--checkpoint", checkpoint}, scratch);
}

}  // namespace

TEST_CASE("translate: --beam, --length-penalty and --nbest, batched recipe", "[translate][cli]") {
  if constexpr (!kFloatBuild) return;
  check_batched_loop_recipe("batched", {"--embed", "8", "--hidden", "8", "--lr", "0.02"});
}

TEST_CASE("translate: --beam, --length-penalty and --nbest, Transformer recipe",
          "[translate][cli]") {
  if constexpr (!kFloatBuild) return;
  check_batched_loop_recipe("transformer", {"--hidden", "8", "--heads", "2", "--ffn", "16"});
}

}  // namespace test_translate_beam_cli
