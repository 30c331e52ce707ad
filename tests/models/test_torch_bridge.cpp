// tests/models/test_torch_bridge.cpp — scripts/torch_bridge.py against the
// models it moves, for all three recipes of `translate`: attograd → PyTorch →
// attograd bit for bit, the same greedy translations and log-probabilities
// (within 1e-5) in both, a model trained in PyTorch translating the same
// here, and scripts/torch_finetune.py's two-process DistributedDataParallel
// run coming back to `translate`. Needs /usr/bin/python3 with torch; without
// it each case says "skipped: torch not installed" and passes.
#include <arpa/inet.h>
#include <fmt/core.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "attograd.hpp"
#include "examples/common/cli.hpp"
#include "examples/common/paths_apart.hpp"
#include "models/batched_seq2seq/batched_seq2seq.hpp"
#include "models/seq2seq/seq2seq.hpp"
#include "models/seq2seq/training.hpp"
#include "models/text/normalize.hpp"
#include "models/transformer/transformer.hpp"
#include "models/translation/batched_translator.hpp"
#include "tests/support/program.hpp"
#include "tests/support/python.hpp"
#include "tests/support/tensor_checks.hpp"
#include "tests/support/translate_program.hpp"

namespace test_torch_bridge {

using namespace attograd;
using namespace attograd::testing;
using seq2seq::DecoderKind;

namespace {

const std::filesystem::path kBridge =
    std::filesystem::path(ATTOGRAD_SOURCE_DIR) / "scripts" / "torch_bridge.py";
const std::filesystem::path kTrainer =
    std::filesystem::path(ATTOGRAD_SOURCE_DIR) / "tests" / "support" / "train_tiny_torch_model.py";

ProgramRun python(const std::vector<std::string>& arguments, const TemporaryFolder& scratch,
                  const std::string& input = "") {
  // Under timeout(1): a PyTorch process that hangs (a distributed group's
  // teardown once did) fails its test in minutes instead of holding the suite.
  std::vector<std::string> under_timeout = {"--kill-after=10", "600", kPython.string()};
  under_timeout.insert(under_timeout.end(), arguments.begin(), arguments.end());
  const ProgramRun result = run_program("/usr/bin/timeout", under_timeout, scratch.path, input);
  INFO("python3 " << arguments.front() << " failed (status 124: it ran past 600 s):\n"
                  << result.err);
  REQUIRE(result.status == 0);
  return result;
}

// Sentences over the tiny vocabulary, one a line (already normalised).
const std::vector<std::string> kSentences = {"je suis fatigue .", "il est grand .",
                                             "je suis grand .", "il est fatigue .", "je ."};

seq2seq::CheckpointInfo tiny_info(DecoderKind decoder) {
  seq2seq::CheckpointInfo info;
  for (const char* word : {"je", "suis", "fatigue", ".", "il", "est", "grand"})
    info.source_vocabulary.add_word(word, 3);
  for (const char* word : {"i", "am", "tired", ".", "he", "is", "tall"})
    info.target_vocabulary.add_word(word, 2);
  info.model = seq2seq::Seq2SeqOptions(info.source_vocabulary.size(), info.target_vocabulary.size())
                   .hidden_size(8)
                   .max_length(6)
                   .dropout(0.1)
                   .decoder(decoder);
  return info;
}

std::vector<int64_t> source_ids(const seq2seq::CheckpointInfo& info, const std::string& line) {
  std::vector<int64_t> ids;
  for (const std::string& word : text::split_words(line))
    ids.push_back(info.source_vocabulary.index(word));
  ids.push_back(seq2seq::kEos);
  return ids;
}

// The greedy translation's words and Σ log p of its ids (EOS included), as
// the bridge's `translate` command reports them.
struct Greedy {
  std::vector<std::string> words;
  double log_prob = 0;
};

Greedy attograd_greedy(seq2seq::Seq2Seq& model, const seq2seq::CheckpointInfo& info,
                       const std::string& line) {
  const std::vector<int64_t> source = source_ids(info, line);
  const seq2seq::Translation translation = model.translate(source);
  Greedy greedy;
  std::vector<int64_t> target = translation.words;
  for (int64_t id : translation.words) greedy.words.push_back(info.target_vocabulary.word(id));
  if (translation.reached_eos) target.push_back(seq2seq::kEos);
  const nn::EvalModeGuard eval_mode(model);
  const NoGradGuard no_grad;
  greedy.log_prob = -model.pair_loss(source, target, /*teacher_forcing=*/true).total.item();
  return greedy;
}

std::vector<Greedy> torch_greedy(const std::filesystem::path& bundle,
                                 const TemporaryFolder& scratch,
                                 const std::vector<std::string>& sentences = kSentences) {
  std::string input;
  for (const std::string& line : sentences) input += line + "\n";
  const ProgramRun run =
      python({kBridge.string(), "translate", bundle.string(), "--json"}, scratch, input);
  std::vector<Greedy> out;
  for (const std::string& line : lines_of(run.out)) {
    const nlohmann::json parsed = nlohmann::json::parse(line);
    out.push_back(
        {parsed.at("words").get<std::vector<std::string>>(), parsed.at("log_prob").get<double>()});
  }
  REQUIRE(out.size() == sentences.size());
  // Without --json the same translations as sentences, as `translate translate` prints them.
  const ProgramRun plain = python({kBridge.string(), "translate", bundle.string()}, scratch, input);
  const std::vector<std::string> printed = lines_of(plain.out);
  REQUIRE(printed.size() == out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    std::string sentence;
    for (const std::string& word : out[i].words) sentence += (sentence.empty() ? "" : " ") + word;
    CHECK(printed[i] == sentence);
  }
  return out;
}

void require_same_translations(const std::filesystem::path& checkpoint,
                               const std::filesystem::path& bundle, const TemporaryFolder& scratch,
                               const std::vector<std::string>& sentences = kSentences) {
  const seq2seq::CheckpointInfo info = seq2seq::read_checkpoint_info(checkpoint);
  const auto model = seq2seq::load_model(checkpoint, info);
  const std::vector<Greedy> theirs = torch_greedy(bundle, scratch, sentences);
  for (size_t i = 0; i < sentences.size(); ++i) {
    const Greedy ours = attograd_greedy(*model, info, sentences[i]);
    INFO("sentence '" << sentences[i] << "'");
    CHECK(ours.words == theirs[i].words);
    CHECK(std::abs(ours.log_prob - theirs[i].log_prob) <= 1e-5);
  }
}

}  // namespace

TEST_CASE("torch_bridge: attograd -> PyTorch -> attograd is bit for bit, translations agree",
          "[torch]") {
  if (!torch_installed()) return;
  for (const DecoderKind decoder : {DecoderKind::location, DecoderKind::bahdanau}) {
    DYNAMIC_SECTION("decoder " << seq2seq::to_string(decoder)) {
      const TemporaryFolder scratch("attograd_torch_bridge");
      const seq2seq::CheckpointInfo info = tiny_info(decoder);
      Generator generator(11);
      seq2seq::Seq2Seq model(info.model, generator);
      const auto checkpoint = scratch.path / "model.safetensors";
      seq2seq::save_checkpoint(checkpoint, model, nullptr, info);

      const auto bundle = scratch.path / "model.pt", back = scratch.path / "back.safetensors";
      python({kBridge.string(), "to-torch", checkpoint.string(), bundle.string()}, scratch);
      python({kBridge.string(), "from-torch", bundle.string(), back.string()}, scratch);
      require_same_model_tensors(checkpoint, back);
      const seq2seq::CheckpointInfo returned = seq2seq::read_checkpoint_info(back);
      CHECK(returned.source_vocabulary.serialize() == info.source_vocabulary.serialize());
      CHECK(returned.target_vocabulary.serialize() == info.target_vocabulary.serialize());
      CHECK(returned.model.hidden_size() == 8);
      CHECK(returned.model.max_length() == 6);
      CHECK(returned.model.decoder() == decoder);
      require_same_translations(checkpoint, bundle, scratch);
    }
  }
}

TEST_CASE("torch_bridge: a model trained in PyTorch translates the same in attograd", "[torch]") {
  if (!torch_installed()) return;
  const TemporaryFolder scratch("attograd_torch_bridge");
  const auto bundle = scratch.path / "trained.pt",
             checkpoint = scratch.path / "trained.safetensors";
  python({kTrainer.string(), bundle.string()}, scratch);
  python({kBridge.string(), "from-torch", bundle.string(), checkpoint.string()}, scratch);
  require_same_translations(checkpoint, bundle, scratch);
}

TEST_CASE("torch_bridge: bad input is one line naming the file and the remedy", "[torch]") {
  if (!torch_installed()) return;
  const TemporaryFolder scratch("attograd_torch_bridge");
  const auto not_a_checkpoint = scratch.path / "weights.safetensors";
  Generator generator(1);
  nn::Linear linear(nn::LinearOptions(2, 2), generator);
  nn::save(linear, not_a_checkpoint);
  const ProgramRun refused = run_program(
      kPython, {kBridge.string(), "to-torch", not_a_checkpoint.string(), "out.pt"}, scratch.path);
  require_one_line_error(refused);
  CHECK(refused.err.find("not a translation checkpoint of any recipe") != std::string::npos);
  CHECK(refused.err.find(not_a_checkpoint.string()) != std::string::npos);
}

namespace {

const std::filesystem::path kHostileFiles =
    std::filesystem::path(ATTOGRAD_SOURCE_DIR) / "tests" / "support" / "hostile_bridge_files.py";

// A tiny checkpoint of `decoder` and its to-torch bundle, in `scratch`.
std::pair<std::filesystem::path, std::filesystem::path> tiny_pair(DecoderKind decoder,
                                                                  const TemporaryFolder& scratch) {
  const seq2seq::CheckpointInfo info = tiny_info(decoder);
  Generator generator(11);
  seq2seq::Seq2Seq model(info.model, generator);
  const auto checkpoint = scratch.path / "model.safetensors", bundle = scratch.path / "model.pt";
  seq2seq::save_checkpoint(checkpoint, model, nullptr, info);
  python({kBridge.string(), "to-torch", checkpoint.string(), bundle.string()}, scratch);
  return {checkpoint, bundle};
}

// Every name in `folder`, sorted.
std::vector<std::string> names_in(const std::filesystem::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Runs hostile_bridge_files.py on `checkpoint` and its `bundle` into
// `hostile` and checks that every case it made was refused: status 2, one
// line naming the file and the expected text, nothing written. Returns the
// number of cases.
size_t require_hostile_cases_refused(const std::filesystem::path& checkpoint,
                                     const std::filesystem::path& bundle,
                                     const std::filesystem::path& hostile,
                                     const TemporaryFolder& scratch) {
  std::filesystem::create_directory(hostile);
  python({kHostileFiles.string(), checkpoint.string(), bundle.string(), hostile.string()}, scratch);
  const nlohmann::json cases = nlohmann::json::parse(read_file(hostile / "cases.json"));
  for (const nlohmann::json& entry : cases) {
    const std::string path = (hostile / entry.at("file").get<std::string>()).string();
    INFO(entry.at("command").get<std::string>()
         << " " << path << ": " << entry.at("stderr").get<std::string>());
    CHECK(entry.at("status") == 2);
    const std::vector<std::string> lines = lines_of(entry.at("stderr"));
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].rfind("error: " + path + ":", 0) == 0);
    CHECK(lines[0].find(entry.at("expect").get<std::string>()) != std::string::npos);
    CHECK(entry.at("wrote") == false);
  }
  return cases.size();
}

}  // namespace

