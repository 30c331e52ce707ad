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

}  // namespace

TrainingReport train(BatchedTranslator& model, const text::BatchedData& data,
                     const BatchedTrainingOptions& options,
                     const std::function<void(const EpochReport&)>& on_epoch) {
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
  model.train();
  nn::Adam adam(model.named_parameters(), nn::AdamOptions(options.lr()));
  nn::LRScheduler scheduler(adam, options.lr_schedule());
  const std::vector<Tensor> parameters = model.parameters();
  nn::DataParallel replicas(model, make_copies(model, options.replicas(), options.seed()));
  text::BatchIterator batches(data.source, data.target, options.batch_size(), options.seed());
  TrainingReport report;
  report.replicas = options.replicas();
  using Clock = std::chrono::steady_clock;
  for (int64_t epoch = 1; epoch <= options.epochs(); ++epoch) {
    const Clock::time_point start = Clock::now();
    double loss_sum = 0;
    int64_t tokens = 0;
    EpochReport epoch_report;
    batches.start_epoch();
    while (const std::optional<text::TranslationBatch> batch = batches.next()) {
      adam.zero_grad();
      const double total = replicated_loss(replicas, *batch);
      nn::clip_grad_norm(parameters, options.clip_norm(), /*error_if_nonfinite=*/true);
      adam.step();
      const int64_t batch_tokens = std::accumulate(batch->target.valid_lengths.begin(),
                                                   batch->target.valid_lengths.end(), int64_t{0});
      if (tokens == 0 && batch_tokens > 0) {
        epoch_report.first_batch_loss = total / static_cast<double>(batch_tokens);
      }
      loss_sum += total;
      tokens += batch_tokens;
    }
    epoch_report.epoch = epoch;
    epoch_report.loss = tokens > 0 ? loss_sum / static_cast<double>(tokens) : 0;
    epoch_report.tokens = tokens;
    epoch_report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    report.epochs.push_back(epoch_report);
    report.final_loss = epoch_report.loss;
    report.tokens += tokens;
    report.seconds += epoch_report.seconds;
    epoch_report.lr = adam.lr();
    scheduler.step();
    if (on_epoch) on_epoch(epoch_report);
  }
  return report;
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
