// tests/models/test_torch_gpt.cpp — scripts/torch_bridge.py and
// scripts/torch_finetune.py with the character GPT of `gpt train`: attograd →
// PyTorch (nanoGPT's names, the head tied) → attograd bit for bit; PyTorch's
// logits equal attograd's (within 1e-5); the bridge's `sample` prints what
// `gpt sample` prints for the same seed; a two-process DistributedDataParallel
// fine-tune comes back to `gpt sample`; a GPT with biases keeps nanoGPT's
// bias names and attograd's logits; bad bundles, checkpoints, flags, texts
// and output paths are one line. Each case trains its own tiny GPT (20
// iterations, a second at most). Needs /usr/bin/python3 with torch (else
// "skipped: torch not installed") and the float `gpt` program (in the double
// test binary the cases return at once).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "attograd.hpp"
#include "models/gpt/char_data.hpp"
#include "models/gpt/gpt.hpp"
#include "nn/init.hpp"
#include "nn/safetensors.hpp"
#include "tests/support/program.hpp"
#include "tests/support/python.hpp"
#include "tests/support/tensor_checks.hpp"

namespace test_torch_gpt {

namespace fs = std::filesystem;
using namespace attograd;
using namespace attograd::testing;

namespace {

constexpr bool kFloatBuild = std::is_same_v<real, float>;
const fs::path kBridge = fs::path(ATTOGRAD_SOURCE_DIR) / "scripts" / "torch_bridge.py";
const fs::path kFinetune = fs::path(ATTOGRAD_SOURCE_DIR) / "scripts" / "torch_finetune.py";
const Program gpt_program(fs::path(ATTOGRAD_BINARY_DIR) / "examples" / "gpt");

// Runs python3 with `arguments` under timeout(1) and requires exit status 0.
ProgramRun python(const std::vector<std::string>& arguments, const TemporaryFolder& scratch) {
  std::vector<std::string> under_timeout = {"--kill-after=10", "300", kPython.string()};
  under_timeout.insert(under_timeout.end(), arguments.begin(), arguments.end());
  const ProgramRun result = run_program("/usr/bin/timeout", under_timeout, scratch.path);
  INFO("python3 " << arguments.front() << " failed (status 124: it ran past 300 s):\n"
                  << result.err);
  REQUIRE(result.status == 0);
  return result;
}

// A text of a few thousand characters with structure to learn (test_gpt_cli's).
std::string sample_text() {
  std::string text;
  for (int i = 0; i < 200; ++i) text += i % 3 == 0 ? "le chat dort. " : "un été à paris.\n";
  return text;
}

// small.txt in `scratch` and a GPT trained on it 20 iterations (block 16, so
// sampling 60 characters restarts the window): its checkpoint.
fs::path tiny_gpt(const TemporaryFolder& scratch) {
  write_file(scratch.path / "small.txt", sample_text());
  const ProgramRun trained =
      gpt_program({"train", "--data", (scratch.path / "small.txt").string(), "--out",
                   (scratch.path / "run").string(), "--iters", "20", "--layers", "1", "--heads",
                   "2", "--embd", "16", "--block", "16", "--batch", "4"},
                  scratch.path);
  INFO(trained.err);
  REQUIRE(trained.status == 0);
  return scratch.path / "run" / "checkpoint.safetensors";
}

fs::path to_torch(const fs::path& checkpoint, const TemporaryFolder& scratch) {
  const fs::path bundle = scratch.path / "gpt.pt";
  python({kBridge.string(), "to-torch", checkpoint.string(), bundle.string()}, scratch);
  return bundle;
}

// A Python program run with the bundle as argv[1] (torch and scripts/ on the path).
ProgramRun python_code(const std::string& code, const std::vector<std::string>& arguments,
                       const TemporaryFolder& scratch) {
  std::vector<std::string> command = {
      "-c", "import sys, json, torch; sys.path.insert(0, " +
                nlohmann::json((fs::path(ATTOGRAD_SOURCE_DIR) / "scripts").string()).dump() +
                ")\n" + code};
  command.insert(command.end(), arguments.begin(), arguments.end());
  return python(command, scratch);
}

std::vector<std::string> sample_flags(const std::string& prompt, int tokens, int seed,
                                      double temperature, int top_k) {
  return {"--prompt",      prompt,
          "--tokens",      std::to_string(tokens),
          "--seed",        std::to_string(seed),
          "--temperature", fmt::format("{}", temperature),
          "--top-k",       std::to_string(top_k)};
}

std::string gpt_sample(const fs::path& checkpoint, const std::vector<std::string>& flags,
                       const TemporaryFolder& scratch, bool kv_cache = true) {
  std::vector<std::string> arguments = {"sample", "--checkpoint", checkpoint.string()};
  arguments.insert(arguments.end(), flags.begin(), flags.end());
  if (!kv_cache) arguments.push_back("--no-kv-cache");
  const ProgramRun run = gpt_program(arguments, scratch.path);
  INFO(run.err);
  REQUIRE(run.status == 0);
  return run.out;
}

std::string bridge_sample(const fs::path& bundle, const std::vector<std::string>& flags,
                          const TemporaryFolder& scratch) {
  std::vector<std::string> arguments = {kBridge.string(), "sample", bundle.string()};
  arguments.insert(arguments.end(), flags.begin(), flags.end());
  return python(arguments, scratch).out;
}

// The ids of the test text's first 16 characters, the logits' positions.
std::vector<int64_t> first_ids(const gpt::Vocabulary& vocabulary) {
  std::vector<int64_t> ids = vocabulary.encode(gpt::char_text(sample_text(), "text").characters);
  ids.resize(16);
  return ids;
}

// Python that loads the bundle argv[1] into torch_models.GPT and runs it on
// the ids argv[2] (a JSON list): z, the (1,T,V) logits, for a print to follow.
constexpr const char* kTorchLogits =
    "import torch_models\n"
    "b = torch.load(sys.argv[1], weights_only=True); c = json.loads(b['config'])\n"
    "m = torch_models.GPT(c); m.load_state_dict(b['model'], strict=True); m.eval()\n"
    "with torch.no_grad(): z = m(torch.tensor([json.loads(sys.argv[2])]))\n";

}  // namespace

TEST_CASE("torch_gpt: to-torch then from-torch is bit for bit, in nanoGPT's names, head tied",
          "[torch]") {
  if (!torch_installed() || !kFloatBuild) return;
  const TemporaryFolder scratch("attograd_torch_gpt");
  const fs::path checkpoint = tiny_gpt(scratch);
  const fs::path bundle = to_torch(checkpoint, scratch);

  // The bundle: nanoGPT's state-dict names, lm_head.weight the very tensor
  // transformer.wte.weight is, the characters and a JSON config.
  const ProgramRun inside = python_code(
      "b = torch.load(sys.argv[1], weights_only=True); m = b['model']\n"
      "print(json.dumps({'names': list(m), 'tied': m['lm_head.weight'].data_ptr() == "
      "m['transformer.wte.weight'].data_ptr(), 'characters': b['characters'], "
      "'config': json.loads(b['config'])}))",
      {bundle.string()}, scratch);
  const nlohmann::json found = nlohmann::json::parse(inside.out);
  CHECK(found["names"] ==
        nlohmann::json({"transformer.wte.weight", "transformer.wpe.weight",
                        "transformer.h.0.ln_1.weight", "transformer.h.0.attn.c_attn.weight",
                        "transformer.h.0.attn.c_proj.weight", "transformer.h.0.ln_2.weight",
                        "transformer.h.0.mlp.c_fc.weight", "transformer.h.0.mlp.c_proj.weight",
                        "transformer.ln_f.weight", "lm_head.weight"}));
  CHECK(found["tied"] == true);
  const nn::Metadata metadata = nn::read_metadata(checkpoint);
  std::string characters;
  for (const auto& c : found["characters"]) characters += c.get<std::string>();
  CHECK(characters == metadata.at("gpt.vocabulary"));
  CHECK(found["config"]["recipe"] == "gpt");
  CHECK(found["config"]["n_embd"] == 16);
  CHECK(found["config"]["n_head"] == 2);
  CHECK(found["config"]["block_size"] == 16);

  // Back: the same bits, the same gpt.* entries.
  const fs::path back = scratch.path / "back.safetensors";
  python({kBridge.string(), "from-torch", bundle.string(), back.string()}, scratch);
  CHECK(require_same_model_tensors(checkpoint, back) == 9);  // wte, wpe, 6 in the block, ln_f
  const nn::Metadata returned = nn::read_metadata(back);
  for (const auto& [key, value] : metadata) {
    if (key.rfind("gpt.", 0) != 0) continue;
    INFO("metadata " << key);
    REQUIRE(returned.count(key) == 1);
    CHECK(returned.at(key) == value);
  }
}

TEST_CASE("torch_gpt: nanoGPT's GPT in PyTorch gives attograd's logits", "[torch]") {
  if (!torch_installed() || !kFloatBuild) return;
  const TemporaryFolder scratch("attograd_torch_gpt");
  const fs::path checkpoint = tiny_gpt(scratch);
  const fs::path bundle = to_torch(checkpoint, scratch);

  // attograd: the logits after each of the text's first 16 characters.
  const nn::Metadata metadata = nn::read_metadata(checkpoint);
  const gpt::Vocabulary vocabulary(
      gpt::char_text(metadata.at("gpt.vocabulary"), "the vocabulary").characters);
  gpt::GPT model(gpt::GPTOptions(vocabulary.size()).block_size(16).n_layer(1).n_head(2).n_embd(16));
  nn::load(model, checkpoint);
  const std::vector<int64_t> ids = first_ids(vocabulary);
  const nn::EvalModeGuard eval_mode(model);
  const NoGradGuard no_grad;
  const std::vector<real> ours = model.forward(ids, 1, 16).to_vector();

  // PyTorch: torch_models.GPT with the bundle's state dict, the same ids.
  const ProgramRun theirs_run =
      python_code(std::string(kTorchLogits) + "print(json.dumps(z.reshape(-1).tolist()))",
                  {bundle.string(), nlohmann::json(ids).dump()}, scratch);
  const std::vector<double> theirs = nlohmann::json::parse(theirs_run.out);
  REQUIRE(theirs.size() == ours.size());
  double largest = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    largest = std::max(largest, std::abs(double(ours[i]) - theirs[i]));
  }
  INFO("largest difference " << largest << " over " << ours.size() << " logits");
  CHECK(largest <= 1e-5);
}