TEST_CASE("torch_bridge: a hostile .pt or checkpoint runs no code and is refused in one line",
          "[torch]") {
  if (!torch_installed()) return;
  const TemporaryFolder scratch("attograd_torch_bridge");
  const auto [checkpoint, bundle] = tiny_pair(DecoderKind::location, scratch);
  const auto hostile = scratch.path / "hostile";
  CHECK(require_hostile_cases_refused(checkpoint, bundle, hostile, scratch) >= 41);
  // The code-running bundles through the command line too, every command.
  const std::vector<std::string> before = names_in(hostile);
  for (const char* file : {"runs_code.pt", "runs_code_legacy.pt"}) {
    for (const std::vector<std::string>& arguments :
         {std::vector<std::string>{"from-torch", (hostile / file).string(), "out.safetensors"},
          std::vector<std::string>{"translate", (hostile / file).string()}}) {
      std::vector<std::string> command = {kBridge.string()};
      command.insert(command.end(), arguments.begin(), arguments.end());
      INFO(arguments.front() << " " << file);
      const ProgramRun refused = run_program(kPython, command, scratch.path, "je .\n");
      require_one_line_error(refused);
      CHECK(refused.err.find("refused: torch.load(weights_only=True) cannot read it") !=
            std::string::npos);
    }
  }
  // A bundle whose unpickling calls os.system would have made this file.
  CHECK_FALSE(std::filesystem::exists(hostile / "pwned"));
  CHECK(names_in(hostile) == before);
}

