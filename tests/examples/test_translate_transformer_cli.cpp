// tests/examples/test_translate_transformer_cli.cpp — `translate --recipe
// transformer` as a user runs it: train (the --json summary, the checkpoint,
// the loss curve and one heatmap per head), translate and eval with the
// checkpoint, and bad input, which ends in one line "error: …" and exit
// status 2 with nothing written.
//
// Runs are short (64 pairs, a tiny model, a few epochs). Like the other CLI
// tests it runs the built float program; in the double test binary the cases
// return at once.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/translate_program.hpp"

namespace test_translate_transformer_cli {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

using namespace attograd::testing::translate_program;

std::vector<std::string> quick_train(const fs::path& out, int epochs) {
  return quick_transformer_train(out, epochs);
}

}  // namespace

TEST_CASE("translate transformer: train, then translate stdin and evaluate", "[translate][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "run";
  std::vector<std::string> arguments = quick_train(out, 2);
  arguments.push_back("--json");
  const Run trained = run(arguments, scratch.path);
  INFO("stderr: " << trained.err);
  REQUIRE(trained.status == 0);
  const std::vector<std::string> lines = lines_of(trained.out);
  REQUIRE(lines.size() == 1);
  const nlohmann::json summary = nlohmann::json::parse(lines[0]);
  CHECK(summary["recipe"] == "transformer");
  CHECK(summary["pairs"].get<int>() == 64);
  CHECK(summary["epochs"].get<int>() == 2);
  CHECK(summary["tokens_per_second"].get<double>() > 0);
  REQUIRE(summary["translations"].size() == 4);
  CHECK_THAT(trained.err, Contains("2 blocks, 2 heads, FFN 16"));
  CHECK_THAT(trained.err, Contains("epoch    2/2"));

  CHECK(parse_picture(out / "loss.svg").polyline_points == 2);
  for (const char* kind : {"encoder", "decoder_self", "decoder_cross"}) {
    for (int block = 1; block <= 2; ++block) {
      for (int head = 1; head <= 2; ++head) {
        const fs::path map = out / "attention" /
                             (std::string(kind) + "_block" + std::to_string(block) + "_head" +
                              std::to_string(head) + ".svg");
        INFO(map.string());
        const Picture picture = parse_picture(map);
        CHECK(picture.well_formed);
        CHECK(picture.has_colorbar);
        CHECK(picture.heatmap_cells >= 1);
      }
    }
  }
  // "i'm home ." has 3 words and <eos>: a 4 × 4 encoder map.
  const Picture encoder = parse_picture(out / "attention" / "encoder_block1_head1.svg");
  CHECK(encoder.heatmap_cells == 16);
  CHECK(encoder.has_text("home"));

  const fs::path checkpoint = out / "checkpoint.safetensors";
  const fs::path maps = scratch.path / "maps";
  const Run translated = run({"translate", "--recipe", "transformer", "--checkpoint",
                              checkpoint.string(), "--attention", maps.string()},
                             scratch.path, "I'm home.\nzorglub .\n");
  INFO("translate stderr: " << translated.err);
  CHECK(translated.status == 0);
  CHECK(lines_of(translated.out).size() == 2);
  CHECK_THAT(translated.err, Contains("stdin:2: 1 word not in the vocabulary became <unk>"));
  CHECK(parse_picture(maps / "attention_1.svg").well_formed);

  const Run evaluated = run({"eval", "--recipe", "transformer", "--checkpoint", checkpoint.string(),
                             "--offset", "600", "--num-examples", "20", "--json"},
                            scratch.path);
  INFO("eval stderr: " << evaluated.err);
  REQUIRE(evaluated.status == 0);
  const nlohmann::json scores = nlohmann::json::parse(lines_of(evaluated.out).at(0));
  CHECK(scores["recipe"] == "transformer");
  CHECK(scores["pairs"].get<int>() == 20);

  // A Transformer checkpoint is not the batched recipe's, and the other way round.
  const Run foreign =
      run({"eval", "--recipe", "batched", "--checkpoint", checkpoint.string()}, scratch.path);
  require_one_line_error(foreign);
  CHECK_THAT(foreign.err,
             Contains("is a checkpoint of the transformer recipe, not the batched one; use it "
                      "with --recipe transformer"));
}

TEST_CASE("translate transformer: bad input ends in one error line and exit status 2",
          "[translate][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "out";
  std::vector<std::string> arguments = quick_train(out, 1);
  arguments.insert(arguments.end(), {"--heads", "3"});
  const Run heads = run(arguments, scratch.path);
  require_one_line_error(heads);
  CHECK_THAT(heads.err, Contains("--heads 3 does not divide --hidden 8"));
  CHECK_FALSE(fs::exists(out));
  require_one_line_error(run({"train", "--recipe", "transformer", "--embed", "8"}, scratch.path));
  require_one_line_error(run({"train", "--recipe", "transformer", "--blocks", "0"}, scratch.path));
  require_one_line_error(run({"translate", "--recipe", "transformer", "--checkpoint",
                              (scratch.path / "none.safetensors").string()},
                             scratch.path, "go .\n"));
}

}  // namespace test_translate_transformer_cli
