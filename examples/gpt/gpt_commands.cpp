// examples/gpt/gpt_commands.cpp — see gpt_commands.hpp.
#include "examples/gpt/gpt_commands.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numbers>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "examples/common/interrupt.hpp"
#include "examples/common/output_folder.hpp"
#include "examples/common/paths_apart.hpp"
#include "examples/common/run_report.hpp"
#include "models/gpt/char_data.hpp"
#include "models/gpt/gpt.hpp"
#include "models/gpt/sample.hpp"
#include "nn/checkpoint.hpp"
#include "nn/loss.hpp"
#include "nn/optim.hpp"
#include "plot/svg_line_plot.hpp"
#include "tensor/error.hpp"
#include "tensor/parallel.hpp"

namespace attograd::gpt_program {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kCheckpointName = "checkpoint.safetensors";
constexpr const char* kDefaultData = "data/eng-fra.tsv";
constexpr int kDefaultColumn = 1;  // the French side
// Windows per validation forward; and the windows of a progress line's
// estimate (the final figure reads every window).
constexpr int64_t kEvalBatch = 64;
constexpr int64_t kProgressWindows = 256;
constexpr int64_t kTimingWarmup = 10;      // iterations before tokens/s is timed
constexpr int64_t kReportCharacters = 24;  // the sample report.html draws every head over

struct Text {
  gpt::Vocabulary vocabulary;
  gpt::Split split;
};

Text load_text(const std::string& data, int column, int64_t block) {
  const gpt::CharText text = gpt::read_char_text(data, column);
  gpt::Vocabulary vocabulary(text.characters);
  gpt::Split split = gpt::split_90_10(vocabulary.encode(text.characters));
  const auto train = static_cast<int64_t>(split.train.size());
  const auto validation = static_cast<int64_t>(split.validation.size());
  if (train <= block || validation < block + 1) {
    throw cli::UsageError(fmt::format(
        "--data: the text has {} characters: its 90 % ({}) and 10 % ({}) must each hold a "
        "window of --block {} + 1; give a text of at least {} characters or a smaller --block",
        text.characters.size(), train, validation, block, 10 * (block + 1)));
  }
  return {std::move(vocabulary), std::move(split)};
}

gpt::GPTOptions model_options(int64_t vocabulary, const TrainFlags& flags) {
  return gpt::GPTOptions(vocabulary)
      .block_size(flags.block)
      .n_layer(flags.layers)
      .n_head(flags.heads)
      .n_embd(flags.embd);
}

// The mean cross-entropy over the first `limit` validation windows (all with
// limit < 0).
double validation_loss(gpt::GPT& model, const std::vector<int64_t>& ids, int64_t block,
                       int64_t limit) {
  const nn::EvalModeGuard eval_mode(model);
  const NoGradGuard no_grad;
  std::vector<int64_t> offsets = gpt::window_offsets(int64_t(ids.size()), block);
  if (limit >= 0 && int64_t(offsets.size()) > limit) offsets.resize(size_t(limit));
  double total = 0;
  for (size_t first = 0; first < offsets.size(); first += kEvalBatch) {
    const size_t count = std::min<size_t>(kEvalBatch, offsets.size() - first);
    const gpt::Batch batch = gpt::windows(
        ids,
        {offsets.begin() + std::ptrdiff_t(first), offsets.begin() + std::ptrdiff_t(first + count)},
        block);
    total += double(model.loss(batch.inputs, batch.targets, int64_t(count), block).item()) *
             double(count);
  }
  return total / double(offsets.size());
}

nn::Metadata checkpoint_metadata(const TrainFlags& flags, const std::string& data, int column,
                                 const gpt::Vocabulary& vocabulary, int64_t iteration,
                                 const std::vector<std::pair<double, double>>& curve) {
  nlohmann::json losses = nlohmann::json::array();
  for (const auto& [it, loss] : curve) losses.push_back({it, loss});
  return {
      {"gpt.vocabulary", vocabulary.joined()},
      {"gpt.data", data},
      {"gpt.column", std::to_string(column)},
      {"gpt.block", std::to_string(flags.block)},
      {"gpt.layers", std::to_string(flags.layers)},
      {"gpt.heads", std::to_string(flags.heads)},
      {"gpt.embd", std::to_string(flags.embd)},
      {"gpt.batch", std::to_string(flags.batch)},
      {"gpt.iters", std::to_string(flags.iters)},
      {"gpt.seed", std::to_string(flags.seed)},
      {"gpt.iteration", std::to_string(iteration)},
      {"gpt.decay_iters", std::to_string(flags.decay_iters > 0 ? flags.decay_iters : flags.iters)},
      {"gpt.losses", losses.dump()}};
}

int64_t metadata_count(const nn::Metadata& metadata, const std::string& key,
                       const std::string& file) {
  const auto found = metadata.find(key);
  if (found == metadata.end()) {
    throw cli::UsageError(fmt::format(
        "'{}' has no '{}': not a checkpoint of `gpt train`; give one that gpt train wrote", file,
        key));
  }
  try {
    return std::stoll(found->second);
  } catch (const std::exception&) {
    throw cli::UsageError(
        fmt::format("'{}': '{}' is not a number; the checkpoint is damaged", file, key));
  }
}

gpt::Vocabulary checkpoint_vocabulary(const nn::Metadata& metadata, const std::string& file) {
  const auto found = metadata.find("gpt.vocabulary");
  if (found == metadata.end() || found->second.empty()) {
    throw cli::UsageError(fmt::format(
        "'{}' has no vocabulary: not a checkpoint of `gpt train`; give one that gpt train wrote",
        file));
  }
  return gpt::Vocabulary(gpt::char_text(found->second, "the checkpoint's vocabulary").characters);
}

plot::LineChart loss_chart(const std::vector<std::pair<double, double>>& curve) {
  std::vector<double> x, y;
  for (const auto& [it, loss] : curve) {
    x.push_back(it);
    y.push_back(loss);
  }
  plot::LineChart chart;
  chart.title("GPT: validation loss (cross-entropy per character)")
      .x_label("iteration")
      .y_label("loss")
      .legend(plot::LegendPosition::hidden);
  if (!x.empty()) chart.line("validation", x, y);
  return chart;
}

// A character as a map's label: the control characters by name.
std::string label_of(const std::string& character) {
  if (character == "\n") return "\\n";
  if (character == " ") return "␣";
  if (character == "\t") return "\\t";
  return character;
}

// report.html: the settings, the figures, the loss curve and every block's
// and head's causal attention over the validation text's first characters.
cli::RunReport run_report(gpt::GPT& model, const TrainFlags& flags, const Text& text,
                          const std::vector<std::pair<double, double>>& curve,
                          const nlohmann::json& figures, const std::string& graph_svg) {
  cli::RunReport report("gpt train");
  report.add_graph_svg(graph_svg);
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, int64_t>>{{"iterations", flags.iters},
                                                    {"batch", flags.batch},
                                                    {"block", flags.block},
                                                    {"layers", flags.layers},
                                                    {"heads", flags.heads},
                                                    {"embd", flags.embd},
                                                    {"vocabulary", text.vocabulary.size()},
                                                    {"seed", flags.seed}}) {
    report.setting(name, std::to_string(value));
  }
  for (const auto& [name, value] : figures.items()) report.figure(name, value.dump());
  report.picture("Validation loss", loss_chart(curve).to_svg());
  const int64_t positions = std::min<int64_t>(kReportCharacters, flags.block);
  const std::vector<int64_t> ids(text.split.validation.begin(),
                                 text.split.validation.begin() + positions);
  std::vector<std::string> labels;
  for (int64_t id : ids) labels.push_back(label_of(text.vocabulary.characters()[size_t(id)]));
  {
    const nn::EvalModeGuard eval_mode(model);
    const NoGradGuard no_grad;
    model.keep_attention_weights(true);
    model.forward(ids, 1, positions);
    model.keep_attention_weights(false);
  }
  const std::vector<Tensor> maps = model.attention_weights();  // each (1,h,T,T)
  const std::string sentence = text.vocabulary.decode(ids);
  for (size_t block = 0; block < maps.size(); ++block) {
    for (int64_t head = 0; head < flags.heads; ++head) {
      const std::vector<real> w = select(select(maps[block], 0, 0), 0, head).to_vector();
      report.attention({.sentence = sentence,
                        .kind = "causal self",
                        .block = int(block + 1),
                        .head = int(head + 1),
                        .queries = labels,
                        .keys = labels,
                        .weights = std::vector<double>(w.begin(), w.end())});
    }
  }
  return report;
}