TEST_CASE("torch_bridge: only regular files are read, and OUT must be a file in a folder",
          "[torch]") {
  if (!torch_installed()) return;
  const TemporaryFolder scratch("attograd_torch_bridge");
  const auto [checkpoint, bundle] = tiny_pair(DecoderKind::bahdanau, scratch);
  const auto fifo = scratch.path / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const Refusals refusals = {
      {{"to-torch", "/dev/zero", "out.pt"}, "/dev/zero: a device, not a regular file"},
      {{"from-torch", "/dev/zero", "out.safetensors"}, "/dev/zero: a device, not a regular file"},
      {{"to-torch", fifo.string(), "out.pt"}, "fifo: a FIFO, not a regular file"},
      {{"from-torch", fifo.string(), "out.safetensors"}, "fifo: a FIFO, not a regular file"},
      {{"translate", fifo.string()}, "fifo: a FIFO, not a regular file"},
      {{"to-torch", scratch.path.string(), "out.pt"}, "a directory, not a regular file"},
      {{"to-torch", "missing.safetensors", "out.pt"}, "missing.safetensors: No such file"},
      {{"to-torch", checkpoint.string(), (checkpoint / "out.pt").string()}, "is not a folder"},
      {{"from-torch", bundle.string(), scratch.path.string()}, "it is a folder; name a file"},
      {{"to-torch", checkpoint.string()}, "the following arguments are required: OUT"},
  };
  require_refusals(kBridge, refusals, scratch);
  CHECK_FALSE(std::filesystem::exists(scratch.path / "out.pt"));
  CHECK_FALSE(std::filesystem::exists(scratch.path / "out.safetensors"));
}

TEST_CASE("torch_bridge: a write that fails leaves the old file whole and no temporary",
          "[torch]") {
  if (!torch_installed()) return;
  const TemporaryFolder scratch("attograd_torch_bridge");
  const auto [checkpoint, bundle] = tiny_pair(DecoderKind::location, scratch);
  const auto keep = scratch.path / "keep";
  std::filesystem::create_directory(keep);
  const std::string old_bundle = read_file(bundle), old_checkpoint = read_file(checkpoint);
  std::filesystem::copy_file(bundle, keep / "model.pt");
  std::filesystem::copy_file(checkpoint, keep / "model.safetensors");
  // A disk that fills after 2 KiB: the file-size limit makes every write
  // beyond it fail with EFBIG, as ENOSPC would (SIGXFSZ ignored).
  for (const auto& [command, input, out] :
       {std::tuple{"to-torch", checkpoint, keep / "model.pt"},
        std::tuple{"from-torch", bundle, keep / "model.safetensors"}}) {
    INFO(command);
    const std::string shell =
        fmt::format("trap '' XFSZ; ulimit -f 2; exec {} {} {} {} {}", kPython.string(),
                    kBridge.string(), command, input.string(), out.string());
    const ProgramRun refused = run_program("/bin/bash", {"-c", shell}, scratch.path);
    require_one_line_error(refused);
    CHECK(refused.err.find("cannot write " + out.string()) != std::string::npos);
    CHECK(refused.err.find("was left as it was") != std::string::npos);
  }
  CHECK(read_file(keep / "model.pt") == old_bundle);
  CHECK(read_file(keep / "model.safetensors") == old_checkpoint);
  CHECK(names_in(keep) == std::vector<std::string>{"model.pt", "model.safetensors"});
}

TEST_CASE("torch_bridge: what from-torch writes, translate takes", "[torch]") {
  if (!torch_installed()) return;
  using translate_program::kBinary;
  for (const DecoderKind decoder : {DecoderKind::location, DecoderKind::bahdanau}) {
    DYNAMIC_SECTION("decoder " << seq2seq::to_string(decoder)) {
      const TemporaryFolder scratch("attograd_torch_bridge");
      const auto [checkpoint, bundle] = tiny_pair(decoder, scratch);
      const auto back = scratch.path / "back.safetensors";
      python({kBridge.string(), "from-torch", bundle.string(), back.string()}, scratch);
      const ProgramRun translated = run_program(
          kBinary, {"translate", "--checkpoint", back.string()}, scratch.path, "je suis grand .\n");
      INFO(translated.err);
      CHECK(translated.status == 0);
      CHECK(lines_of(translated.out).size() == 1);
    }
  }
}

// ---------------------------------------------------------------- every recipe, from translate
// train

