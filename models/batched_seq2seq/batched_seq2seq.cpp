// models/batched_seq2seq.cpp — the batched Bahdanau encoder–decoder, its
// training loop and translation (the maths is in the header; beam search
// is in batched_beam_decoder.cpp).
#include "models/batched_seq2seq.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>
#include <optional>

#include "autograd/ops.hpp"
#include "models/batched_beam_decoder.hpp"
#include "models/text/normalize.hpp"
#include "nn/data_parallel.hpp"
#include "nn/init.hpp"
#include "nn/loss.hpp"
#include "nn/optim.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"

namespace attograd::batched_seq2seq {

namespace {

void check_options(const BatchedSeq2SeqOptions& options) {
  check(options.source_vocabulary() > 0 && options.target_vocabulary() > 0,
        "BatchedSeq2Seq: vocabulary sizes {} (source) and {} (target) must be positive",
        options.source_vocabulary(), options.target_vocabulary());
  check(options.embed_size() > 0 && options.hidden_size() > 0 && options.num_layers() > 0,
        "BatchedSeq2Seq: embed_size ({}), hidden_size ({}) and num_layers ({}) must be positive",
        options.embed_size(), options.hidden_size(), options.num_layers());
}

// Checks a (B,T) id array and returns (B, T).
std::pair<int64_t, int64_t> check_ids(const char* who, const std::vector<int64_t>& ids,
                                      const Shape& shape) {
  check(shape.ndim() == 2 && shape[0] >= 1 && shape[1] >= 1,
        "{}: the ids must have a shape (B,T) with B, T >= 1; got {}", who, shape);
  check(static_cast<int64_t>(ids.size()) == shape.numel(),
        "{}: {} ids for a shape {}; expected B·T = {} (row-major)", who, ids.size(), shape,
        shape.numel());
  return {shape[0], shape[1]};
}

// Column t of a (B,T) id array: the B ids every sentence has at step t.
std::vector<int64_t> ids_at_step(const std::vector<int64_t>& ids, int64_t B, int64_t T, int64_t t) {
  std::vector<int64_t> column(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) column[b] = ids[b * T + t];
  return column;
}

// keep[b] = 1 while row b's sentence lasts (t < valid_lens[b]), else 0, as a
// tensor of `shape` holding the B values.
Tensor still_running(const std::vector<int64_t>& valid_lens, int64_t t, const Shape& shape) {
  Tensor keep = Tensor::empty(shape);
  for (size_t b = 0; b < valid_lens.size(); ++b) keep.data()[b] = t < valid_lens[b] ? 1 : 0;
  return keep;
}

}  // namespace

// ---------------------------------------------------------------- encoder

Seq2SeqEncoder::Seq2SeqEncoder(const BatchedSeq2SeqOptions& options, Generator& generator)
    : nn::Module("Seq2SeqEncoder") {
  check_options(options);
  embedding = register_module(
      "embedding",
      std::make_shared<nn::Embedding>(
          nn::EmbeddingOptions(options.source_vocabulary(), options.embed_size()), generator));
  rnn = register_module(
      "rnn", std::make_shared<nn::GRU>(nn::GRUOptions(options.embed_size(), options.hidden_size())
                                           .num_layers(options.num_layers())
                                           .dropout(options.dropout()),
                                       generator));
}

// ids: (B,T), valid_lens: (B) -> outputs (B,T,H), hidden (L,B,H), valid_lens
//
// One GRU step per time step through all layers. Once row b's sentence has
// ended, its state is carried unchanged,
//   state = keep ⊙ step(x_t, state) + (1 − keep) ⊙ state,   keep_b = [t < n_b],
// and its output is 0; steps after the longest sentence are not run at all.
EncoderOutput Seq2SeqEncoder::forward(const std::vector<int64_t>& ids, const Shape& shape,
                                      const std::vector<int64_t>& valid_lens) {
  const auto [B, T] = check_ids("Seq2SeqEncoder", ids, shape);
  check(static_cast<int64_t>(valid_lens.size()) == B,
        "Seq2SeqEncoder: {} valid lengths for a batch of B = {} source sentences",
        valid_lens.size(), B);
  for (int64_t b = 0; b < B; ++b) {
    check(1 <= valid_lens[b] && valid_lens[b] <= T,
          "Seq2SeqEncoder: valid length {} of sentence {} is outside [1, T = {}] for source ids "
          "of shape {}",
          valid_lens[b], b, T, shape);
  }
  const int64_t H = rnn->options().hidden_size();
  const int64_t longest = *std::max_element(valid_lens.begin(), valid_lens.end());
  Tensor state;  // (L,B,H); undefined means zeros, and step 0 always runs for every row
  std::vector<Tensor> outputs;
  outputs.reserve(T);
  for (int64_t t = 0; t < T; ++t) {
    if (t >= longest) {
      outputs.push_back(zeros({B, H}));
      continue;
    }
    // Embedding one step at a time gives the cell a contiguous (B,E) input,
    // and the backward a (V,E) gradient per step instead of a (B,T,E) one.
    const Tensor x = embedding->forward(ids_at_step(ids, B, T, t), {B});  // (B,E)
    const nn::GRUOutput step = rnn->step(x, state);
    const bool all_running =
        std::all_of(valid_lens.begin(), valid_lens.end(), [t](int64_t n) { return t < n; });
    if (all_running) {
      state = step.h_n;
      outputs.push_back(step.output);
    } else {
      const Tensor keep = still_running(valid_lens, t, {1, B, 1});
      state = step.h_n * keep + state * (real(1) - keep);
      outputs.push_back(step.output * reshape(keep, {B, 1}));
    }
  }
  return {stack(outputs, 1), state, valid_lens};
}

// ---------------------------------------------------------------- decoder

Seq2SeqAttentionDecoder::Seq2SeqAttentionDecoder(const BatchedSeq2SeqOptions& options,
                                                 Generator& generator)
    : nn::Module("Seq2SeqAttentionDecoder") {
  check_options(options);
  const int64_t E = options.embed_size(), H = options.hidden_size();
  attention = register_module(
      "attention",
      std::make_shared<nn::AdditiveAttention>(
          nn::AdditiveAttentionOptions(H, H, H).dropout(options.dropout()), generator));
  embedding = register_module("embedding",
                              std::make_shared<nn::Embedding>(
                                  nn::EmbeddingOptions(options.target_vocabulary(), E), generator));
  rnn = register_module(
      "rnn",
      std::make_shared<nn::GRU>(
          nn::GRUOptions(E + H, H).num_layers(options.num_layers()).dropout(options.dropout()),
          generator));
  dense = register_module(
      "dense",
      std::make_shared<nn::Linear>(nn::LinearOptions(H, options.target_vocabulary()), generator));
}

DecoderState Seq2SeqAttentionDecoder::init_state(const EncoderOutput& encoded) {
  return {{encoded.outputs, attention->project_keys(encoded.outputs), encoded.valid_lens},
          encoded.hidden};
}

// ids: (B,T), state.hidden: (L,B,H) -> logits (B,T,V_tgt)
Tensor Seq2SeqAttentionDecoder::forward(const std::vector<int64_t>& ids, const Shape& shape,
                                        DecoderState& state) {
  const auto [B, T] = check_ids("Seq2SeqAttentionDecoder", ids, shape);
  const int64_t L = rnn->options().num_layers(), H = rnn->options().hidden_size();
  check(state.hidden.defined() && state.hidden.shape() == Shape{L, B, H},
        "Seq2SeqAttentionDecoder: the state must be (L,B,H) = {} for {} input rows; got {} (make "
        "it with init_state from the encoder's output of the same batch)",
        Shape{L, B, H}, B, state.hidden.defined() ? state.hidden.shape() : Shape{});
  std::vector<Tensor> outputs, weights;
  outputs.reserve(T);
  weights.reserve(T);
  // The query is the top layer's state: state.hidden[L−1] at first, then the
  // output of each step (GRU::step returns the top layer's new state).
  Tensor top = select(state.hidden, 0, L - 1);  // (B,H)
  for (int64_t t = 0; t < T; ++t) {
    const Tensor context =
        attention->forward_projected(reshape(top, {B, 1, H}), state.memory.projected_keys,
                                     state.memory.values, state.memory.valid_lens);  // (B,1,H)
    const Tensor embedded = embedding->forward(ids_at_step(ids, B, T, t), {B});      // (B,E)
    const Tensor x = cat({reshape(context, {B, H}), embedded}, 1);                   // (B,H+E)
    const nn::GRUOutput step = rnn->step(x, state.hidden);
    state.hidden = step.h_n;
    top = step.output;
    outputs.push_back(step.output);
    weights.push_back(attention->attention_weights());  // (B,1,S)
  }
  attention_weights_ = cat(weights, 1);      // (B,T,S), no history
  return dense->forward(stack(outputs, 1));  // (B,T,H) -> (B,T,V_tgt)
}

// ---------------------------------------------------------------- the model

BatchedSeq2Seq::BatchedSeq2Seq(const BatchedSeq2SeqOptions& options, Generator& generator)
    : BatchedTranslator("EncoderDecoder"), options_(options) {
  check_options(options);
  encoder = register_module("encoder", std::make_shared<Seq2SeqEncoder>(options, generator));
  decoder =
      register_module("decoder", std::make_shared<Seq2SeqAttentionDecoder>(options, generator));
  xavier_init_weights(*this, generator);
}

Tensor BatchedSeq2Seq::forward(const text::PaddedArray& source,
                               const std::vector<int64_t>& decoder_inputs,
                               const Shape& decoder_shape) {
  check(decoder_shape.ndim() == 2 && decoder_shape[0] == source.rows,
        "BatchedSeq2Seq: decoder inputs of shape {} for {} source sentences; the batch sizes "
        "must match",
        decoder_shape, source.rows);
  const EncoderOutput encoded =
      encoder->forward(source.ids, {source.rows, source.num_steps}, source.valid_lengths);
  DecoderState state = decoder->init_state(encoded);
  return decoder->forward(decoder_inputs, decoder_shape, state);
}

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

EncoderOutput BatchedSeq2Seq::encode_sentence(const std::vector<int64_t>& source_ids,
                                              int64_t num_steps) {
  check(num_steps >= 1, "BatchedSeq2Seq: num_steps is {}; it must be at least 1", num_steps);
  check(!source_ids.empty(), "BatchedSeq2Seq: the source is empty; give at least its <eos> id");
  const int64_t length = std::min<int64_t>(static_cast<int64_t>(source_ids.size()), num_steps);
  return encoder->forward(text::truncate_pad(source_ids, num_steps, kPad), {1, num_steps},
                          {length});
}

std::shared_ptr<BatchedTranslator> BatchedSeq2Seq::replica(Generator& generator) const {
  return std::make_shared<BatchedSeq2Seq>(options_, generator);
}

Prediction BatchedSeq2Seq::predict(const std::vector<int64_t>& source_ids, int64_t num_steps) {
  const nn::EvalModeGuard eval_mode(*this);
  const NoGradGuard no_grad;
  DecoderState state = decoder->init_state(encode_sentence(source_ids, num_steps));
  Prediction prediction;
  prediction.source_positions = num_steps;
  int64_t input = kBos;
  for (int64_t step = 0; step < num_steps; ++step) {
    const Tensor logits = decoder->forward({input}, {1, 1}, state);  // (1,1,V)
    const int64_t chosen = argmax(logits, 2).front();
    prediction.log_probability +=
        static_cast<double>(log_softmax(reshape(logits, {1, -1}), 1).at({0, chosen}));
    for (real weight : decoder->attention_weights().to_vector()) {
      prediction.attention.push_back(weight);
    }
    ++prediction.steps;
    if (chosen == kEos) {
      prediction.reached_eos = true;
      break;
    }
    prediction.ids.push_back(chosen);
    input = chosen;
  }
  return prediction;
}

std::string BatchedSeq2Seq::extra_repr() const {
  return fmt::format("embed_size={}, hidden_size={}, num_layers={}, dropout={}",
                     options_.embed_size(), options_.hidden_size(), options_.num_layers(),
                     options_.dropout());
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
        "batched_seq2seq::train: epochs ({}) must be >= 0, batch_size ({}) >= 1, and lr ({}) "
        "and clip_norm ({}) positive",
        options.epochs(), options.batch_size(), options.lr(), options.clip_norm());
  check(options.replicas() >= 1 && options.replicas() <= options.batch_size(),
        "batched_seq2seq::train: {} replicas for batches of {} pairs; each replica takes a part "
        "of every batch, so give between 1 and the batch size",
        options.replicas(), options.batch_size());
  check(data.source.rows >= 1, "batched_seq2seq::train: there are no training pairs");
  check(data.source_vocabulary.size() == model.source_vocabulary_size() &&
            data.target_vocabulary.size() == model.target_vocabulary_size(),
        "batched_seq2seq::train: the data's vocabularies ({} source, {} target words) do not "
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
  translation.unknown_words = encoded.unknown_count;
  std::vector<decoding::Hypothesis> hypotheses;
  if (beam.beam_size() == 1) {
    decoding::check_options(beam);
    translation.prediction = model.predict(encoded.ids, num_steps);
    hypotheses.push_back(to_hypothesis(translation.prediction, beam.length_penalty()));
  } else {
    hypotheses = model.beam_predict(encoded.ids, num_steps, beam);
    translation.prediction = to_prediction(hypotheses.front());
  }
  translation.output_words = target_vocabulary.decode(translation.prediction.ids);
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
  Evaluation evaluation;
  std::map<std::string, size_t> index_of;  // source sentence -> its entry in evaluation.pairs
  for (const text::SentencePair& pair : pairs) {
    const auto [position, inserted] = index_of.emplace(pair.source, evaluation.pairs.size());
    if (inserted) evaluation.pairs.push_back({pair.source, {}, "", 0, {}});
    evaluation.pairs[position->second].references.push_back(pair.target);
  }
  std::vector<std::vector<text::Words>> references;
  std::vector<text::Words> hypotheses;
  double bleu_sum = 0;
  for (EvaluatedPair& pair : evaluation.pairs) {
    const SentenceTranslation translation = translate_sentence(
        model, source_vocabulary, target_vocabulary, pair.source, num_steps, beam);
    pair.output = text::join_words(translation.output_words);
    pair.nbest = translation.nbest;
    for (const std::string& reference : pair.references) {
      pair.sentence_bleu =
          std::max(pair.sentence_bleu, text::d2l_sentence_bleu(pair.output, reference, 2));
    }
    bleu_sum += pair.sentence_bleu;
    evaluation.unknown_words += translation.unknown_words;
    evaluation.dropped_words += translation.dropped_words;
    std::vector<text::Words> sentence_references;
    for (const std::string& reference : pair.references) {
      sentence_references.push_back(text::split_words(reference));
    }
    references.push_back(std::move(sentence_references));
    hypotheses.push_back(translation.output_words);
  }
  evaluation.corpus = text::corpus_bleu_details(references, hypotheses);
  if (!evaluation.pairs.empty()) {
    evaluation.mean_sentence_bleu = bleu_sum / static_cast<double>(evaluation.pairs.size());
  }
  return evaluation;
}

}  // namespace attograd::batched_seq2seq