TEST_CASE("torch_gpt: the bridge's sample prints what gpt sample prints for the same seed",
          "[torch]") {
  if (!torch_installed() || !kFloatBuild) return;
  const TemporaryFolder scratch("attograd_torch_gpt");
  const fs::path checkpoint = tiny_gpt(scratch);
  const fs::path bundle = to_torch(checkpoint, scratch);
  // Fixed seeds: a logit that rounds differently in PyTorch could, in rare
  // cases, move a draw across a boundary; these seeds are checked to agree.
  // 60 characters at block 16 restart the window three times; top-k 0 and
  // 3, temperatures 0.8 and 1.3, a prompt longer than the block.
  for (const auto& flags :
       {sample_flags("le ", 60, 1, 0.8, 0), sample_flags("un été", 60, 7, 1.3, 3),
        sample_flags("un été à paris.\nle chat", 60, 1337, 0.8, 200)}) {
    INFO("flags " << flags[1] << " seed " << flags[5] << " top-k " << flags[9]);
    const std::string ours = gpt_sample(checkpoint, flags, scratch);
    CHECK(ours.size() > flags[1].size() + 60);
    CHECK(bridge_sample(bundle, flags, scratch) == ours);
    CHECK(gpt_sample(checkpoint, flags, scratch, /*kv_cache=*/false) == ours);
  }
}

