// tests/models/test_torch_bridge.cpp — scripts/torch_bridge.py against the
// models it moves: attograd → PyTorch → attograd bit for bit, the same greedy
// translations and log-probabilities (within 1e-5) in both, and a model
// trained in PyTorch translating the same here. Needs /usr/bin/python3 with
// torch; without it each case says "skipped: torch not installed" and passes.
#include <fmt/core.h>
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "attograd.hpp"
#include "models/seq2seq/seq2seq.hpp"
#include "models/seq2seq/training.hpp"
#include "models/text/normalize.hpp"
#include "tests/support/program.hpp"
#include "tests/support/python.hpp"
#include "tests/support/translate_program.hpp"

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
  const ProgramRun result = run_program(kPython, arguments, scratch.path, input);
  INFO("python3 " << arguments.front() << " failed:\n" << result.err);
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
                                 const TemporaryFolder& scratch) {
  std::string input;
  for (const std::string& line : kSentences) input += line + "\n";
  const ProgramRun run = python({kBridge.string(), "translate", bundle.string()}, scratch, input);
  std::vector<Greedy> out;
  for (const std::string& line : lines_of(run.out)) {
    const nlohmann::json parsed = nlohmann::json::parse(line);
    out.push_back(
        {parsed.at("words").get<std::vector<std::string>>(), parsed.at("log_prob").get<double>()});
  }
  REQUIRE(out.size() == kSentences.size());
  return out;
}

void require_same_translations(const std::filesystem::path& checkpoint,
                               const std::filesystem::path& bundle,
                               const TemporaryFolder& scratch) {
  const seq2seq::CheckpointInfo info = seq2seq::read_checkpoint_info(checkpoint);
  const auto model = seq2seq::load_model(checkpoint, info);
  const std::vector<Greedy> theirs = torch_greedy(bundle, scratch);
  for (size_t i = 0; i < kSentences.size(); ++i) {
    const Greedy ours = attograd_greedy(*model, info, kSentences[i]);
    INFO("sentence '" << kSentences[i] << "'");
    CHECK(ours.words == theirs[i].words);
    CHECK(std::abs(ours.log_prob - theirs[i].log_prob) <= 1e-5);
  }
}

// Every tensor of a, bit for bit in b, under the same name and shape.
void require_same_tensors(const std::filesystem::path& a, const std::filesystem::path& b) {
  const nn::TensorFile left = nn::read_safetensors(a);
  const nn::TensorFile right = nn::read_safetensors(b);
  std::map<std::string, Tensor> by_name(right.tensors.begin(), right.tensors.end());
  size_t model_tensors = 0;
  for (const auto& [name, tensor] : left.tensors) {
    if (name.rfind("optimizer.", 0) == 0) continue;
    ++model_tensors;
    INFO("tensor " << name);
    REQUIRE(by_name.count(name) == 1);
    REQUIRE(by_name[name].shape() == tensor.shape());
    const std::vector<real> x = tensor.to_vector(), y = by_name[name].to_vector();
    CHECK(std::memcmp(x.data(), y.data(), x.size() * sizeof(real)) == 0);
  }
  CHECK(model_tensors == right.tensors.size());
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
      require_same_tensors(checkpoint, back);
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
  CHECK(refused.err.find("not a tutorial-recipe translation checkpoint") != std::string::npos);
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

}  // namespace

TEST_CASE("torch_bridge: a hostile .pt or checkpoint runs no code and is refused in one line",
          "[torch]") {
  if (!torch_installed()) return;
  const TemporaryFolder scratch("attograd_torch_bridge");
  const auto [checkpoint, bundle] = tiny_pair(DecoderKind::location, scratch);
  const auto hostile = scratch.path / "hostile";
  std::filesystem::create_directory(hostile);
  python({kHostileFiles.string(), checkpoint.string(), bundle.string(), hostile.string()}, scratch);
  const nlohmann::json cases = nlohmann::json::parse(read_file(hostile / "cases.json"));
  REQUIRE(cases.size() >= 41);
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
  const std::vector<std::pair<std::vector<std::string>, std::string>> refusals = {
      {{"to-torch", "/dev/zero", "out.pt"}, "/dev/zero: a device, not a regular file"},
      {{"from-torch", "/dev/zero", "out.safetensors"}, "/dev/zero: a device, not a regular file"},
      {{"to-torch", fifo.string(), "out.pt"}, "fifo: a FIFO, not a regular file"},
      {{"from-torch", fifo.string(), "out.safetensors"}, "fifo: a FIFO, not a regular file"},
      {{"translate", fifo.string()}, "fifo: a FIFO, not a regular file"},
      {{"to-torch", scratch.path.string(), "out.pt"}, "a directory, not a regular file"},
      {{"to-torch", "missing.safetensors", "out.pt"}, "missing.safetensors: No such file"},
      {{"to-torch", checkpoint.string(), (checkpoint / "out.pt").string()}, "is not a folder"},
      {{"from-torch", bundle.string(), scratch.path.string()}, "it is a folder; name a file"},
      {{"to-torch", checkpoint.string()}, "the following arguments are required: out"},
  };
  for (const auto& [arguments, expected] : refusals) {
    std::vector<std::string> command = {kBridge.string()};
    command.insert(command.end(), arguments.begin(), arguments.end());
    INFO(arguments.front() << " " << arguments[1]);
    const ProgramRun refused = run_program(kPython, command, scratch.path);
    require_one_line_error(refused);
    CHECK(refused.err.find(expected) != std::string::npos);
  }
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
