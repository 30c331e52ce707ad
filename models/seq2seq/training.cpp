// models/seq2seq/training.cpp — the training loop and the checkpoints.
#include "models/seq2seq/training.hpp"

#include <chrono>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "autograd/engine.hpp"
#include "nn/checkpoint.hpp"
#include "tensor/error.hpp"

namespace attograd::seq2seq {

namespace {

// SplitMix64's finaliser: a well-mixed 64-bit value from any input, so that
// neighbouring iterations get unrelated generator seeds.
uint64_t mix(uint64_t value) {
  value += 0x9e3779b97f4a7c15ULL;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
  return value ^ (value >> 31);
}

uint64_t iteration_seed(uint64_t seed, int64_t iteration) {
  return mix(mix(seed) ^ static_cast<uint64_t>(iteration));
}

void check_options(const TrainingOptions& options) {
  check(options.iterations() >= 0, "Trainer: iterations {} must be >= 0", options.iterations());
  check(options.learning_rate() > 0, "Trainer: learning rate {} must be positive",
        options.learning_rate());
  check(options.teacher_forcing() >= 0 && options.teacher_forcing() <= 1,
        "Trainer: teacher forcing probability {} must be in [0, 1]", options.teacher_forcing());
  check(options.print_every() > 0 && options.plot_every() > 0,
        "Trainer: print_every ({}) and plot_every ({}) must be positive", options.print_every(),
        options.plot_every());
}

}  // namespace

Trainer::Trainer(Seq2Seq& model, std::vector<EncodedPair> pairs, const TrainingOptions& options)
    : model_(model), pairs_(std::move(pairs)), options_(options) {
  check_options(options);
  check(!pairs_.empty(), "Trainer: no training pairs; load a corpus with at least one pair");
  model_.set_sparse_embeddings(options.sparse_embeddings());
  // The tutorial keeps one SGD for the encoder and one for the decoder, with
  // the same rate; one SGD over both is the same update.
  optimizer_ =
      std::make_unique<nn::SGD>(model_.named_parameters(), nn::SGDOptions(options.learning_rate()));
}

double Trainer::train_iteration(int64_t iteration) {
  Generator random(iteration_seed(options_.seed(), iteration));
  const EncodedPair& pair = pairs_[random.below(pairs_.size())];
  const bool teacher_forcing = random.uniform() < options_.teacher_forcing();
  model_.decoder->dropout_generator().seed(random.next_u64());

  optimizer_->zero_grad();
  const PairLoss loss = model_.pair_loss(pair.source, pair.target, teacher_forcing);
  backward(loss.total);
  optimizer_->step();
  return static_cast<double>(loss.total.item()) / static_cast<double>(loss.target_length);
}

bool Trainer::run(const Hooks& hooks) {
  using Clock = std::chrono::steady_clock;
  model_.train();
  const int64_t total = options_.iterations();
  const int64_t print_every = options_.print_every();
  Clock::time_point interval_start = Clock::now();
  int64_t interval_first =
      progress_.iteration;  // iterations done when this session's interval began

  auto report = [&](int64_t length) {
    const double seconds = std::chrono::duration<double>(Clock::now() - interval_start).count();
    const auto timed = static_cast<double>(progress_.iteration - interval_first);
    IntervalReport interval;
    interval.iteration = progress_.iteration;
    interval.iterations = total;
    interval.interval_length = length;
    interval.average_loss = progress_.print_loss_total / static_cast<double>(length);
    interval.iterations_per_second = seconds > 0 ? timed / seconds : 0;
    interval.seconds_left =
        interval.iterations_per_second > 0
            ? static_cast<double>(total - progress_.iteration) / interval.iterations_per_second
            : 0;
    if (hooks.report) hooks.report(interval);
    interval_start = Clock::now();
    interval_first = progress_.iteration;
  };

  while (progress_.iteration < total) {
    if (hooks.stop_requested && hooks.stop_requested()) return false;
    const int64_t iteration = progress_.iteration + 1;
    const Clock::time_point start = Clock::now();
    const double loss = train_iteration(iteration);
    progress_.train_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    progress_.iteration = iteration;
    if (progress_.first_loss == 0) progress_.first_loss = loss;
    progress_.print_loss_total += loss;
    progress_.plot_loss_total += loss;
    if (iteration % options_.plot_every() == 0) {
      progress_.plot_losses.push_back(progress_.plot_loss_total /
                                      static_cast<double>(options_.plot_every()));
      progress_.plot_loss_total = 0;
    }
    if (iteration % print_every == 0) {
      report(print_every);
      progress_.interval_losses.push_back(progress_.print_loss_total /
                                          static_cast<double>(print_every));
      progress_.print_loss_total = 0;
    } else if (iteration == total) {
      // A last, partial interval is reported but not closed, so a run
      // resumed with more iterations continues it.
      report(iteration % print_every);
    }
    if (hooks.checkpoint && hooks.checkpoint_every > 0 && iteration % hooks.checkpoint_every == 0) {
      hooks.checkpoint();
    }
  }
  return true;
}

// ---------------------------------------------------------------- checkpoints

namespace {

constexpr const char* kFormatKey = "seq2seq.format";
constexpr const char* kFormat = "attograd-seq2seq 1";

nlohmann::json model_json(const Seq2SeqOptions& options) {
  return {{"source_vocabulary", options.source_vocabulary()},
          {"target_vocabulary", options.target_vocabulary()},
          {"hidden_size", options.hidden_size()},
          {"max_length", options.max_length()},
          {"dropout", options.dropout()},
          {"decoder", std::string(to_string(options.decoder()))}};
}

nlohmann::json data_json(const CorpusOptions& options) {
  return {{"path", options.path().string()},
          {"reverse", options.reverse()},
          {"max_length", options.max_length()},
          {"validation_fraction", options.validation_fraction()},
          {"split_seed", options.split_seed()}};
}

nlohmann::json training_json(const TrainingOptions& options) {
  return {{"iterations", options.iterations()},
          {"learning_rate", options.learning_rate()},
          {"teacher_forcing", options.teacher_forcing()},
          {"seed", options.seed()},
          {"print_every", options.print_every()},
          {"plot_every", options.plot_every()},
          {"sparse_embeddings", options.sparse_embeddings()}};
}

nlohmann::json progress_json(const TrainingProgress& progress) {
  return {{"iteration", progress.iteration},
          {"print_loss_total", progress.print_loss_total},
          {"plot_loss_total", progress.plot_loss_total},
          {"plot_losses", progress.plot_losses},
          {"interval_losses", progress.interval_losses},
          {"first_loss", progress.first_loss},
          {"train_seconds", progress.train_seconds}};
}

constexpr const char* kEdited = "the file was edited or damaged: retrain, or restore the file";

// A JSON value as a message shows it: its JSON text, cut after 60 bytes.
std::string shown(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 60) + "…";
  return text;
}

// One JSON-object entry of a checkpoint's metadata ("seq2seq.model"), read a
// field at a time, each checked for type, sign, range and integrality: a
// refusal names the file, the field ("seq2seq.model.hidden_size"), the value
// and the remedy, on one line.
class MetadataEntry {
 public:
  MetadataEntry(const std::filesystem::path& path, const nn::Metadata& metadata, std::string key)
      : path_(path.string()), key_(std::move(key)) {
    const auto found = metadata.find(key_);
    check(found != metadata.end(),
          "{}: the checkpoint has no '{}' entry; was it written by `translate train`?", path_,
          key_);
    object_ = nlohmann::json::parse(found->second, nullptr, false);
    check(!object_.is_discarded() && object_.is_object(),
          "{}: the checkpoint's '{}' entry is not a JSON object; {}", path_, key_, kEdited);
  }