TEST_CASE(
    "torch_finetune: a GPT on 2 processes, and from-torch of the result samples as the bundle",
    "[torch]") {
  if (!torch_installed() || !kFloatBuild) return;
  const TemporaryFolder scratch("attograd_torch_gpt");
  const fs::path checkpoint = tiny_gpt(scratch);
  const fs::path bundle = to_torch(checkpoint, scratch);
  const fs::path tuned = scratch.path / "tuned.pt", report = scratch.path / "report.jsonl";
  python({kFinetune.string(), bundle.string(), tuned.string(), "--nproc", "2", "--steps", "4",
          "--batch", "8", "--lr", "0.01", "--report", report.string(), "--timeout", "60"},
         scratch);
  const std::vector<std::string> lines = lines_of(read_file(report));
  REQUIRE(lines.size() == 5);
  for (size_t i = 0; i < 4; ++i) {
    const nlohmann::json step = nlohmann::json::parse(lines[i]);
    CHECK(step["digests"].size() == 2);
    CHECK(step["digests"][0] == step["digests"][1]);  // DDP kept the processes together
  }
  // The loss before, over the validation windows in PyTorch, is the one
  // `gpt train` recorded over the same windows in attograd.
  const nlohmann::json losses = nlohmann::json::parse(lines.back());
  const nlohmann::json curve =
      nlohmann::json::parse(nn::read_metadata(checkpoint).at("gpt.losses"));
  CHECK(std::abs(losses["loss_before"].get<double>() - curve.back()[1].get<double>()) <= 1e-5);
  CHECK(losses["loss_after"].get<double>() < losses["loss_before"].get<double>());

  const fs::path back = scratch.path / "tuned.safetensors";
  python({kBridge.string(), "from-torch", tuned.string(), back.string()}, scratch);
  const auto flags = sample_flags("le ", 40, 3, 0.8, 0);
  const std::string ours = gpt_sample(back, flags, scratch);
  CHECK(bridge_sample(tuned, flags, scratch) == ours);
  CHECK(ours != gpt_sample(checkpoint, flags, scratch));  // the weights moved
}