namespace {

namespace fs = std::filesystem;
using translate_program::kBinary;
using translate_program::kShippedData;

const fs::path kFinetune = fs::path(ATTOGRAD_SOURCE_DIR) / "scripts" / "torch_finetune.py";

// `translate train --recipe <recipe>` on a few pairs for a few epochs: a small
// model whose checkpoint holds everything a real one does (the recipe's
// metadata, Adam's state, the resume entries).
fs::path train_checkpoint(const std::string& recipe, const TemporaryFolder& scratch) {
  const fs::path out = scratch.path / ("trained_" + recipe);
  std::vector<std::string> arguments;
  if (recipe == "tutorial") {
    arguments = {"train",
                 "--data",
                 translate_program::tutorial_data(scratch.path, 40).string(),
                 "--out",
                 out.string(),
                 "--iters",
                 "60",
                 "--hidden",
                 "8",
                 "--print-every",
                 "30",
                 "--plot-every",
                 "30"};
  } else if (recipe == "batched") {
    arguments = translate_program::quick_batched_train(out, 3);
  } else {
    arguments = translate_program::quick_transformer_train(out, 3);
  }
  const ProgramRun trained = run_program(kBinary, arguments, scratch.path);
  INFO("translate train --recipe " << recipe << ":\n" << trained.err);
  REQUIRE(trained.status == 0);
  return out / "checkpoint.safetensors";
}

// Sentences over the checkpoint's own source words (so that few become
// <unk>), as many as `count`; for the batched recipes also one with an
// unknown word and one longer than num_steps, which both programs cut.
std::vector<std::string> recipe_sentences(const fs::path& checkpoint, const std::string& recipe) {
  const nn::Metadata metadata = nn::read_safetensors_header(checkpoint).metadata;
  const text::Vocabulary vocabulary = text::Vocabulary::deserialize(
      metadata.at(recipe == "tutorial" ? "seq2seq.source_vocabulary" : "source_vocabulary"));
  const int64_t first = vocabulary.num_special(), size = vocabulary.size();
  REQUIRE(size - first >= 8);
  std::vector<std::string> sentences;
  for (int64_t i = 0; i < 6; ++i) {
    sentences.push_back(fmt::format("{} {} {}", vocabulary.word(first + i),
                                    vocabulary.word(first + (i + 3) % (size - first)),
                                    vocabulary.word(first + (i + 5) % (size - first))));
  }
  if (recipe != "tutorial") {
    sentences.push_back(vocabulary.word(first) + " zzzqx .");
    std::string longer;
    for (int64_t i = 0; i < 14; ++i) longer += vocabulary.word(first + i % (size - first)) + " ";
    sentences.push_back(longer + ".");
  }
  return sentences;
}

// A batched or Transformer checkpoint's model, built from its metadata as
// `translate` builds it (examples/translate/batched_checkpoint.cpp).
struct RecipeModel {
  std::shared_ptr<translation::BatchedTranslator> model;
  text::Vocabulary source = text::make_batched_vocabulary({});
  text::Vocabulary target = text::make_batched_vocabulary({});
  int64_t num_steps = 0;
};

RecipeModel load_recipe_model(const fs::path& checkpoint) {
  const nn::Metadata metadata = nn::read_safetensors_header(checkpoint).metadata;
  const auto integer = [&](const char* key) { return std::stoll(metadata.at(key)); };
  RecipeModel loaded;
  loaded.source = text::Vocabulary::deserialize(metadata.at("source_vocabulary"));
  loaded.target = text::Vocabulary::deserialize(metadata.at("target_vocabulary"));
  loaded.num_steps = integer("num_steps");
  const double dropout = std::stod(metadata.at("dropout"));
  Generator unused(0);  // the values are replaced by the checkpoint's
  if (metadata.at("recipe") == "batched") {
    loaded.model = std::make_shared<batched_seq2seq::BatchedSeq2Seq>(
        batched_seq2seq::BatchedSeq2SeqOptions(loaded.source.size(), loaded.target.size())
            .embed_size(integer("embed_size"))
            .hidden_size(integer("hidden_size"))
            .num_layers(integer("num_layers"))
            .dropout(dropout),
        unused);
  } else {
    loaded.model = std::make_shared<transformer::Transformer>(
        transformer::TransformerOptions(loaded.source.size(), loaded.target.size())
            .num_hiddens(integer("num_hiddens"))
            .num_blocks(integer("num_blocks"))
            .num_heads(integer("num_heads"))
            .ffn_num_hiddens(integer("ffn_num_hiddens"))
            .dropout(dropout),
        unused);
  }
  nn::load(*loaded.model, checkpoint);
  loaded.model->eval();
  return loaded;
}

// attograd's greedy translation of each sentence by `checkpoint` against the
// bridge's PyTorch one by `bundle`: the same words, log p within 1e-5; and
// the `translate translate` program prints the same words.
void require_same_recipe_translations(const fs::path& checkpoint, const fs::path& bundle,
                                      const std::string& recipe,
                                      const std::vector<std::string>& sentences,
                                      const TemporaryFolder& scratch) {
  if (recipe == "tutorial") {
    require_same_translations(checkpoint, bundle, scratch, sentences);
    return;
  }
  RecipeModel loaded = load_recipe_model(checkpoint);
  const std::vector<Greedy> theirs = torch_greedy(bundle, scratch, sentences);
  std::string input;
  for (size_t i = 0; i < sentences.size(); ++i) {
    const translation::SentenceTranslation ours = translation::translate_sentence(
        *loaded.model, loaded.source, loaded.target, sentences[i], loaded.num_steps);
    INFO("sentence '" << sentences[i] << "'");
    CHECK(ours.output_words == theirs[i].words);
    CHECK(std::abs(ours.best.log_probability - theirs[i].log_prob) <= 1e-5);
    input += sentences[i] + "\n";
  }
  const ProgramRun program =
      run_program(kBinary, {"translate", "--recipe", recipe, "--checkpoint", checkpoint.string()},
                  scratch.path, input);
  INFO(program.err);
  REQUIRE(program.status == 0);
  const std::vector<std::string> printed = lines_of(program.out);
  REQUIRE(printed.size() == sentences.size());
  for (size_t i = 0; i < sentences.size(); ++i)
    CHECK(printed[i] == text::join_words(theirs[i].words));
}

// The metadata of `a` in `b`, entry for entry (JSON entries compared as
// values, which Python and attograd print differently), but for the
// optimizer's ("attograd.optimizer") and train --resume's ("resume.*"),
// which describe the optimizer state a bundle leaves behind.
void require_same_metadata(const fs::path& a, const fs::path& b) {
  const nn::Metadata left = nn::read_safetensors_header(a).metadata;
  const nn::Metadata right = nn::read_safetensors_header(b).metadata;
  size_t compared = 0;
  for (const auto& [key, value] : left) {
    if (key.rfind("resume.", 0) == 0 || key.rfind("attograd.", 0) == 0) continue;
    ++compared;
    INFO("metadata entry " << key);
    REQUIRE(right.count(key) == 1);
    const nlohmann::json parsed = nlohmann::json::parse(value, nullptr, false);
    if (parsed.is_object()) {
      CHECK(parsed == nlohmann::json::parse(right.at(key)));
    } else {
      CHECK(right.at(key) == value);
    }
  }
  CHECK(compared == right.size());
}

}  // namespace