  // An integer in [low, high] (JSON 8.5 or "8" is refused, not rounded or parsed).
  int64_t integer(const char* field, int64_t low, int64_t high) const {
    const nlohmann::json& value = at(field);
    // nlohmann reads every integer >= 0 as unsigned, and one past int64 only so.
    const bool in_range =
        value.is_number_integer() &&
        (value.is_number_unsigned()
             ? value.get<uint64_t>() <= static_cast<uint64_t>(high) && low <= value.get<int64_t>()
             : low <= value.get<int64_t>() && value.get<int64_t>() <= high);
    if (!in_range) {
      refuse(field, value,
             high == std::numeric_limits<int64_t>::max()
                 ? fmt::format("not an integer >= {}", low)
                 : fmt::format("not an integer in [{}, {}]", low, high));
    }
    return value.get<int64_t>();
  }
  // A seed: any integer in [0, 2^64 − 1].
  uint64_t seed(const char* field) const {
    const nlohmann::json& value = at(field);
    const bool seed =
        value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0);
    if (!seed) refuse(field, value, "not a non-negative integer (a seed)");
    return value.get<uint64_t>();
  }
  // A number in [low, high], or [low, high) when `high_open`.
  double number(const char* field, double low, double high, bool high_open = false) const {
    const nlohmann::json& value = at(field);
    if (!value.is_number()) refuse(field, value, "not a number");
    const double number = value.get<double>();
    if (!(low <= number && (high_open ? number < high : number <= high))) {
      refuse(field, value, fmt::format("outside [{}, {}{}", low, high, high_open ? ")" : "]"));
    }
    return number;
  }
  // A finite number > 0.
  double positive(const char* field) const {
    const nlohmann::json& value = at(field);
    if (!value.is_number() || !(value.get<double>() > 0)) {
      refuse(field, value, "not a positive number");
    }
    return value.get<double>();
  }
  std::vector<double> numbers(const char* field) const {
    const nlohmann::json& value = at(field);
    if (!value.is_array()) refuse(field, value, "not a list of numbers");
    std::vector<double> numbers;
    numbers.reserve(value.size());
    for (const nlohmann::json& item : value) {
      if (!item.is_number()) refuse(field, value, "not a list of numbers");
      numbers.push_back(item.get<double>());
    }
    return numbers;
  }
  bool boolean(const char* field) const {
    const nlohmann::json& value = at(field);
    if (!value.is_boolean()) refuse(field, value, "not true or false");
    return value.get<bool>();
  }
  std::string text(const char* field) const {
    const nlohmann::json& value = at(field);
    if (!value.is_string() || value.get_ref<const std::string&>().empty()) {
      refuse(field, value, "not a non-empty string");
    }
    return value.get<std::string>();
  }
  bool has(const char* field) const { return object_.contains(field); }