TEST_CASE("torch_gpt: nine damaged GPT bundles are refused in one line, nothing written",
          "[torch]") {
  if (!torch_installed() || !kFloatBuild) return;
  const TemporaryFolder scratch("attograd_torch_gpt");
  const fs::path checkpoint = tiny_gpt(scratch);
  const fs::path bundle = to_torch(checkpoint, scratch);
  // Damaged copies of the bundle: each a Python edit of b (the loaded bundle).
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"b['model']['lm_head.weight'] = b['model']['lm_head.weight'].clone() + 1",
       "lm_head.weight differs from transformer.wte.weight; the GPT's head is tied"},
      {"del b['model']['transformer.h.0.mlp.c_fc.weight']",
       "model tensor 'transformer.h.0.mlp.c_fc.weight' is missing"},
      {"b['model']['transformer.h.0.attn.bias'] = torch.ones(16, 16)",
       "model tensor 'transformer.h.0.attn.bias' is not one of nanoGPT's GPT (bias=False)"},
      {"b['model']['transformer.wpe.weight'][0, 0] = float('nan')",
       "model tensor 'transformer.wpe.weight' holds a NaN or an infinity"},
      {"b['characters'] = b['characters'][::-1]",
       "characters is not distinct characters in code-point order"},
      {"c = json.loads(b['config']); c['n_embd'] = 4096; b['config'] = json.dumps(c)",
       "model tensor 'transformer.wte.weight' is [19, 16]; the config and the characters make it "
       "[19, 4096]"},
      {"c = json.loads(b['config']); c['n_head'] = 3; b['config'] = json.dumps(c)",
       "config n_head 3 does not divide n_embd 16"},
      {"c = json.loads(b['config']); c['recipe'] = 'llama'; b['config'] = json.dumps(c)",
       "config recipe is 'llama' beside a 'model' state dict"},
      {"del b['characters']", "lacks characters; expected the GPT layout"},
  };
  // One Python run writes bad0.pt, bad1.pt, …; from-torch and sample take
  // turns refusing them (both check a bundle through the same gpt_bundle and
  // gpt_model before anything else), each in a process of its own.
  nlohmann::json codes = nlohmann::json::array();
  for (const auto& edit : edits) codes.push_back(edit.first);
  python_code(
      "for i, code in enumerate(json.loads(sys.argv[2])):\n"
      "    b = torch.load(sys.argv[1], weights_only=True)\n"
      "    exec(code)\n"
      "    torch.save(b, f'{sys.argv[3]}/bad{i}.pt')",
      {bundle.string(), codes.dump(), scratch.path.string()}, scratch);
  Refusals refusals;
  std::vector<std::string> outputs;
  for (size_t i = 0; i < edits.size(); ++i) {
    const std::string bad = (scratch.path / fmt::format("bad{}.pt", i)).string();
    outputs.push_back((scratch.path / fmt::format("bad{}.safetensors", i)).string());
    if (i % 2 == 0) {
      refusals.push_back({{"from-torch", bad, outputs.back()}, edits[i].second});
    } else {
      refusals.push_back({{"sample", bad}, edits[i].second});
    }
  }
  require_refusals(kBridge, refusals, scratch);
  for (const std::string& out : outputs) CHECK(!fs::exists(out));
}