TEST_CASE(
    "torch_bridge: every recipe from translate train goes to PyTorch and back bit for bit, "
    "and translates the same in both",
    "[torch]") {
  if (!torch_installed()) return;
  for (const std::string recipe : {"tutorial", "batched", "transformer"}) {
    DYNAMIC_SECTION("recipe " << recipe) {
      const TemporaryFolder scratch("attograd_torch_bridge");
      const fs::path checkpoint = train_checkpoint(recipe, scratch);
      const fs::path bundle = scratch.path / "model.pt", back = scratch.path / "back.safetensors",
                     again = scratch.path / "again.pt";
      python({kBridge.string(), "to-torch", checkpoint.string(), bundle.string()}, scratch);
      python({kBridge.string(), "from-torch", bundle.string(), back.string()}, scratch);
      require_same_model_tensors(checkpoint, back);
      require_same_metadata(checkpoint, back);
      // attograd -> PyTorch on the original, PyTorch -> attograd on the way back.
      const std::vector<std::string> sentences = recipe_sentences(checkpoint, recipe);
      require_same_recipe_translations(checkpoint, bundle, recipe, sentences, scratch);
      python({kBridge.string(), "to-torch", back.string(), again.string()}, scratch);
      require_same_recipe_translations(back, again, recipe, sentences, scratch);
    }
  }
}

TEST_CASE("torch_bridge: batched and Transformer files from someone else are refused in one line",
          "[torch]") {
  if (!torch_installed()) return;
  for (const std::string recipe : {"batched", "transformer"}) {
    DYNAMIC_SECTION("recipe " << recipe) {
      const TemporaryFolder scratch("attograd_torch_bridge");
      const fs::path checkpoint = train_checkpoint(recipe, scratch);
      const fs::path bundle = scratch.path / "model.pt";
      python({kBridge.string(), "to-torch", checkpoint.string(), bundle.string()}, scratch);
      CHECK(require_hostile_cases_refused(checkpoint, bundle, scratch.path / "hostile", scratch) >=
            24);
      CHECK_FALSE(fs::exists(scratch.path / "hostile" / "pwned"));
    }
  }
}

TEST_CASE(
    "torch_finetune: two DDP processes keep the same weights, lower the loss, and translate "
    "reads the result",
    "[torch]") {
  if (!torch_installed()) return;
  for (const std::string recipe : {"batched", "transformer"}) {
    DYNAMIC_SECTION("recipe " << recipe) {
      const TemporaryFolder scratch("attograd_torch_finetune");
      const fs::path checkpoint = train_checkpoint(recipe, scratch);
      const fs::path bundle = scratch.path / "model.pt", tuned = scratch.path / "tuned.pt",
                     report = scratch.path / "report.jsonl",
                     back = scratch.path / "tuned.safetensors";
      python({kBridge.string(), "to-torch", checkpoint.string(), bundle.string()}, scratch);
      python({kFinetune.string(), bundle.string(), tuned.string(), "--nproc", "2", "--steps", "4",
              "--batch", "16", "--lr", "0.01", "--data", kShippedData.string(), "--report",
              report.string()},
             scratch);
      const std::vector<std::string> lines = lines_of(read_file(report));
      REQUIRE(lines.size() == 5);  // four steps, then the losses before and after
      std::string previous;
      for (size_t step = 0; step < 4; ++step) {
        const nlohmann::json entry = nlohmann::json::parse(lines[step]);
        INFO("step " << step + 1);
        CHECK(entry.at("step") == step + 1);
        const auto digests = entry.at("digests").get<std::vector<std::string>>();
        REQUIRE(digests.size() == 2);
        CHECK(digests[0] == digests[1]);  // both processes hold the same weights
        CHECK(digests[0] != previous);    // and the step moved them
        previous = digests[0];
        CHECK(std::isfinite(entry.at("loss").get<double>()));
      }
      const nlohmann::json losses = nlohmann::json::parse(lines[4]);
      CHECK(losses.at("loss_after").get<double>() < losses.at("loss_before").get<double>());
      // Back to attograd: translate and eval take it, and it translates as PyTorch does.
      python({kBridge.string(), "from-torch", tuned.string(), back.string()}, scratch);
      require_same_recipe_translations(back, tuned, recipe, recipe_sentences(checkpoint, recipe),
                                       scratch);
      const ProgramRun evaluated =
          run_program(kBinary,
                      {"eval", "--recipe", recipe, "--checkpoint", back.string(), "--data",
                       kShippedData.string(), "--json"},
                      scratch.path);
      INFO(evaluated.err);
      CHECK(evaluated.status == 0);
      CHECK(nlohmann::json::parse(evaluated.out).contains("bleu"));
      // The fine-tuned weights differ from the exported ones.
      CHECK(read_file(back) != read_file(checkpoint));
    }
  }
}

TEST_CASE("torch_finetune: bad input is one line and exit status 2, before any process starts",
          "[torch]") {
  if (!torch_installed()) return;
  const TemporaryFolder scratch("attograd_torch_finetune");
  const auto [checkpoint, tutorial_bundle] = tiny_pair(DecoderKind::location, scratch);
  const Refusals refusals = {
      {{"missing.pt", "out.pt"}, "cannot read torch.save bundle missing.pt: No such file"},
      {{tutorial_bundle.string(), "out.pt"},
       "a tutorial-recipe bundle; torch_finetune.py fine-tunes"},
      {{checkpoint.string(), "out.pt"}, "refused: torch.load(weights_only=True) cannot read it"},
      {{tutorial_bundle.string(), "out.pt", "--nproc", "0"},
       "argument --nproc: 0 is outside [1, 64]"},
      {{tutorial_bundle.string(), "out.pt", "--nproc", "two"},
       "argument --nproc: 'two' is not a number"},
      {{tutorial_bundle.string(), "out.pt", "--nnodes", "2", "--node-rank", "2"},
       "--node-rank 2 must be below --nnodes 2"},
      {{tutorial_bundle.string()}, "the following arguments are required: OUT"},
  };
  require_refusals(kFinetune, refusals, scratch);
  CHECK_FALSE(fs::exists(scratch.path / "out.pt"));
}