void save_run(const fs::path& folder, const gpt::GPT& model, const nn::Optimizer& optimizer,
              const nn::Metadata& metadata, const std::vector<std::pair<double, double>>& curve,
              const cli::RunReport* report, const cli::InterruptGuard& interrupts) {
  cli::OutputSet files(folder);
  nn::save_training_state(files.staged(kCheckpointName), model, &optimizer, metadata);
  loss_chart(curve).save(files.staged("loss.svg"));
  if (report != nullptr) report->save(files.staged("report.html"));
  interrupts.during_save();
  files.commit();
}

}  // namespace

double learning_rate(int64_t iteration, const TrainFlags& flags) {
  if (iteration < flags.warmup) {
    return flags.lr * double(iteration + 1) / double(flags.warmup + 1);
  }
  const int64_t end = flags.decay_iters > 0 ? flags.decay_iters : flags.iters;
  if (iteration >= end) return flags.min_lr;
  const double progress =
      double(iteration - flags.warmup) / double(std::max<int64_t>(1, end - flags.warmup));
  const double coefficient = 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  return flags.min_lr + coefficient * (flags.lr - flags.min_lr);
}

void declare_train_flags(cli::Parser& parser, TrainFlags& flags) {
  parser
      .flag("data", flags.data,
            "UTF-8 text to train on (default: the French side of data/eng-fra.tsv, one sentence "
            "a line)")
      .flag("out", flags.out, "folder for checkpoint.safetensors and loss.svg")
      .flag("resume", flags.resume, "checkpoint of an earlier run to continue (to --iters)")
      .flag("iters", flags.iters, "training iterations", cli::size_at_most(10'000'000))
      .flag("batch", flags.batch, "windows per iteration", cli::size_at_most(4096))
      .flag("block", flags.block, "characters of context", cli::size_at_most(4096))
      .flag("layers", flags.layers, "transformer blocks", cli::size_at_most(64))
      .flag("heads", flags.heads, "attention heads (divide --embd)", cli::size_at_most(64))
      .flag("embd", flags.embd, "channels per position", cli::size_at_most(8192))
      .flag("lr", flags.lr, "peak learning rate", cli::in_range(1e-9, 10))
      .flag("min-lr", flags.min_lr, "learning rate at the last iteration", cli::in_range(0, 10))
      .flag("warmup", flags.warmup, "warm-up iterations", cli::count_at_most(10'000'000))
      .flag("decay-iters", flags.decay_iters,
            "the iteration where the cosine decay reaches --min-lr (0: --iters)",
            cli::count_at_most(10'000'000))
      .flag("weight-decay", flags.weight_decay, "AdamW's decay of the matrices",
            cli::in_range(0, 10))
      .flag("grad-clip", flags.grad_clip, "largest gradient norm (0: no clipping)",
            cli::in_range(0, 1e6))
      .flag("eval-every", flags.eval_every, "iterations between progress lines",
            cli::size_at_most(10'000'000))
      .flag("seed", flags.seed, "seed for the weights and the batches", cli::non_negative())
      .flag("threads", flags.threads,
            "threads for the large matrix products (results do not depend on it)",
            cli::size_at_most(256))
      .flag("json", flags.json,
            "end with one JSON line: iterations, train_loss, val_loss, tokens_per_second");
  cli::declare_inspect_flags(parser, flags.inspect);
}

