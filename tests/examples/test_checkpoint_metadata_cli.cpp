// tests/examples/test_checkpoint_metadata_cli.cpp — what `translate` says
// about a checkpoint that is not what the command expects: another recipe's
// (naming the --recipe to use), one whose metadata values have the wrong
// type, sign, range or integrality, or whose vocabularies lack the recipe's
// special tokens; and `train --resume` given a flag that disagrees with the
// checkpoint. Each refusal: status 2, one line naming the file, the key or
// flag, the value and the remedy. The checkpoints are trained and edited here.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nn/safetensors.hpp"
#include "tests/support/translate_program.hpp"

namespace test_checkpoint_metadata_cli {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using namespace attograd::testing::translate_program;

namespace {

constexpr const char* kEdited = "the file was edited or damaged: retrain, or restore the file";

// The first `count` short "I'm …" pairs of the shipped data, which the
// tutorial's filter keeps.
std::vector<std::string> tutorial_train(const fs::path& data, const fs::path& out) {
  return {"train", "--data",        data.string(), "--out", out.string(), "--iters",
          "20",    "--hidden",      "8",           "--lr",  "0.05",       "--examples",
          "1",     "--print-every", "10"};
}

// Trains with `arguments` into `out` and returns the checkpoint.
fs::path trained(const std::vector<std::string>& arguments, const fs::path& scratch,
                 const fs::path& out) {
  const Run run_result = run(arguments, scratch);
  INFO("train stderr: " << run_result.err);
  REQUIRE(run_result.status == 0);
  return out / "checkpoint.safetensors";
}

// 'path', as the messages quote a checkpoint (appended piecewise: GCC 12
// misreads "'" + string under -Wrestrict).
std::string in_quotes(const fs::path& path) {
  std::string text = "'";
  text += path.string();
  text += '\'';
  return text;
}

using Edit = std::function<void(attograd::nn::Metadata&)>;

// A copy of `checkpoint` with its metadata changed by `edit`.
fs::path edited_copy(const fs::path& checkpoint, const fs::path& folder, const Edit& edit) {
  attograd::nn::TensorFile file = attograd::nn::read_safetensors(checkpoint);
  edit(file.metadata);
  const fs::path edited = folder / "edited.safetensors";
  attograd::nn::write_safetensors(edited, file);
  return edited;
}

// Sets field `field` of the tutorial's JSON entry `entry` ("seq2seq.model") to `value`.
Edit tutorial_field(const std::string& entry, const std::string& field,
                    const nlohmann::json& value) {
  return [=](attograd::nn::Metadata& metadata) {
    nlohmann::json object = nlohmann::json::parse(metadata.at(entry));
    object[field] = value;
    metadata[entry] = object.dump();
  };
}

Edit batched_entry(const std::string& key, const std::string& value) {
  return [=](attograd::nn::Metadata& metadata) { metadata[key] = value; };
}

// Replaces the first `from` in the metadata text `key` by `to`.
Edit replaced(const std::string& key, const std::string& from, const std::string& to) {
  return [=](attograd::nn::Metadata& metadata) {
    std::string& text = metadata.at(key);
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
  };
}

// `arguments` + --checkpoint `checkpoint` must end in one line starting with
// "error: " + `expected`, and print nothing on stdout.
void check_refused(const fs::path& scratch, std::vector<std::string> arguments,
                   const fs::path& checkpoint, const std::string& expected) {
  arguments.insert(arguments.end(), {"--checkpoint", checkpoint.string()});
  INFO("expected: " << expected);
  const Run refused = run(arguments, scratch, "i'm home .\n");
  require_one_line_error(refused);
  CHECK_THAT(refused.err, StartsWith("error: " + expected));
  CHECK(refused.out.empty());
}

}  // namespace

TEST_CASE("translate: a checkpoint of another recipe names the --recipe to use",
          "[translate][cli][checkpoint-metadata]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path tutorial =
      trained(tutorial_train(tutorial_data(scratch.path, 30), scratch.path / "tutorial"),
              scratch.path, scratch.path / "tutorial");
  const fs::path batched = trained(quick_batched_train(scratch.path / "batched", 1), scratch.path,
                                   scratch.path / "batched");
  const fs::path transformer = trained(quick_transformer_train(scratch.path / "transformer", 1),
                                       scratch.path, scratch.path / "transformer");

  for (const std::string command : {"translate", "eval"}) {
    check_refused(scratch.path, {command}, batched,
                  in_quotes(batched) +
                      " is a checkpoint of the batched recipe, not the tutorial one; use it "
                      "with --recipe batched");
    check_refused(scratch.path, {command}, transformer,
                  in_quotes(transformer) +
                      " is a checkpoint of the transformer recipe, not the tutorial one; use it "
                      "with --recipe transformer");
    check_refused(scratch.path, {command, "--recipe", "batched"}, tutorial,
                  in_quotes(tutorial) +
                      " is a checkpoint of the tutorial recipe, not the batched one; use it with "
                      "--recipe tutorial (the default: leave --recipe out)");
    check_refused(scratch.path, {command, "--recipe", "transformer"}, batched,
                  in_quotes(batched) +
                      " is a checkpoint of the batched recipe, not the transformer one; use it "
                      "with --recipe batched");
  }
  // train --resume takes tutorial checkpoints only.
  const Run resumed =
      run({"train", "--resume", batched.string(), "--out", (scratch.path / "resumed").string()},
          scratch.path);
  require_one_line_error(resumed);
  CHECK_THAT(resumed.err, Contains("use it with --recipe batched"));
  CHECK(!fs::exists(scratch.path / "resumed"));

  // A recipe no one wrote, and no recipe at all.
  check_refused(scratch.path, {"translate", "--recipe", "batched"},
                edited_copy(batched, scratch.path, batched_entry("recipe", "xyz")),
                in_quotes(scratch.path / "edited.safetensors") +
                    ": the checkpoint's 'recipe' entry is 'xyz', not one of "
                    "tutorial|batched|transformer; " +
                    kEdited);
  check_refused(
      scratch.path, {"translate"},
      edited_copy(batched, scratch.path,
                  [](attograd::nn::Metadata& metadata) { metadata.erase("recipe"); }),
      in_quotes(scratch.path / "edited.safetensors") +
          " is not a translation checkpoint (it has neither a 'seq2seq.format' nor a 'recipe' "
          "entry in its metadata); make one with `translate train`");
}

TEST_CASE("translate train --resume: a flag that disagrees with the checkpoint is an error",
          "[translate][cli][checkpoint-metadata]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path data = tutorial_data(scratch.path, 30);
  const fs::path out = scratch.path / "out";
  const fs::path checkpoint = trained(tutorial_train(data, out), scratch.path, out);
  const std::string before = read_file(checkpoint);

  const auto resume = [&](const std::vector<std::string>& flags) {
    std::vector<std::string> arguments = {"train", "--resume",   checkpoint.string(),
                                          "--out", out.string(), "--iters",
                                          "30",    "--examples", "0"};
    arguments.insert(arguments.end(), flags.begin(), flags.end());
    return run(arguments, scratch.path);
  };
  const auto conflict = [&](const std::string& flag, const std::string& given,
                            const std::string& saved) {
    return "error: --" + flag + " " + given + " conflicts with the checkpoint being resumed, " +
           checkpoint.string() + ", which was trained with --" + flag + " " + saved + "; leave --" +
           flag + " out to continue it";
  };
  for (const auto& [flags, expected] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--hidden", "16"}, conflict("hidden", "16", "8")},
           {{"--decoder", "bahdanau"}, conflict("decoder", "bahdanau", "location")},
           {{"--lr", "0.5"}, conflict("lr", "0.5", "0.05")},
           {{"--dropout", "0.3"}, conflict("dropout", "0.3", "0.1")},
           {{"--seed", "7"}, conflict("seed", "7", "1")},
           {{"--reverse"}, conflict("reverse", "true", "false")},
           {{"--split-seed", "3"}, conflict("split-seed", "3", "1")},
           {{"--dense-embeddings"}, conflict("dense-embeddings", "true", "false")},
           {{"--print-every", "5"}, conflict("print-every", "5", "10")},
       }) {
    const Run refused = resume(flags);
    require_one_line_error(refused);
    CHECK_THAT(refused.err, StartsWith(expected));
    CHECK(refused.out.empty());
    CHECK(read_file(checkpoint) == before);
  }
  // The checkpoint's own values, given again, are no conflict; the data flags
  // left out are the checkpoint's.
  const Run agreeing = resume({"--hidden", "8", "--lr", "0.05", "--decoder", "location"});
  INFO("stderr: " << agreeing.err);
  CHECK(agreeing.status == 0);
  CHECK_THAT(agreeing.out, Contains("Resuming " + checkpoint.string() + " at iteration 20"));
}