namespace {

// A batched model trained on a copy of the shipped pairs in `scratch`
// (pairs.tsv, which its metadata names as its data) and its to-torch bundle.
struct FinetuneInputs {
  fs::path pairs, checkpoint, bundle;
};
FinetuneInputs finetune_inputs(const TemporaryFolder& scratch) {
  FinetuneInputs inputs;
  inputs.pairs = scratch.path / "pairs.tsv";
  fs::copy_file(translate_program::kShippedData, inputs.pairs);
  std::vector<std::string> arguments =
      translate_program::quick_batched_train(scratch.path / "trained", 1);
  std::replace(arguments.begin(), arguments.end(), translate_program::kShippedData.string(),
               inputs.pairs.string());
  const ProgramRun trained = run_program(kBinary, arguments, scratch.path);
  INFO(trained.err);
  REQUIRE(trained.status == 0);
  inputs.checkpoint = scratch.path / "trained" / "checkpoint.safetensors";
  inputs.bundle = scratch.path / "model.pt";
  python({kBridge.string(), "to-torch", inputs.checkpoint.string(), inputs.bundle.string()},
         scratch);
  return inputs;
}

// A run of `script` under timeout(1) with `environment` ("NAME=value"
// words) added, and how long it took.
struct TimedRun {
  ProgramRun run;
  double seconds = 0;
};
TimedRun timed_python(const fs::path& script, const std::vector<std::string>& arguments,
                      const TemporaryFolder& scratch,
                      const std::vector<std::string>& environment = {}) {
  std::vector<std::string> command = {"--kill-after=5", "60", "/usr/bin/env"};
  command.insert(command.end(), environment.begin(), environment.end());
  command.push_back(kPython.string());
  command.push_back(script.string());
  command.insert(command.end(), arguments.begin(), arguments.end());
  const auto start = std::chrono::steady_clock::now();
  TimedRun timed{run_program("/usr/bin/timeout", command, scratch.path)};
  timed.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return timed;
}

// The first line of stderr of a refused run: exit status 2, one line.
std::string refusal_line(const TimedRun& timed) {
  INFO("stdout: " << timed.run.out << "\nstderr: " << timed.run.err);
  require_one_line_error(timed.run);
  CHECK(timed.seconds < 30);  // it ends; it does not hang
  return lines_of(timed.run.err).at(0);
}

// A fine-tune of two nodes of which only node `rank` starts, waiting at most
// `timeout` seconds: its refusal line.
std::string lone_node_refusal(const TemporaryFolder& scratch, const std::string& port,
                              const std::string& rank, const std::string& timeout) {
  const FinetuneInputs inputs = finetune_inputs(scratch);
  return refusal_line(timed_python(
      kFinetune,
      {inputs.bundle.string(), (scratch.path / "out.pt").string(), "--nproc", "1", "--nnodes", "2",
       "--node-rank", rank, "--master-port", port, "--timeout", timeout},
      scratch));
}

// A TCP socket listening on 127.0.0.1 at a port the system chose.
class ListeningSocket {
 public:
  ListeningSocket() : descriptor_(::socket(AF_INET, SOCK_STREAM, 0)) {
    REQUIRE(descriptor_ >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(descriptor_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(descriptor_, 4) == 0);
    socklen_t size = sizeof address;
    REQUIRE(::getsockname(descriptor_, reinterpret_cast<sockaddr*>(&address), &size) == 0);
    port_ = ntohs(address.sin_port);
  }
  ~ListeningSocket() { ::close(descriptor_); }
  ListeningSocket(const ListeningSocket&) = delete;
  ListeningSocket& operator=(const ListeningSocket&) = delete;
  int port() const { return port_; }

 private:
  int descriptor_;
  int port_ = 0;
};

// A port on 127.0.0.1 that nothing listens on (one the system just gave out).
int unused_port() {
  const ListeningSocket probe;
  return probe.port();
}

}  // namespace

namespace {

// One call on a PathsApart: reads, writes, writes_next (`extra` the input it
// continues) or writes_matching (`extra` the pattern).
struct PathsCall {
  PathsCall(std::string kind_, std::string flag_, fs::path path_, std::string extra_ = "")
      : kind(std::move(kind_)),
        flag(std::move(flag_)),
        path(std::move(path_)),
        extra(std::move(extra_)) {}
  std::string kind, flag;
  fs::path path;
  std::string extra;  // writes_next's input flag, writes_matching's pattern
};

// The message cli::PathsApart's check() throws for `calls`, or "".
std::string cpp_clash(const std::vector<PathsCall>& calls) {
  cli::PathsApart paths;
  for (const PathsCall& call : calls) {
    if (call.kind == "reads") paths.reads(call.flag, call.path);
    if (call.kind == "writes") paths.writes(call.flag, call.path);
    if (call.kind == "writes_next") paths.writes_next(call.flag, call.path, call.extra);
    if (call.kind == "writes_matching") paths.writes_matching(call.flag, call.path, call.extra);
  }
  try {
    paths.check();
  } catch (const cli::UsageError& error) {
    return error.what();
  }
  return "";
}

// The message scripts/paths_apart.py's check() raises for `calls`, or "".
// Paths travel as hex, so any byte does.
std::string python_clash(const std::vector<PathsCall>& calls, const TemporaryFolder& scratch) {
  nlohmann::json list = nlohmann::json::array();
  for (const PathsCall& call : calls) {
    std::string hex;
    for (const unsigned char byte : call.path.string()) hex += fmt::format("{:02x}", byte);
    list.push_back({call.kind, call.flag, hex, call.extra});
  }
  const std::string program =
      "import json, os, sys\n"
      "sys.path.insert(0, sys.argv[1])\n"
      "from paths_apart import PathsApart, PathsClash\n"
      "paths = PathsApart()\n"
      "for kind, flag, path, extra in json.load(sys.stdin):\n"
      "    path = os.fsdecode(bytes.fromhex(path))\n"
      "    getattr(paths, kind)(flag, path, *([extra] if extra else []))\n"
      "try:\n"
      "    paths.check()\n"
      "except PathsClash as error:\n"
      "    sys.stdout.buffer.write(str(error).encode('utf-8', 'surrogateescape'))\n";
  const ProgramRun run =
      run_program(kPython, {"-c", program, (fs::path(ATTOGRAD_SOURCE_DIR) / "scripts").string()},
                  scratch.path, list.dump());
  INFO(run.err);
  REQUIRE(run.status == 0);
  return run.out;
}

}  // namespace

TEST_CASE("paths_apart.py says what cli::PathsApart says, word for word", "[torch]") {
  if (!torch_installed()) return;
  const TemporaryFolder scratch("attograd_paths_twin");
  const fs::path data = scratch.path / "pairs.tsv", checkpoint = scratch.path / "model.safetensors",
                 maps = scratch.path / "maps", link = scratch.path / "link.tsv",
                 hard = scratch.path / "hard.tsv";
  write_file(data, "a\tb\n");
  write_file(checkpoint, "not a real one");
  fs::create_directories(maps);
  fs::create_directories(scratch.path / "sub");
  fs::create_symlink(data.filename(), link);
  fs::create_hard_link(data, hard);
  fs::create_hard_link(data, maps / "attention_3.svg");
  const std::string hostile = "\x1b[2J\xc2\x85\xff" + std::string(300, 'x');
  const std::vector<std::vector<PathsCall>> cases = {
      {{"reads", "--data", data}, {"writes", "--report", data}},
      {{"reads", "--data", data}, {"writes", "--report", link}},
      {{"reads", "--data", data}, {"writes", "--report", hard}},
      {{"reads", "--data", data},
       {"writes", "--report", scratch.path / "sub" / ".." / "pairs.tsv"}},
      {{"writes", "--out", scratch.path / "a.svg"},
       {"writes", "--dot", scratch.path / "sub" / ".." / "a.svg"}},
      {{"reads", "--resume", checkpoint}, {"writes_next", "--out", checkpoint, "--resume"}},
      {{"reads", "--data", checkpoint}, {"writes_next", "--out", checkpoint, "--resume"}},
      {{"reads", "--data", data}, {"writes_matching", "--attention", maps, "attention_*.svg"}},
      {{"writes_matching", "--attention", maps, "attention_*.svg"},
       {"writes", "--report", maps / ".." / "maps" / "attention_7.svg"}},
      {{"writes_matching", "--attention", maps, "attention_*.svg"},
       {"writes", "--report", maps / "report.html"}},
      {{"writes_matching", "--attention", maps, "attention_*.svg"},
       {"writes_matching", "--frames", scratch.path / "." / "maps", "frame_*.svg"}},
      {{"reads", "--data", ""}, {"writes", "--report", ""}, {"writes", "--out", data}},
      {{"reads", "--data", scratch.path / hostile}, {"writes", "--report", scratch.path / hostile}},
  };
  size_t clashes = 0;
  for (const std::vector<PathsCall>& calls : cases) {
    const std::string expected = cpp_clash(calls);
    INFO("cli::PathsApart: '" << expected << "'");
    CHECK(python_clash(calls, scratch) == expected);
    clashes += !expected.empty();
  }
  CHECK(clashes == 10);  // the others are apart: a continued checkpoint, other names, no input
}

TEST_CASE("torch_bridge and torch_finetune: no output replaces an input by any spelling",
          "[torch]") {
  if (!torch_installed()) return;
  const TemporaryFolder scratch("attograd_torch_paths");
  const FinetuneInputs inputs = finetune_inputs(scratch);
  const fs::path other_pairs = scratch.path / "other_pairs.tsv", out = scratch.path / "out.pt",
                 link = scratch.path / "link.pt", hard = scratch.path / "hard.pt",
                 checkpoint_link = scratch.path / "checkpoint_link.safetensors",
                 dotted_out = scratch.path / "." / "out.pt";
  fs::copy_file(inputs.pairs, other_pairs);
  fs::create_symlink(inputs.bundle, link);
  fs::create_hard_link(inputs.bundle, hard);
  fs::create_symlink(inputs.checkpoint, checkpoint_link);
  const std::string bundle = inputs.bundle.string(), checkpoint = inputs.checkpoint.string(),
                    pairs = inputs.pairs.string();
  std::map<fs::path, std::string> before;
  for (const fs::path& file : {inputs.bundle, inputs.checkpoint, inputs.pairs, other_pairs})
    before[file] = read_file(file);
  struct Clash {
    fs::path script;
    std::vector<std::string> arguments;
    std::string expected;  // in the first line of stderr, naming both
  };
  const std::vector<Clash> clashes = {
      {kBridge,
       {"to-torch", checkpoint, checkpoint},
       "OUT '" + checkpoint +
           "' is an input (CHECKPOINT): writing it would replace it; give OUT "
           "another path"},
      {kBridge,
       {"to-torch", checkpoint, checkpoint_link.string()},
       "OUT '" + checkpoint_link.string() + "' is an input (CHECKPOINT '" + checkpoint + "')"},
      {kBridge,
       {"to-torch", checkpoint, pairs},
       "OUT '" + pairs + "' is an input (the data file CHECKPOINT names)"},
      {kBridge,
       {"from-torch", bundle, hard.string()},
       "OUT '" + hard.string() + "' is an input (SOURCE '" + bundle + "')"},
      {kBridge,
       {"from-torch", bundle, other_pairs.string(), "--data", other_pairs.string()},
       "OUT '" + other_pairs.string() + "' is an input (--data)"},
      {kBridge,
       {"from-torch", bundle, pairs},
       "OUT '" + pairs + "' is an input (the data file SOURCE names)"},
      {kFinetune, {bundle, bundle}, "OUT '" + bundle + "' is an input (SOURCE)"},
      {kFinetune, {bundle, link.string()}, "OUT '" + link.string() + "' is an input (SOURCE '"},
      {kFinetune,
       {bundle, out.string(), "--report", hard.string()},
       "--report '" + hard.string() + "' is an input (SOURCE '" + bundle + "')"},
      {kFinetune,
       {bundle, out.string(), "--data", other_pairs.string(), "--report", other_pairs.string()},
       "--report '" + other_pairs.string() + "' is an input (--data)"},
      {kFinetune, {bundle, pairs}, "OUT '" + pairs + "' is an input (the data file SOURCE names)"},
      {kFinetune,
       {bundle, out.string(), "--report", dotted_out.string()},
       "OUT '" + out.string() + "' and --report '" + dotted_out.string() +
           "' are one file: one would overwrite the "
           "other; give them different paths"},
  };
  for (const Clash& clash : clashes) {
    std::string shown = clash.script.filename().string();
    for (const std::string& argument : clash.arguments) shown += " " + argument;
    INFO(shown);
    const std::string line = refusal_line(timed_python(clash.script, clash.arguments, scratch));
    CHECK(line.find(clash.expected) != std::string::npos);
    for (const auto& [file, bytes] : before) {
      INFO("input " << file.string());
      CHECK(read_file(file) == bytes);
    }
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("torch_finetune: a --master-port in use ends at once with exit 2 and the remedy",
          "[torch]") {
  if (!torch_installed()) return;
  const TemporaryFolder scratch("attograd_torch_faults");
  const FinetuneInputs inputs = finetune_inputs(scratch);
  const ListeningSocket taken;
  const std::string port = std::to_string(taken.port());
  const TimedRun timed =
      timed_python(kFinetune,
                   {inputs.bundle.string(), (scratch.path / "out.pt").string(), "--steps", "2",
                    "--batch", "8", "--report", (scratch.path / "report.jsonl").string(),
                    "--master-port", port, "--timeout", "3"},
                   scratch);
  const std::string line = refusal_line(timed);
  CHECK(line == "error: --master-port " + port + ": 127.0.0.1:" + port +
                    " is in use (another job or program listens there); give another "
                    "--master-port, or omit it for a free port");
  CHECK_FALSE(fs::exists(scratch.path / "out.pt"));
  CHECK_FALSE(fs::exists(scratch.path / "report.jsonl"));
}

TEST_CASE("torch_finetune: a node whose node 0 never comes ends after --timeout with exit 2",
          "[torch]") {
  if (!torch_installed()) return;
  const TemporaryFolder scratch("attograd_torch_faults");
  const std::string port = std::to_string(unused_port());
  const std::string line = lone_node_refusal(scratch, port, "1", "3");
  CHECK(line.rfind("error: no node 0 at 127.0.0.1:" + port + ": waited ", 0) == 0);
  CHECK(line.find("(--timeout 3; last try: Connection refused); start node 0 first, or check "
                  "--master-addr and --master-port") != std::string::npos);
  CHECK_FALSE(fs::exists(scratch.path / "out.pt"));
}

TEST_CASE("torch_finetune: a node 0 whose other nodes never come ends after --timeout with exit 2",
          "[torch]") {
  if (!torch_installed()) return;
  const TemporaryFolder scratch("attograd_torch_faults");
  const std::string port = std::to_string(unused_port());
  const std::string line = lone_node_refusal(scratch, port, "0", "1");
  CHECK(line.rfind("error: the job's 2 processes did not all meet at 127.0.0.1:" + port +
                       ": rank 0 waited ",
                   0) == 0);
  CHECK(line.find("start every node within --timeout of node 0, with the same --master-addr, "
                  "--master-port and --nnodes") != std::string::npos);
  CHECK_FALSE(fs::exists(scratch.path / "out.pt"));
}

TEST_CASE(
    "torch_finetune: a process that dies mid-run ends the job with exit 2 naming its rank, and "
    "OUT is left as it was",
    "[torch]") {
  if (!torch_installed()) return;
  const TemporaryFolder scratch("attograd_torch_faults");
  const FinetuneInputs inputs = finetune_inputs(scratch);
  const fs::path out = scratch.path / "out.pt", report = scratch.path / "report.jsonl";
  write_file(out, "an older fine-tune");
  const std::vector<std::string> arguments = {
      inputs.bundle.string(), out.string(), "--steps", "4", "--batch", "8", "--report",
      report.string(),        "--timeout",  "3"};
  // On one machine: the parent sees its process 1 end.
  std::vector<std::string> one_machine = arguments;
  one_machine.insert(one_machine.end(), {"--nproc", "2"});
  const std::string line = refusal_line(
      timed_python(kFinetune, one_machine, scratch, {"ATTOGRAD_TEST_FINETUNE_EXIT=1:2"}));
  CHECK(line.rfind("error: rank 1 of 2 (process 1 on this machine) ended with exit status 3 "
                   "before the job finished; the others were stopped and nothing was written",
                   0) == 0);
  CHECK(read_file(out) == "an older fine-tune");
  CHECK_FALSE(fs::exists(report));
  // Two nodes of one process each: node 0's process sees its peer's
  // connection close in the middle of a step.
  const std::string port = std::to_string(unused_port());
  std::string node1 = "cd '" + scratch.path.string() +
                      "' && ATTOGRAD_TEST_FINETUNE_EXIT=1:2 /usr/bin/timeout --kill-after=5 60 " +
                      kPython.string() + " " + kFinetune.string();
  for (const std::string& argument : arguments) node1 += " '" + argument + "'";
  node1 += " --nproc 1 --nnodes 2 --node-rank 1 --master-port " + port;
  std::vector<std::string> node0 = arguments;
  node0.insert(node0.end(),
               {"--nproc", "1", "--nnodes", "2", "--node-rank", "0", "--master-port", port});
  std::string script = node1 + " > node1.out 2> node1.err & /usr/bin/timeout --kill-after=5 60 " +
                       kPython.string() + " " + kFinetune.string();
  for (const std::string& argument : node0) script += " '" + argument + "'";
  script += "; status=$?; wait; exit $status";
  const auto start = std::chrono::steady_clock::now();
  TimedRun two_nodes{run_program("/bin/sh", {"-c", script}, scratch.path)};
  two_nodes.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string survivor = refusal_line(two_nodes);
  CHECK(survivor.rfind("error: rank 1 of 2 ended during step 3 (rank 0 saw: ", 0) == 0);
  CHECK(survivor.find("nothing was written; find why it ended") != std::string::npos);
  CHECK(read_file(out) == "an older fine-tune");
  CHECK_FALSE(fs::exists(report));
}

}  // namespace test_torch_bridge