void declare_sample_flags(cli::Parser& parser, SampleFlags& flags) {
  parser.flag("checkpoint", flags.checkpoint, "checkpoint written by gpt train")
      .flag("prompt", flags.prompt, "text to continue (characters of the training text)")
      .flag("tokens", flags.tokens, "characters to add", cli::size_at_most(1'000'000))
      .flag("temperature", flags.temperature, "softmax temperature", cli::in_range(1e-3, 100))
      .flag("top-k", flags.top_k, "draw from the K likeliest characters (0: all)",
            cli::count_at_most(1 << 16))
      .flag("seed", flags.seed, "seed of the draws", cli::non_negative())
      .flag("no-kv-cache", flags.no_kv_cache,
            "recompute the whole context for every character instead of caching keys and values");
}

// Before any work: no output is an input or another output (cli::PathsApart);
// `data_flag` names where the data path came from.
void check_paths_apart(const TrainFlags& flags, const std::string& data_flag,
                       const std::string& data) {
  const fs::path folder = flags.out;
  cli::PathsApart paths;
  paths.reads(data_flag, data)
      .reads("--resume", flags.resume)
      .writes_next("--out", folder / kCheckpointName, "--resume")
      .writes("--out", folder / "loss.svg")
      .writes("--out", folder / "report.html");
  cli::add_dot_outputs(paths, flags.inspect.dot);
  paths.check();
}