TEST_CASE("torch_gpt: a bad checkpoint, prompt, flag, text or output path is refused in one line",
          "[torch]") {
  if (!torch_installed() || !kFloatBuild) return;
  const TemporaryFolder scratch("attograd_torch_gpt");
  const fs::path checkpoint = tiny_gpt(scratch);
  const fs::path bundle = to_torch(checkpoint, scratch);
  const std::string text = (scratch.path / "small.txt").string();
  Refusals refusals;
  // A checkpoint whose sizes were edited, a prompt outside the characters,
  // a translation bundle where a GPT's is wanted, flags out of range.
  const fs::path edited = scratch.path / "edited.safetensors";
  {
    std::string bytes = read_file(checkpoint);
    const size_t at = bytes.find("\"gpt.heads\":\"2\"");
    REQUIRE(at != std::string::npos);
    bytes.replace(at, 15, "\"gpt.heads\":\"x\"");
    write_file(edited, bytes);
  }
  refusals.push_back({{"to-torch", edited.string(), (scratch.path / "e.pt").string()},
                      "the checkpoint's gpt.heads is 'x', not an integer in [1, 64]"});
  refusals.push_back(
      {{"sample", bundle.string(), "--prompt", "le zèbre"},
       "--prompt: character 4 'z' is not in the model's vocabulary of 19 characters"});
  refusals.push_back({{"sample", bundle.string(), "--tokens", "0"}, "0 is outside [1, 1000000]"});
  refusals.push_back({{"translate", bundle.string()}, "a GPT bundle, not a translator"});
  refusals.push_back(
      {{"sample", bundle.string(), "--temperature", "0"}, "0 is outside [0.001, 100]"});
  // No output replaces an input: the text the checkpoint (and so the bundle) names.
  refusals.push_back({{"to-torch", checkpoint.string(), text},
                      "OUT '" + text + "' is an input (the data file CHECKPOINT names)"});
  refusals.push_back({{"from-torch", bundle.string(), text},
                      "OUT '" + text + "' is an input (the data file SOURCE names)"});
  require_refusals(kBridge, refusals, scratch);
  CHECK(!fs::exists(scratch.path / "e.pt"));
  CHECK(read_file(text) == sample_text());

  // The fine-tune checks its paths and the text before any process starts.
  const fs::path bad_text = scratch.path / "other.txt";
  write_file(bad_text, sample_text() + "xyz");
  require_refusals(
      kFinetune,
      {{{bundle.string(), text}, "OUT '" + text + "' is an input (the data file SOURCE names)"},
       {{bundle.string(), (scratch.path / "t.pt").string(), "--data", bad_text.string()},
        "character 3067 'x' is not in the model's vocabulary of 19 characters"}},
      scratch);
  CHECK(!fs::exists(scratch.path / "t.pt"));
  CHECK(read_file(text) == sample_text());
}