 private:
  const nlohmann::json& at(const char* field) const {
    const auto found = object_.find(field);
    check(found != object_.end(), "{}: the checkpoint's '{}' entry has no '{}'; {}", path_, key_,
          field, kEdited);
    return *found;
  }
  [[noreturn]] void refuse(const char* field, const nlohmann::json& value,
                           const std::string& what) const {
    fail("{}: the checkpoint's {}.{} is {}, {}; {}", path_, key_, field, shown(value), what,
         kEdited);
  }

  std::string path_;
  std::string key_;
  nlohmann::json object_;
};

const std::string& text_entry(const std::filesystem::path& path, const nn::Metadata& metadata,
                              const std::string& key) {
  const auto found = metadata.find(key);
  check(found != metadata.end(),
        "{}: the checkpoint has no '{}' entry; was it written by "
        "`translate train`?",
        path.string(), key);
  return found->second;
}

// A vocabulary entry, parsed and checked to hold the tutorial's special
// tokens (SOS, EOS, <unk> at ids 0, 1, 2): the model takes their ids from the
// layout, not from the file.
text::Vocabulary vocabulary_entry(const std::filesystem::path& path, const nn::Metadata& metadata,
                                  const std::string& key) {
  text::Vocabulary vocabulary = text::make_tutorial_vocabulary();
  try {
    vocabulary = text::Vocabulary::deserialize(text_entry(path, metadata, key));
  } catch (const Error& error) {
    fail("{}: the checkpoint's '{}' entry is damaged ({}); {}", path.string(), key, error.what(),
         kEdited);
  }
  if (const std::optional<std::string> difference =
          text::layout_difference(vocabulary, text::kTutorialLayout)) {
    fail("{}: the checkpoint's '{}' does not hold the tutorial recipe's special tokens: {}; {}",
         path.string(), key, *difference, kEdited);
  }
  return vocabulary;
}

}  // namespace

void save_checkpoint(const std::filesystem::path& path, const Seq2Seq& model,
                     const nn::Optimizer* optimizer, const CheckpointInfo& info) {
  const nn::Metadata metadata = {{kFormatKey, kFormat},
                                 {"seq2seq.model", model_json(model.options()).dump()},
                                 {"seq2seq.source_vocabulary", info.source_vocabulary.serialize()},
                                 {"seq2seq.target_vocabulary", info.target_vocabulary.serialize()},
                                 {"seq2seq.data", data_json(info.data).dump()},
                                 {"seq2seq.training", training_json(info.training).dump()},
                                 {"seq2seq.progress", progress_json(info.progress).dump()}};
  nn::save_training_state(path, model, optimizer, metadata);
}