int run_train(const TrainFlags& given_flags) {
  TrainFlags flags = given_flags;
  const bool data_from_checkpoint = flags.data.empty() && !flags.resume.empty();
  std::string data = flags.data.empty() ? kDefaultData : flags.data;
  int column = flags.data.empty() ? kDefaultColumn : -1;
  const fs::path folder = flags.out;
  check_paths_apart(flags, "--data", data_from_checkpoint ? std::string() : data);
  int64_t start = 0;
  nn::Metadata resumed;
  if (!flags.resume.empty()) {
    resumed = nn::read_metadata(flags.resume);
    flags.block = metadata_count(resumed, "gpt.block", flags.resume);
    flags.layers = metadata_count(resumed, "gpt.layers", flags.resume);
    flags.heads = metadata_count(resumed, "gpt.heads", flags.resume);
    flags.embd = metadata_count(resumed, "gpt.embd", flags.resume);
    flags.batch = metadata_count(resumed, "gpt.batch", flags.resume);
    flags.seed = metadata_count(resumed, "gpt.seed", flags.resume);
    start = metadata_count(resumed, "gpt.iteration", flags.resume);
    if (flags.decay_iters == 0) {  // the schedule the run began with
      flags.decay_iters = metadata_count(resumed, "gpt.decay_iters", flags.resume);
    }
    if (data_from_checkpoint) {
      const auto found = resumed.find("gpt.data");
      if (found == resumed.end()) {
        throw cli::UsageError(fmt::format(
            "'{}' has no 'gpt.data': not a checkpoint of `gpt train`; give one that gpt train "
            "wrote, or --data",
            flags.resume));
      }
      data = found->second;
      column = int(metadata_count(resumed, "gpt.column", flags.resume));
      check_paths_apart(flags, "the data file of --resume's checkpoint", data);
    }
  }
  cli::prepare_output_folder("--out", folder);

  const Text text = load_text(data, column, flags.block);
  if (!resumed.empty() &&
      checkpoint_vocabulary(resumed, flags.resume).characters() != text.vocabulary.characters()) {
    throw cli::UsageError(fmt::format(
        "--resume '{}' was trained on another text (its vocabulary differs from --data '{}'); "
        "give the data it was trained on",
        flags.resume, data));
  }
  Generator generator(uint64_t(flags.seed));
  gpt::GPT model(model_options(text.vocabulary.size(), flags), generator);
  nn::AdamW adamw({{.parameters = model.decayed_parameters(), .lr = {}, .weight_decay = {}},
                   {.parameters = model.undecayed_parameters(), .lr = {}, .weight_decay = 0.0}},
                  nn::AdamOptions(flags.lr).betas(0.9, 0.99).weight_decay(flags.weight_decay));
  std::vector<std::pair<double, double>> curve;
  if (!flags.resume.empty()) {
    nn::load_training_state(flags.resume, model, &adamw);
    for (const auto& point : nlohmann::json::parse(resumed.at("gpt.losses"))) {
      curve.emplace_back(point[0].get<double>(), point[1].get<double>());
    }
  }
  std::cout << fmt::format(
      "gpt: {} characters ({} train, {} validation), vocabulary {}; {} parameters; {} "
      "iterations of {} x {}\n",
      text.split.train.size() + text.split.validation.size(), text.split.train.size(),
      text.split.validation.size(), text.vocabulary.size(), model.parameter_count(), flags.iters,
      flags.batch, flags.block);

  parallel::set_num_threads(flags.threads);
  cli::InspectSession inspect(flags.inspect);  // the graph of the first step
  cli::InterruptGuard interrupts;
  double timed_seconds = 0;
  int64_t timed_iterations = 0;
  // The training iterations' characters per second after the first 10 (0 before).
  const auto tokens_per_second = [&] {
    return timed_iterations > 0
               ? double(timed_iterations * flags.batch * flags.block) / timed_seconds
               : 0.0;
  };
  double window_loss = 0;
  int64_t window_count = 0;
  double train_loss = std::nan("");
  int64_t iteration = start;
  for (; iteration < flags.iters && !interrupts.stop_requested(); ++iteration) {
    const auto began = Clock::now();
    adamw.set_lr(learning_rate(iteration, flags));
    const gpt::Batch batch =
        gpt::random_batch(text.split.train, flags.batch, flags.block,
                          uint64_t(flags.seed) * 1'000'003u + uint64_t(iteration));
    adamw.zero_grad();
    const Tensor loss = model.loss(batch.inputs, batch.targets, flags.batch, flags.block);
    backward(loss);
    if (flags.grad_clip > 0) nn::clip_grad_norm(model.parameters(), flags.grad_clip);
    adamw.step();
    const double value = double(loss.item());
    if (!std::isfinite(value)) {
      throw Error(
          fmt::format("gpt train: the loss is {} at iteration {}; lower --lr or keep --grad-clip",
                      value, iteration));
    }
    window_loss += value;
    ++window_count;
    if (iteration - start >= kTimingWarmup) {
      timed_seconds += std::chrono::duration<double>(Clock::now() - began).count();
      ++timed_iterations;
    }
    const bool last = iteration + 1 == flags.iters;
    if ((iteration + 1) % flags.eval_every == 0 || last) {
      train_loss = window_loss / double(window_count);
      const double val =
          validation_loss(model, text.split.validation, flags.block, last ? -1 : kProgressWindows);
      curve.emplace_back(double(iteration + 1), val);
      std::cout << fmt::format("iter {:>6}: train loss {:.4f}, val loss {:.4f}{}, lr {:.2e}{}\n",
                               iteration + 1, train_loss, val, last ? "" : " (first 256 windows)",
                               learning_rate(iteration, flags),
                               timed_iterations > 0
                                   ? fmt::format(", {:.0f} tokens/s", tokens_per_second())
                                   : std::string())
                << std::flush;
      window_loss = 0;
      window_count = 0;
    }
  }
  inspect.finish(std::cout);
  const double val_loss = curve.empty() ? std::nan("") : curve.back().second;
  const nlohmann::json summary = {{"iterations", iteration},
                                  {"train_loss", train_loss},
                                  {"val_loss", val_loss},
                                  {"tokens_per_second", tokens_per_second()},
                                  {"parameters", model.parameter_count()}};
  // An interrupted run keeps its checkpoint and curve; the report is a finished run's.
  const bool finished = !interrupts.requested();
  const cli::RunReport report =
      finished ? run_report(model, flags, text, curve, summary, inspect.graph_svg())
               : cli::RunReport("gpt train");
  save_run(folder, model, adamw,
           checkpoint_metadata(flags, data, column, text.vocabulary, iteration, curve), curve,
           finished ? &report : nullptr, interrupts);
  std::cout << fmt::format("Wrote {}, loss.svg{} in {}\n", kCheckpointName,
                           finished ? " and report.html" : "", folder.string());
  if (interrupts.requested()) {
    std::cerr << fmt::format(
        "gpt train: stopped by {} after iteration {}; continue with --resume {}\n",
        interrupts.what(), iteration, (folder / kCheckpointName).string());
    return interrupts.exit_status();
  }
  if (flags.json) std::cout << summary.dump() << "\n";
  return 0;
}