TEST_CASE("translate: the tutorial checkpoint's metadata values are checked",
          "[translate][cli][checkpoint-metadata]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path data = tutorial_data(scratch.path, 30);
  const fs::path out = scratch.path / "out";
  const fs::path checkpoint = trained(tutorial_train(data, out), scratch.path, out);
  const std::string edited = (scratch.path / "edited.safetensors").string();

  const auto refused = [&](const Edit& edit, const std::string& expected) {
    const fs::path copy = edited_copy(checkpoint, scratch.path, edit);
    check_refused(scratch.path, {"translate"}, copy, expected);
    // train --resume reads the same entries.
    const Run resumed = run({"train", "--resume", copy.string(), "--out",
                             (scratch.path / "resumed").string(), "--iters", "30"},
                            scratch.path);
    require_one_line_error(resumed);
    CHECK_THAT(resumed.err, StartsWith("error: " + expected));
    CHECK(!fs::exists(scratch.path / "resumed"));
  };
  refused(tutorial_field("seq2seq.progress", "iteration", -5),
          edited +
              ": the checkpoint's seq2seq.progress.iteration is -5, not an integer in [0, "
              "20]; " +
              kEdited);
  refused(tutorial_field("seq2seq.training", "seed", -1),
          edited +
              ": the checkpoint's seq2seq.training.seed is -1, not a non-negative integer "
              "(a seed); " +
              kEdited);
  refused(tutorial_field("seq2seq.model", "hidden_size", 8.5),
          edited + ": the checkpoint's seq2seq.model.hidden_size is 8.5, not an integer >= 1; " +
              kEdited);
  refused(tutorial_field("seq2seq.model", "hidden_size", "8"),
          edited + ": the checkpoint's seq2seq.model.hidden_size is \"8\", not an integer >= 1; " +
              kEdited);
  refused(tutorial_field("seq2seq.training", "learning_rate", -0.5),
          edited +
              ": the checkpoint's seq2seq.training.learning_rate is -0.5, not a positive "
              "number; " +
              kEdited);
  refused(tutorial_field("seq2seq.training", "teacher_forcing", 2),
          edited + ": the checkpoint's seq2seq.training.teacher_forcing is 2, outside [0, 1]; " +
              kEdited);
  refused(tutorial_field("seq2seq.training", "print_every", 0),
          edited + ": the checkpoint's seq2seq.training.print_every is 0, not an integer >= 1; " +
              kEdited);
  refused(
      tutorial_field("seq2seq.data", "reverse", "no"),
      edited + ": the checkpoint's seq2seq.data.reverse is \"no\", not true or false; " + kEdited);
  refused(tutorial_field("seq2seq.model", "decoder", "xyz"),
          edited +
              ": the checkpoint's seq2seq.model.decoder is 'xyz', not one of "
              "location|bahdanau; " +
              kEdited);
  // Vocabularies must hold the tutorial's special tokens, SOS EOS <unk>.
  refused(replaced("seq2seq.target_vocabulary", "\nSOS\t", "\nBOS\t"),
          edited +
              ": the checkpoint's 'seq2seq.target_vocabulary' does not hold the tutorial "
              "recipe's special tokens: its id 0 is 'BOS' where the layout has 'SOS' (SOS "
              "EOS <unk>); " +
              kEdited);
  refused(replaced("seq2seq.source_vocabulary", "special 3 unknown 2", "special 0 unknown none"),
          edited +
              ": the checkpoint's 'seq2seq.source_vocabulary' does not hold the tutorial "
              "recipe's special tokens: it has 0 special tokens where the layout has 3 (SOS "
              "EOS <unk>); " +
              kEdited);
}

