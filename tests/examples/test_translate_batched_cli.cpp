// tests/examples/test_translate_batched_cli.cpp — `translate --recipe batched`
// as a user runs it: --help lists the batched flags; train (progress lines,
// the --json summary with tokens per second, the checkpoint, the loss curve
// and the attention heatmap); translate (stdin to stdout, warnings, one
// --attention heatmap per sentence); eval (BLEU on the training pairs and on
// pairs after an offset); and bad input, which must end in one line
// "error: …" and exit status 2 with nothing written.
//
// Runs are short (64 pairs, a tiny model, a few epochs) so each takes about a
// second. Like test_translate_cli.cpp it runs the built float program
// ATTOGRAD_BINARY_DIR/examples/translate; in the double test binary the cases
// return at once.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/translate_program.hpp"

namespace test_translate_batched_cli {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

using namespace attograd::testing::translate_program;

std::vector<std::string> quick_train(const fs::path& out, int epochs) {
  return quick_batched_train(out, epochs);
}

std::vector<std::string> with(std::vector<std::string> arguments,
                              const std::vector<std::string>& more) {
  arguments.insert(arguments.end(), more.begin(), more.end());
  return arguments;
}

}  // namespace

TEST_CASE("translate batched: --help lists the batched recipe's flags", "[translate][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const Run help = run({"train", "--recipe", "batched", "--help"}, scratch.path);
  INFO("stderr: " << help.err);
  CHECK(help.status == 0);
  for (const char* flag :
       {"--recipe", "--num-examples", "--min-freq", "--num-steps", "--embed", "--layers", "--batch",
        "--epochs", "--clip", "--threads", "--attention-sentence", "--json"}) {
    CHECK_THAT(help.out, Contains(flag));
  }
  CHECK_THAT(run({"translate", "--recipe", "batched", "--help"}, scratch.path).out,
             Contains("--attention"));
  CHECK_THAT(run({"eval", "--recipe", "batched", "--help"}, scratch.path).out,
             Contains("--offset"));
}

TEST_CASE("translate batched: train, then translate stdin and evaluate", "[translate][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "run";

  const Run trained = run(with(quick_train(out, 3), {"--json"}), scratch.path);
  INFO("stderr: " << trained.err);
  REQUIRE(trained.status == 0);
  // --json: one line on stdout, the report on stderr.
  const std::vector<std::string> lines = lines_of(trained.out);
  REQUIRE(lines.size() == 1);
  const nlohmann::json summary = nlohmann::json::parse(lines[0]);
  CHECK(summary["recipe"] == "batched");
  CHECK(summary["pairs"].get<int>() == 64);
  CHECK(summary["epochs"].get<int>() == 3);
  CHECK(summary["source_vocabulary"].get<int>() > 4);
  CHECK(summary["target_vocabulary"].get<int>() > 4);
  CHECK(summary["tokens_per_second"].get<double>() > 0);
  CHECK(summary["ms_per_epoch"].get<double>() > 0);
  CHECK(std::isfinite(summary["final_loss"].get<double>()));
  CHECK(summary["final_loss"].get<double>() > 0);
  REQUIRE(summary["translations"].size() == 4);
  CHECK(summary["translations"][0]["source"] == "go .");
  CHECK(summary["translations"][3]["reference"] == "je suis chez moi .");
  CHECK(summary["train_corpus_bleu"].get<double>() >= 0);
  CHECK(summary["train_corpus_bleu"].get<double>() <= 1);
  CHECK_THAT(trained.err, Contains("training on the first 64 pairs"));
  CHECK_THAT(trained.err, Contains("epoch    1/3"));
  CHECK_THAT(trained.err, Contains("epoch    3/3"));
  CHECK_THAT(trained.err, Contains("tokens/s"));
  CHECK_THAT(trained.err, Contains("i'm home . => "));

  // The pictures: one loss point per epoch; the heatmap of "i'm home ." has
  // its 4 source columns (3 words and <eos>) and a colour bar.
  const Picture loss = parse_picture(out / "loss.svg");
  CHECK(loss.well_formed);
  CHECK(loss.polyline_points == 3);
  const Picture attention = parse_picture(out / "attention.svg");
  CHECK(attention.well_formed);
  CHECK(attention.heatmap_cells >= 4);
  CHECK(attention.heatmap_cells % 4 == 0);
  CHECK(attention.has_text("home"));
  CHECK(attention.has_text("<eos>"));
  CHECK(attention.has_colorbar);
  const fs::path checkpoint = out / "checkpoint.safetensors";
  REQUIRE(fs::exists(checkpoint));

  // translate: one output line per input line, warnings on stderr, one map per sentence.
  const fs::path maps = scratch.path / "maps";
  const Run translated = run({"translate", "--recipe", "batched", "--checkpoint",
                              checkpoint.string(), "--attention", maps.string()},
                             scratch.path, "I'm home.\nzorglub .\n\xff\xfe\n");
  INFO("translate stderr: " << translated.err);
  CHECK(translated.status == 0);
  CHECK(lines_of(translated.out).size() == 3);
  CHECK_THAT(translated.err, Contains("stdin:2: 1 word not in the vocabulary became <unk>"));
  CHECK_THAT(translated.err, Contains("stdin:3: invalid UTF-8"));
  const Picture first = parse_picture(maps / "attention_1.svg");
  CHECK(first.well_formed);
  CHECK(first.has_text("home"));  // preprocessed like the training data: "i'm home ."
  CHECK(parse_picture(maps / "attention_2.svg").well_formed);
  CHECK_FALSE(fs::exists(maps / "attention_3.svg"));

  // eval: on the training pairs by default, then on 20 pairs never seen.
  const Run evaluated =
      run({"eval", "--recipe", "batched", "--checkpoint", checkpoint.string(), "--examples", "2"},
          scratch.path);
  INFO("eval stderr: " << evaluated.err);
  CHECK(evaluated.status == 0);
  CHECK_THAT(evaluated.out, Contains("BLEU-4"));
  CHECK_THAT(evaluated.out, Contains("pairs 0..64"));
  CHECK_THAT(evaluated.out, Contains("\n> "));
  CHECK_THAT(evaluated.out, Contains("\n= "));
  CHECK_THAT(evaluated.out, Contains("\n< "));
  const Run unseen = run({"eval", "--recipe", "batched", "--checkpoint", checkpoint.string(),
                          "--offset", "600", "--num-examples", "20", "--json"},
                         scratch.path);
  INFO("eval --json stderr: " << unseen.err);
  REQUIRE(unseen.status == 0);
  REQUIRE(lines_of(unseen.out).size() == 1);
  const nlohmann::json scores = nlohmann::json::parse(lines_of(unseen.out)[0]);
  CHECK(scores["pairs"].get<int>() == 20);
  CHECK(scores["bleu"].get<double>() >= 0);
  CHECK(scores["bleu"].get<double>() <= 1);
  CHECK(scores["unknown_words"].get<int>() > 0);  // a 64-pair vocabulary misses most words
}