TEST_CASE("torch_gpt: a GPT with biases has nanoGPT's bias names and logits, and stays in PyTorch",
          "[torch]") {
  if (!torch_installed() || !kFloatBuild) return;
  const TemporaryFolder scratch("attograd_torch_gpt");
  const fs::path trained = tiny_gpt(scratch);
  // attograd's GPT with bias(true), saved with the trained one's gpt.* entries.
  const nn::Metadata metadata = nn::read_metadata(trained);
  const gpt::Vocabulary vocabulary(
      gpt::char_text(metadata.at("gpt.vocabulary"), "the vocabulary").characters);
  Generator generator(5);
  gpt::GPT model(
      gpt::GPTOptions(vocabulary.size()).block_size(16).n_layer(1).n_head(2).n_embd(16).bias(true),
      generator);
  for (auto& named : model.named_parameters()) {  // the biases and norms away from 0 and 1
    if (named.second.dim() == 1) nn::normal_(named.second, 0.1, 0.3, generator);
  }
  nn::Metadata entries;
  for (const auto& [key, value] : metadata) {
    if (key.rfind("gpt.", 0) == 0) entries[key] = value;
  }
  const fs::path checkpoint = scratch.path / "bias.safetensors";
  nn::save(model, checkpoint, entries);
  const fs::path bundle = to_torch(checkpoint, scratch);

  const std::vector<int64_t> ids = first_ids(vocabulary);
  const nn::EvalModeGuard eval_mode(model);
  const NoGradGuard no_grad;
  const std::vector<real> ours = model.forward(ids, 1, 16).to_vector();
  const ProgramRun theirs_run =
      python_code(std::string(kTorchLogits) +
                      "print(json.dumps({'bias': c['bias'], 'names': [n for n in b['model'] if "
                      "n.endswith('.bias')], 'logits': z.reshape(-1).tolist()}))",
                  {bundle.string(), nlohmann::json(ids).dump()}, scratch);
  const nlohmann::json theirs = nlohmann::json::parse(theirs_run.out);
  CHECK(theirs["bias"] == true);
  CHECK(theirs["names"] ==
        nlohmann::json({"transformer.h.0.ln_1.bias", "transformer.h.0.attn.c_attn.bias",
                        "transformer.h.0.attn.c_proj.bias", "transformer.h.0.ln_2.bias",
                        "transformer.h.0.mlp.c_fc.bias", "transformer.h.0.mlp.c_proj.bias",
                        "transformer.ln_f.bias"}));
  const std::vector<double> logits = theirs["logits"];
  REQUIRE(logits.size() == ours.size());
  double largest = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    largest = std::max(largest, std::abs(double(ours[i]) - logits[i]));
  }
  INFO("largest difference " << largest);
  CHECK(largest <= 1e-5);
  // `gpt` builds the bias-free GPT: from-torch says so and writes nothing.
  const fs::path back = scratch.path / "back.safetensors";
  require_refusals(
      kBridge,
      {{{"from-torch", bundle.string(), back.string()},
        "a GPT with biases (config bias true); `gpt` builds nanoGPT's bias=False GPT"}},
      scratch);
  CHECK(!fs::exists(back));
}

}  // namespace test_torch_gpt

namespace test_torch_gpt {

TEST_CASE("torch_finetune: a GPT job whose process dies mid-run ends in one line, OUT kept",
          "[torch]") {
  if (!torch_installed() || !kFloatBuild) return;
  const TemporaryFolder scratch("attograd_torch_gpt");
  const fs::path bundle = to_torch(tiny_gpt(scratch), scratch);
  const fs::path out = scratch.path / "tuned.pt", report = scratch.path / "report.jsonl";
  write_file(out, "an older fine-tune");
  // Rank 1 leaves with status 3 after step 2 (the fine-tune's test hook).
  const ProgramRun run = run_program(
      "/usr/bin/env",
      {"ATTOGRAD_TEST_FINETUNE_EXIT=1:2", "/usr/bin/timeout", "--kill-after=10", "120",
       kPython.string(), kFinetune.string(), bundle.string(), out.string(), "--nproc", "2",
       "--steps", "4", "--batch", "8", "--report", report.string(), "--timeout", "30"},
      scratch.path);
  INFO(run.out);
  require_one_line_error(run);
  CHECK(run.err.rfind("error: rank 1 of 2 (process 1 on this machine) ended with exit status 3 "
                      "before the job finished; the others were stopped and nothing was written",
                      0) == 0);
  CHECK(read_file(out) == "an older fine-tune");
  CHECK_FALSE(fs::exists(report));
}

}  // namespace test_torch_gpt