TEST_CASE("translate: the batched and Transformer checkpoints' metadata values are checked",
          "[translate][cli][checkpoint-metadata]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path batched = trained(quick_batched_train(scratch.path / "batched", 1), scratch.path,
                                   scratch.path / "batched");
  const fs::path transformer = trained(quick_transformer_train(scratch.path / "transformer", 1),
                                       scratch.path, scratch.path / "transformer");
  const std::string edited = in_quotes(scratch.path / "edited.safetensors");

  for (const auto& [recipe, checkpoint] :
       {std::pair<std::string, fs::path>{"batched", batched}, {"transformer", transformer}}) {
    INFO("recipe " << recipe);
    const auto refused = [&](const Edit& edit, const std::string& expected) {
      const fs::path copy = edited_copy(checkpoint, scratch.path, edit);
      check_refused(scratch.path, {"eval", "--recipe", recipe}, copy, expected);
    };
    // eval scores the checkpoint's num_examples pairs by default: -5 would be all of them.
    refused(batched_entry("num_examples", "-5"),
            edited + ": the checkpoint's num_examples is -5, less than 1; " + kEdited);
    refused(batched_entry("num_examples", "99999999999999999999"),
            edited +
                ": the checkpoint's num_examples is 99999999999999999999, beyond the 64-bit "
                "integers; " +
                kEdited);
    refused(
        batched_entry("direction", "xyz"),
        edited + ": the checkpoint's direction is 'xyz', not one of eng-fra|fra-eng; " + kEdited);
    refused(batched_entry("num_steps", "8.5"),
            edited + ": the checkpoint's num_steps is '8.5', not an integer; " + kEdited);
    // 1e-400 is a number, but not one a double holds.
    refused(batched_entry("dropout", "1e-400"),
            edited +
                ": the checkpoint's dropout is 1e-400, a number too close to 0 for a "
                "double; " +
                kEdited);
    refused(batched_entry("dropout", "1e400"),
            edited + ": the checkpoint's dropout is 1e400, a number too large for a double; " +
                kEdited);
    refused(batched_entry("dropout", "abc"),
            edited + ": the checkpoint's dropout is 'abc', not a number; " + kEdited);
    // Vocabularies must hold <pad> <bos> <eos> <unk>.
    refused(replaced("source_vocabulary", "\n<pad>\t", "\n<PAD>\t"),
            edited + ": the checkpoint's source_vocabulary does not hold the " + recipe +
                " recipe's special tokens: its id 0 is '<PAD>' where the layout has '<pad>' "
                "(<pad> <bos> <eos> <unk>); " +
                kEdited);
    refused(replaced("target_vocabulary", "special 4 unknown 3", "special 0 unknown none"),
            edited + ": the checkpoint's target_vocabulary does not hold the " + recipe +
                " recipe's special tokens: it has 0 special tokens where the layout has 4 "
                "(<pad> <bos> <eos> <unk>); " +
                kEdited);
  }
}

}  // namespace test_checkpoint_metadata_cli