TEST_CASE("translate batched: bad input ends in one error line and exit status 2",
          "[translate][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "out";

  SECTION("a missing data file") {
    const Run result = run(
        with(quick_train(out, 1), {"--data", (scratch.path / "nope.tsv").string()}), scratch.path);
    require_one_line_error(result);
    CHECK_THAT(result.err, Contains("nope.tsv"));
    CHECK_FALSE(fs::exists(out));
  }
  SECTION("a data file without one usable pair") {
    const fs::path empty = scratch.path / "empty.tsv";
    write_file(empty, "");
    const Run result = run(with(quick_train(out, 1), {"--data", empty.string()}), scratch.path);
    require_one_line_error(result);
    CHECK_THAT(result.err, Contains("empty.tsv") && Contains("no sentence pairs left"));
    CHECK_FALSE(fs::exists(out));
    // Lines without a tab are skipped with a warning each; the error comes last.
    const fs::path untabbed = scratch.path / "untabbed.tsv";
    write_file(untabbed, "no tab on this line\n");
    const Run skipped = run(with(quick_train(out, 1), {"--data", untabbed.string()}), scratch.path);
    INFO("stderr: " << skipped.err);
    CHECK(skipped.status == 2);
    CHECK_THAT(skipped.err, Contains("untabbed.tsv:1: no tab"));
    REQUIRE_FALSE(lines_of(skipped.err).empty());
    CHECK(lines_of(skipped.err).back().rfind("error: ", 0) == 0);
    CHECK_FALSE(fs::exists(out));
  }
  SECTION("a damaged, missing or foreign checkpoint") {
    const fs::path broken = scratch.path / "broken.safetensors";
    write_file(broken, "not a safetensors file");
    const Run damaged = run({"translate", "--recipe", "batched", "--checkpoint", broken.string()},
                            scratch.path, "go .\n");
    require_one_line_error(damaged);
    CHECK_THAT(damaged.err, Contains("broken.safetensors"));
    const Run missing = run({"eval", "--recipe", "batched", "--checkpoint",
                             (scratch.path / "none.safetensors").string()},
                            scratch.path);
    require_one_line_error(missing);
    CHECK_THAT(missing.err, Contains("none.safetensors"));
    // A batched checkpoint read by the tutorial recipe, which expects other metadata.
    REQUIRE(run(quick_train(out, 1), scratch.path).status == 0);
    const Run foreign =
        run({"translate", "--checkpoint", (out / "checkpoint.safetensors").string()}, scratch.path,
            "go .\n");
    require_one_line_error(foreign);
    CHECK_THAT(foreign.err, Contains("checkpoint.safetensors"));
    // An offset past the end of the data leaves nothing to evaluate.
    const Run past = run({"eval", "--recipe", "batched", "--checkpoint",
                          (out / "checkpoint.safetensors").string(), "--offset", "100000"},
                         scratch.path);
    require_one_line_error(past);
    CHECK_THAT(past.err, Contains("from pair 100000"));
  }
  SECTION("unknown flags, flags of the other recipe, bad values") {
    require_one_line_error(run({"train", "--recipe", "batched", "--bogus"}, scratch.path));
    require_one_line_error(run({"train", "--recipe", "batched", "--iters", "10"}, scratch.path));
    require_one_line_error(run({"train", "--recipe", "fancy"}, scratch.path));
    require_one_line_error(run({"train", "--recipe", "batched", "--epochs", "0"}, scratch.path));
    require_one_line_error(run({"train", "--recipe", "batched", "--num-steps", "1"}, scratch.path));
    require_one_line_error(
        run({"train", "--recipe", "batched", "--direction", "eng-deu"}, scratch.path));
    require_one_line_error(run({"train", "--recipe", "batched", "--dropout", "1"}, scratch.path));
    require_one_line_error(
        run({"eval", "--recipe", "batched", "--num-examples", "-2"}, scratch.path));
    // Checked before training starts, not after 250 epochs.
    const Run blank = run(with(quick_train(out, 1), {"--attention-sentence", " "}), scratch.path);
    require_one_line_error(blank);
    CHECK_THAT(blank.err, Contains("--attention-sentence"));
    CHECK_FALSE(fs::exists(out));
  }
}

}  // namespace test_translate_batched_cli