int run_sample(const SampleFlags& flags) {
  const nn::Metadata metadata = nn::read_metadata(flags.checkpoint);
  const gpt::Vocabulary vocabulary = checkpoint_vocabulary(metadata, flags.checkpoint);
  TrainFlags sizes;
  sizes.block = metadata_count(metadata, "gpt.block", flags.checkpoint);
  sizes.layers = metadata_count(metadata, "gpt.layers", flags.checkpoint);
  sizes.heads = metadata_count(metadata, "gpt.heads", flags.checkpoint);
  sizes.embd = metadata_count(metadata, "gpt.embd", flags.checkpoint);
  gpt::GPT model(model_options(vocabulary.size(), sizes));
  nn::load(model, flags.checkpoint);
  if (flags.prompt.empty()) {
    throw cli::UsageError("--prompt is empty; give at least one character to continue");
  }
  std::vector<int64_t> prompt;
  try {
    prompt = vocabulary.encode(gpt::char_text(flags.prompt, "--prompt").characters);
  } catch (const Error& error) {
    throw cli::UsageError(fmt::format("--prompt: {}", error.what()));
  }
  const std::vector<int64_t> ids = gpt::sample(model, prompt,
                                               {.tokens = flags.tokens,
                                                .temperature = flags.temperature,
                                                .top_k = flags.top_k,
                                                .seed = uint64_t(flags.seed),
                                                .kv_cache = !flags.no_kv_cache});
  std::cout << flags.prompt << vocabulary.decode(ids) << "\n";
  return 0;
}

}  // namespace attograd::gpt_program
