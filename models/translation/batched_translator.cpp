// models/translation/batched_translator.cpp — the loss, training loop,
// translation and evaluation every BatchedTranslator shares (the maths is in
// the header).
#include "models/translation/batched_translator.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <optional>

#include "autograd/ops.hpp"
#include "models/text/normalize.hpp"
#include "nn/data_parallel.hpp"
#include "nn/dropout.hpp"
#include "nn/gru.hpp"
#include "nn/init.hpp"
#include "nn/linear.hpp"
#include "nn/loss.hpp"
#include "nn/optim.hpp"
#include "tensor/error.hpp"

namespace attograd::translation {

// source, target: (B,T) -> (B)
Tensor BatchedTranslator::loss(const text::PaddedArray& source, const text::PaddedArray& target) {
  const int64_t B = target.rows, T = target.num_steps;
  check(source.rows == B, "{} loss: {} source sentences but {} targets; a batch pairs them up",
        type_name(), source.rows, B);
  // Teacher forcing: step t reads the true token t − 1, step 0 reads <bos>.
  std::vector<int64_t> inputs(static_cast<size_t>(B * T));
  for (int64_t b = 0; b < B; ++b) {
    inputs[b * T] = kBos;
    for (int64_t t = 1; t < T; ++t) inputs[b * T + t] = target.at(b, t - 1);
  }
  const Tensor logits = forward(source, inputs, {B, T});
  return nn::sequence_cross_entropy(logits, target.ids, target.valid_lengths);
}

void xavier_init_weights(nn::Module& module, Generator& generator) {
  if (auto* linear = dynamic_cast<nn::Linear*>(&module)) {
    nn::xavier_uniform_(linear->weight, 1.0, generator);
  } else if (auto* gru = dynamic_cast<nn::GRU*>(&module)) {
    for (const nn::GRU::LayerWeights& layer : gru->layers()) {
      Tensor weight_ih = layer.weight_ih, weight_hh = layer.weight_hh;
      nn::xavier_uniform_(weight_ih, 1.0, generator);
      nn::xavier_uniform_(weight_hh, 1.0, generator);
    }
  }
  for (const auto& [name, child] : module.children()) xavier_init_weights(*child, generator);
}

// ---------------------------------------------------------------- training

namespace {

// The replicas' models beside `model` (none for one replica), their dropout
// generators seeded from the training's seed.
std::vector<std::shared_ptr<nn::Module>> make_copies(const BatchedTranslator& model,
                                                     int64_t replicas, uint64_t seed) {
  Generator generator(seed);
  std::vector<std::shared_ptr<nn::Module>> copies;
  for (int64_t r = 1; r < replicas; ++r) copies.push_back(model.replica(generator));
  return copies;
}

// Σ_b loss_b over the batch, its gradient left in the model's parameters:
// replica r takes its part of the rows (nn::DataParallel::part), sums its
// pairs' losses and runs its backward; the parts' totals are added in
// replica order.
double replicated_loss(nn::DataParallel& replicas, const text::TranslationBatch& batch) {
  const int64_t count = replicas.replicas();
  std::vector<double> totals(static_cast<size_t>(count), 0.0);
  replicas.run([&](int64_t replica, nn::Module& module) {
    auto& model = static_cast<BatchedTranslator&>(module);
    Tensor total;
    if (count == 1) {
      total = sum(model.loss(batch.source, batch.target));
    } else {
      const auto [begin, end] = nn::DataParallel::part(batch.source.rows, replica, count);
      if (begin == end) return;  // a last batch with fewer pairs than replicas
      std::vector<int64_t> rows(static_cast<size_t>(end - begin));
      std::iota(rows.begin(), rows.end(), begin);
      total = sum(
          model.loss(text::gather_rows(batch.source, rows), text::gather_rows(batch.target, rows)));
    }
    backward(total);
    totals[static_cast<size_t>(replica)] = static_cast<double>(total.item());
  });
  return std::accumulate(totals.begin(), totals.end(), 0.0);
}

// Every generator of dropout masks under `module` (nn::Dropout's, and the
// GRU's between its layers), in module order.
void collect_dropout_generators(nn::Module& module, std::vector<Generator*>& generators) {
  if (auto* dropout = dynamic_cast<nn::Dropout*>(&module))
    generators.push_back(&dropout->generator());
  if (auto* gru = dynamic_cast<nn::GRU*>(&module)) generators.push_back(&gru->dropout_generator());
  for (const auto& [name, child] : module.children())
    collect_dropout_generators(*child, generators);
}

void check_training_options(const BatchedTranslator& model, const text::BatchedData& data,
                            const BatchedTrainingOptions& options) {
  check(options.epochs() >= 0 && options.batch_size() >= 1 && options.lr() > 0 &&
            options.clip_norm() > 0,
        "translation::train: epochs ({}) must be >= 0, batch_size ({}) >= 1, and lr ({}) "
        "and clip_norm ({}) positive",
        options.epochs(), options.batch_size(), options.lr(), options.clip_norm());
  check(options.replicas() >= 1 && options.replicas() <= options.batch_size(),
        "translation::train: {} replicas for batches of {} pairs; each replica takes a part "
        "of every batch, so give between 1 and the batch size",
        options.replicas(), options.batch_size());
  check(data.source.rows >= 1, "translation::train: there are no training pairs");
  check(data.source_vocabulary.size() == model.source_vocabulary_size() &&
            data.target_vocabulary.size() == model.target_vocabulary_size(),
        "translation::train: the data's vocabularies ({} source, {} target words) do not "
        "match the model's ({} and {})",
        data.source_vocabulary.size(), data.target_vocabulary.size(),
        model.source_vocabulary_size(), model.target_vocabulary_size());
}

}  // namespace

struct BatchedTrainer::State {
  State(BatchedTranslator& model_, const text::BatchedData& data,
        const BatchedTrainingOptions& options_)
      : model(model_),
        options(options_),
        adam(model.named_parameters(), nn::AdamOptions(options.lr())),
        scheduler(adam, options.lr_schedule()),
        parameters(model.parameters()),
        copies(make_copies(model, options.replicas(), options.seed())),
        replicas(model, copies),
        batches(data.source, data.target, options.batch_size(), options.seed()) {
    report.replicas = options.replicas();
    collect_dropout_generators(model, dropout_generators);
    for (const auto& copy : copies) collect_dropout_generators(*copy, dropout_generators);
  }