CheckpointInfo read_checkpoint_info(const std::filesystem::path& path) {
  const nn::Metadata metadata = nn::read_metadata(path);
  const auto format = metadata.find(kFormatKey);
  check(format != metadata.end() && format->second == kFormat,
        "{}: not a translation checkpoint (its '{}' entry is {}, expected '{}'); make one with "
        "`translate train`",
        path.string(), kFormatKey,
        format == metadata.end() ? std::string("missing") : "'" + format->second + "'", kFormat);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const double infinity = std::numeric_limits<double>::infinity();
  CheckpointInfo info;
  const MetadataEntry model(path, metadata, "seq2seq.model");
  const std::string decoder = model.text("decoder");
  check(decoder == "location" || decoder == "bahdanau",
        "{}: the checkpoint's seq2seq.model.decoder is '{}', not one of location|bahdanau; {}",
        path.string(), decoder.substr(0, 60), kEdited);
  info.model = Seq2SeqOptions(model.integer("source_vocabulary", 1, kMax),
                              model.integer("target_vocabulary", 1, kMax))
                   .hidden_size(model.integer("hidden_size", 1, kMax))
                   .max_length(model.integer("max_length", 2, kMax))
                   // its range [0, 1) is checked where the sizes are (the model refuses it too)
                   .dropout(model.number("dropout", -infinity, infinity))
                   .decoder(decoder_kind_from_string(decoder));
  info.source_vocabulary = vocabulary_entry(path, metadata, "seq2seq.source_vocabulary");
  info.target_vocabulary = vocabulary_entry(path, metadata, "seq2seq.target_vocabulary");
  const MetadataEntry data(path, metadata, "seq2seq.data");
  info.data = CorpusOptions()
                  .path(data.text("path"))
                  .reverse(data.boolean("reverse"))
                  .max_length(data.integer("max_length", 2, kMax))
                  .validation_fraction(data.number("validation_fraction", 0, 1, true))
                  .split_seed(data.seed("split_seed"));
  const MetadataEntry training(path, metadata, "seq2seq.training");
  info.training = TrainingOptions()
                      .iterations(training.integer("iterations", 0, kMax))
                      .learning_rate(training.positive("learning_rate"))
                      .teacher_forcing(training.number("teacher_forcing", 0, 1))
                      .seed(training.seed("seed"))
                      .print_every(training.integer("print_every", 1, kMax))
                      .plot_every(training.integer("plot_every", 1, kMax))
                      .sparse_embeddings(training.boolean("sparse_embeddings"));
  const MetadataEntry progress(path, metadata, "seq2seq.progress");
  // A run saves after its last iteration, so the count never passes the
  // schedule (a resumed run stores its new --iters).
  info.progress.iteration = progress.integer("iteration", 0, info.training.iterations());
  info.progress.print_loss_total = progress.number("print_loss_total", -infinity, infinity);
  info.progress.plot_loss_total = progress.number("plot_loss_total", -infinity, infinity);
  info.progress.plot_losses = progress.numbers("plot_losses");
  info.progress.interval_losses = progress.numbers("interval_losses");
  info.progress.first_loss =
      progress.has("first_loss") ? progress.number("first_loss", 0, infinity) : 0.0;
  info.progress.train_seconds = progress.number("train_seconds", 0, infinity);
  check(info.source_vocabulary.size() == info.model.source_vocabulary() &&
            info.target_vocabulary.size() == info.model.target_vocabulary(),
        "{}: the checkpoint's vocabularies ({} and {} words) do not match its model ({} and {} "
        "embeddings)",
        path.string(), info.source_vocabulary.size(), info.target_vocabulary.size(),
        info.model.source_vocabulary(), info.model.target_vocabulary());
  return info;
}

std::unique_ptr<Seq2Seq> load_model(const std::filesystem::path& path, const CheckpointInfo& info) {
  Generator unused(0);  // the values are overwritten by the file's
  auto model = std::make_unique<Seq2Seq>(info.model, unused);
  nn::load(*model, path);
  return model;
}

void load_training_state(const std::filesystem::path& path, Trainer& trainer,
                         const CheckpointInfo& info) {
  nn::load_training_state(path, trainer.model(), &trainer.optimizer());
  trainer.progress() = info.progress;
}

void check_vocabularies(const std::filesystem::path& path, const CheckpointInfo& info,
                        const text::Vocabulary& source_vocabulary,
                        const text::Vocabulary& target_vocabulary) {
  text::check_same_vocabulary(
      info.source_vocabulary, source_vocabulary,
      fmt::format("{}: the checkpoint's source vocabulary (vs. the data)", path.string()));
  text::check_same_vocabulary(
      info.target_vocabulary, target_vocabulary,
      fmt::format("{}: the checkpoint's target vocabulary (vs. the data)", path.string()));
}

}  // namespace attograd::seq2seq
