// models/seq2seq/training.cpp — the training loop and the checkpoints.
#include "models/seq2seq/training.hpp"

#include <chrono>
#include <nlohmann/json.hpp>

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

// The metadata entry `key` parsed as JSON, or a message naming the file.
nlohmann::json entry(const std::filesystem::path& path, const nn::Metadata& metadata,
                     const std::string& key) {
  const auto found = metadata.find(key);
  check(found != metadata.end(),
        "{}: the checkpoint has no '{}' entry; was it written by "
        "`translate train`?",
        path.string(), key);
  const nlohmann::json parsed = nlohmann::json::parse(found->second, nullptr, false);
  check(!parsed.is_discarded() && parsed.is_object(),
        "{}: the checkpoint's '{}' entry is not a "
        "JSON object",
        path.string(), key);
  return parsed;
}

const std::string& text_entry(const std::filesystem::path& path, const nn::Metadata& metadata,
                              const std::string& key) {
  const auto found = metadata.find(key);
  check(found != metadata.end(),
        "{}: the checkpoint has no '{}' entry; was it written by "
        "`translate train`?",
        path.string(), key);
  return found->second;
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
  CheckpointInfo info;
  try {
    const nlohmann::json model = entry(path, metadata, "seq2seq.model");
    info.model = Seq2SeqOptions(model.at("source_vocabulary").get<int64_t>(),
                                model.at("target_vocabulary").get<int64_t>())
                     .hidden_size(model.at("hidden_size").get<int64_t>())
                     .max_length(model.at("max_length").get<int64_t>())
                     .dropout(model.at("dropout").get<double>())
                     .decoder(decoder_kind_from_string(model.at("decoder").get<std::string>()));
    info.source_vocabulary =
        text::Vocabulary::deserialize(text_entry(path, metadata, "seq2seq.source_vocabulary"));
    info.target_vocabulary =
        text::Vocabulary::deserialize(text_entry(path, metadata, "seq2seq.target_vocabulary"));
    const nlohmann::json data = entry(path, metadata, "seq2seq.data");
    info.data = CorpusOptions()
                    .path(data.at("path").get<std::string>())
                    .reverse(data.at("reverse").get<bool>())
                    .max_length(data.at("max_length").get<int64_t>())
                    .validation_fraction(data.at("validation_fraction").get<double>())
                    .split_seed(data.at("split_seed").get<uint64_t>());
    const nlohmann::json training = entry(path, metadata, "seq2seq.training");
    info.training = TrainingOptions()
                        .iterations(training.at("iterations").get<int64_t>())
                        .learning_rate(training.at("learning_rate").get<double>())
                        .teacher_forcing(training.at("teacher_forcing").get<double>())
                        .seed(training.at("seed").get<uint64_t>())
                        .print_every(training.at("print_every").get<int64_t>())
                        .plot_every(training.at("plot_every").get<int64_t>())
                        .sparse_embeddings(training.at("sparse_embeddings").get<bool>());
    const nlohmann::json progress = entry(path, metadata, "seq2seq.progress");
    info.progress.iteration = progress.at("iteration").get<int64_t>();
    info.progress.print_loss_total = progress.at("print_loss_total").get<double>();
    info.progress.plot_loss_total = progress.at("plot_loss_total").get<double>();
    info.progress.plot_losses = progress.at("plot_losses").get<std::vector<double>>();
    info.progress.interval_losses = progress.at("interval_losses").get<std::vector<double>>();
    info.progress.first_loss = progress.value("first_loss", 0.0);
    info.progress.train_seconds = progress.at("train_seconds").get<double>();
  } catch (const nlohmann::json::exception& error) {
    fail("{}: the checkpoint's information is damaged ({})", path.string(), error.what());
  } catch (const Error& error) {
    fail("{}: the checkpoint's information is damaged: {}", path.string(), error.what());
  }
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