  BatchedTranslator& model;
  BatchedTrainingOptions options;
  nn::Adam adam;
  nn::LRScheduler scheduler;
  std::vector<Tensor> parameters;
  std::vector<std::shared_ptr<nn::Module>> copies;
  nn::DataParallel replicas;
  text::BatchIterator batches;
  std::vector<Generator*> dropout_generators;
  TrainingReport report;
  // The epoch in progress: its number and how far it has got.
  int64_t epochs_done = 0;
  bool in_epoch = false;
  int64_t batches_done = 0;  // steps of the epoch in progress
  double loss_sum = 0;
  int64_t tokens = 0;
  EpochReport epoch_report;
};

BatchedTrainer::BatchedTrainer(BatchedTranslator& model, const text::BatchedData& data,
                               const BatchedTrainingOptions& options) {
  check_training_options(model, data, options);
  state_ = std::make_unique<State>(model, data, options);
}

BatchedTrainer::~BatchedTrainer() = default;

const TrainingReport& BatchedTrainer::report() const { return state_->report; }

nn::Optimizer& BatchedTrainer::optimizer() { return state_->adam; }

bool BatchedTrainer::run(const Hooks& hooks) {
  State& s = *state_;
  s.model.train();
  using Clock = std::chrono::steady_clock;
  while (s.epochs_done < s.options.epochs()) {
    if (!s.in_epoch) {
      s.batches.start_epoch();
      s.in_epoch = true;
      s.batches_done = 0;
      s.loss_sum = 0;
      s.tokens = 0;
      s.epoch_report = EpochReport();
    }
    const Clock::time_point start = Clock::now();
    while (s.batches_done < s.batches.num_batches()) {
      if (hooks.stop_requested && hooks.stop_requested()) {
        s.epoch_report.seconds += std::chrono::duration<double>(Clock::now() - start).count();
        return false;
      }
      const std::optional<text::TranslationBatch> batch = s.batches.next();
      ++s.batches_done;
      s.adam.zero_grad();
      const double total = replicated_loss(s.replicas, *batch);
      nn::clip_grad_norm(s.parameters, s.options.clip_norm(), /*error_if_nonfinite=*/true);
      s.adam.step();
      const int64_t batch_tokens = std::accumulate(batch->target.valid_lengths.begin(),
                                                   batch->target.valid_lengths.end(), int64_t{0});
      if (s.tokens == 0 && batch_tokens > 0) {
        s.epoch_report.first_batch_loss = total / static_cast<double>(batch_tokens);
      }
      s.loss_sum += total;
      s.tokens += batch_tokens;
    }
    s.in_epoch = false;
    ++s.epochs_done;
    EpochReport& epoch_report = s.epoch_report;
    epoch_report.epoch = s.epochs_done;
    epoch_report.loss = s.tokens > 0 ? s.loss_sum / static_cast<double>(s.tokens) : 0;
    epoch_report.tokens = s.tokens;
    epoch_report.seconds += std::chrono::duration<double>(Clock::now() - start).count();
    s.report.epochs.push_back(epoch_report);
    s.report.final_loss = epoch_report.loss;
    s.report.tokens += s.tokens;
    s.report.seconds += epoch_report.seconds;
    epoch_report.lr = s.adam.lr();
    s.scheduler.step();
    if (hooks.on_epoch) hooks.on_epoch(epoch_report);
  }
  return true;
}

TrainingPosition BatchedTrainer::position() const {
  const State& s = *state_;
  TrainingPosition position;
  position.epochs_done = s.epochs_done;
  const text::BatchIterator::Position batches = s.batches.position();
  position.batches_done = batches.batches_taken;
  position.batch_order = batches.generator;
  for (const Generator* generator : s.dropout_generators) {
    position.dropout_generators.push_back(generator->state());
  }
  if (position.batches_done > 0) {
    position.loss_sum = s.loss_sum;
    position.tokens = s.tokens;
    position.first_batch_loss = s.epoch_report.first_batch_loss;
    position.seconds = s.epoch_report.seconds;
  }
  position.report = s.report;
  return position;
}

void BatchedTrainer::restore(const TrainingPosition& position) {
  State& s = *state_;
  check(position.epochs_done >= 0 && position.epochs_done <= s.options.epochs(),
        "BatchedTrainer::restore: the run is at epoch {}, beyond the {} epochs asked for; ask "
        "for more epochs to continue it",
        position.epochs_done, s.options.epochs());
  check(position.dropout_generators.size() == s.dropout_generators.size(),
        "BatchedTrainer::restore: {} dropout generators were saved, but the model and its "
        "replicas have {}",
        position.dropout_generators.size(), s.dropout_generators.size());
  check(std::ssize(position.report.epochs) == position.epochs_done,
        "BatchedTrainer::restore: {} epoch reports for {} epochs done",
        position.report.epochs.size(), position.epochs_done);
  // Everything is checked on copies first, so a bad position changes nothing.
  std::vector<Generator> generators(s.dropout_generators.size());
  for (size_t i = 0; i < generators.size(); ++i) {
    generators[i].set_state(position.dropout_generators[i]);
  }
  text::BatchIterator batches = s.batches;
  batches.resume({position.batch_order, position.batches_done});

  s.batches = std::move(batches);
  for (size_t i = 0; i < generators.size(); ++i) *s.dropout_generators[i] = generators[i];
  s.epochs_done = position.epochs_done;
  s.report = position.report;
  s.report.replicas = s.options.replicas();
  s.in_epoch = position.batches_done > 0;
  s.batches_done = position.batches_done;
  s.loss_sum = s.in_epoch ? position.loss_sum : 0;
  s.tokens = s.in_epoch ? position.tokens : 0;
  s.epoch_report = EpochReport();
  s.epoch_report.first_batch_loss = s.in_epoch ? position.first_batch_loss : 0;
  s.epoch_report.seconds = s.in_epoch ? position.seconds : 0;
  // The schedule's epoch, and the rate it implies for the epoch to come.
  while (s.scheduler.last_epoch() < s.epochs_done) s.scheduler.step();
}

TrainingReport train(BatchedTranslator& model, const text::BatchedData& data,
                     const BatchedTrainingOptions& options,
                     const std::function<void(const EpochReport&)>& on_epoch) {
  BatchedTrainer trainer(model, data, options);
  trainer.run({.on_epoch = on_epoch, .stop_requested = {}});
  return trainer.report();
}

// ---------------------------------------------------------------- translating

SentenceTranslation translate_sentence(BatchedTranslator& model,
                                       const text::Vocabulary& source_vocabulary,
                                       const text::Vocabulary& target_vocabulary,
                                       std::string_view sentence, int64_t num_steps,
                                       const decoding::BeamSearchOptions& beam) {
  check(num_steps >= 2,
        "translate_sentence: num_steps is {}; it must be at least 2 (a word and <eos>)", num_steps);
  const std::optional<std::string> normalized = text::preprocess_d2l(sentence);
  check(normalized.has_value(), "translate_sentence: the sentence is not valid UTF-8 (byte {})",
        text::first_invalid_utf8(sentence).value_or(0));
  std::vector<std::string> words = text::split_words(*normalized);
  check(!words.empty(), "translate_sentence: the sentence '{}' has no words", sentence);
  SentenceTranslation translation;
  const auto readable = static_cast<size_t>(num_steps - 1);
  if (words.size() > readable) {
    translation.dropped_words = static_cast<int64_t>(words.size() - readable);
    words.resize(readable);
  }
  text::Encoded encoded = source_vocabulary.encode(words);
  encoded.ids.push_back(kEos);
  translation.source_words = std::move(words);
  for (const std::string& word : translation.source_words) {
    if (!source_vocabulary.contains(word)) translation.unknown_words.push_back(word);
  }
  std::vector<decoding::Hypothesis> hypotheses;
  if (beam.beam_size() == 1) {
    decoding::check_options(beam);
    hypotheses.push_back(
        to_hypothesis(model.predict(encoded.ids, num_steps), beam.length_penalty()));
  } else {
    hypotheses = model.beam_predict(encoded.ids, num_steps, beam);
  }
  translation.best = hypotheses.front();
  translation.output_words = target_vocabulary.decode(translation.best.tokens);
  translation.nbest = decoding::in_words(hypotheses, target_vocabulary);
  return translation;
}

const std::vector<ReferencePair>& textbook_test_pairs() {
  static const std::vector<ReferencePair> pairs = {{"go .", "va !"},
                                                   {"i lost .", "j'ai perdu ."},
                                                   {"he's calm .", "il est calme ."},
                                                   {"i'm home .", "je suis chez moi ."}};
  return pairs;
}

Evaluation evaluate(BatchedTranslator& model, const text::Vocabulary& source_vocabulary,
                    const text::Vocabulary& target_vocabulary,
                    const std::vector<text::SentencePair>& pairs, int64_t num_steps,
                    const decoding::BeamSearchOptions& beam) {
  return evaluate_translations(pairs, [&](const std::string& source) {
    return translate_sentence(model, source_vocabulary, target_vocabulary, source, num_steps, beam);
  });
}

decoding::Hypothesis to_hypothesis(const Prediction& prediction, double alpha) {
  decoding::Hypothesis hypothesis;
  hypothesis.tokens = prediction.ids;
  hypothesis.reached_end = prediction.reached_eos;
  hypothesis.log_probability = prediction.log_probability;
  hypothesis.length = prediction.steps;
  hypothesis.score =
      decoding::length_penalized_score(prediction.log_probability, prediction.steps, alpha);
  hypothesis.attention = prediction.attention;
  hypothesis.attention_width = prediction.source_positions;
  return hypothesis;
}

}  // namespace attograd::translation
