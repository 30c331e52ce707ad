// tests/models/test_batched_seq2seq.cpp — the batched Bahdanau encoder–decoder.
//
// Shapes and PyTorch's parameter names; d2l's Xavier initialisation; padding
// that changes nothing (neither the loss nor any gradient, on the source side
// or the target side); a batch of one that equals the unpadded sentence and
// the same row inside a bigger batch; every row of a padded batch against a
// scalar reference of d2l's model written out with plain loops (the
// unbatched path, independent of the batched code); a short training run that overfits 64
// pairs of the shipped data and translates them back; runs that repeat
// exactly for a fixed seed, with 1 or 2 threads; replicas that train as the
// model alone does, to rounding; a non-finite gradient norm
// that stops training before the step; and errors that name the layer, the
// shapes and the values.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/ops.hpp"
#include "models/batched_seq2seq/batched_seq2seq.hpp"
#include "models/text/batching.hpp"
#include "models/text/normalize.hpp"
#include "models/text/pairs.hpp"
#include "nn/optim.hpp"
#include "tensor/factory.hpp"
#include "tests/support/tensor_checks.hpp"
#include "tests/support/thread_settings.hpp"

namespace test_batched_seq2seq {

using namespace attograd;
using namespace attograd::batched_seq2seq;
using namespace attograd::translation;
using Catch::Matchers::Contains;
using testing::max_difference;
using testing::shipped_pairs;

namespace {

const double kClose = std::is_same_v<real, double> ? 1e-12 : 2e-5;

// Sentences (their ids, <eos> included) padded with <pad> to T ids.
text::PaddedArray padded(const std::vector<std::vector<int64_t>>& sentences, int64_t T) {
  return testing::padded(sentences, T, kPad);
}

BatchedSeq2SeqOptions small_options() {
  return BatchedSeq2SeqOptions(12, 15).embed_size(4).hidden_size(6).num_layers(2).dropout(0);
}

double max_abs(const Tensor& t) {
  double worst = 0;
  for (real v : t.to_vector()) worst = std::max(worst, std::abs(double(v)));
  return worst;
}

// The loss of one batch and every parameter's gradient.
struct LossAndGradients {
  double loss = 0;
  std::vector<Tensor> gradients;
};

LossAndGradients loss_and_gradients(BatchedSeq2Seq& model, const text::PaddedArray& source,
                                    const text::PaddedArray& target) {
  model.zero_grad();
  const Tensor total = sum(model.loss(source, target));
  backward(total);
  LossAndGradients result{static_cast<double>(total.item()), {}};
  for (const Tensor& parameter : model.parameters()) result.gradients.push_back(grad(parameter));
  return result;
}

// ---------------------------------------------------------------- a scalar reference

// A matrix parameter read out in double: rows × cols, row-major.
struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<double> values;
  double operator()(int64_t r, int64_t c) const { return values[r * cols + c]; }
};

Matrix matrix(const Tensor& t) {
  REQUIRE(t.dim() == 2);
  const std::vector<real> v = t.to_vector();
  return {t.shape()[0], t.shape()[1], std::vector<double>(v.begin(), v.end())};
}

std::vector<double> vector_of(const Tensor& t) {
  const std::vector<real> v = t.to_vector();
  return {v.begin(), v.end()};
}

// y = W x (+ b)
std::vector<double> affine(const Matrix& W, const std::vector<double>& x,
                           const std::vector<double>& b = {}) {
  REQUIRE(static_cast<int64_t>(x.size()) == W.cols);
  std::vector<double> y(static_cast<size_t>(W.rows), 0.0);
  for (int64_t r = 0; r < W.rows; ++r) {
    double total = b.empty() ? 0.0 : b[r];
    for (int64_t c = 0; c < W.cols; ++c) total += W(r, c) * x[c];
    y[r] = total;
  }
  return y;
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// PyTorch's GRU cell, gates r, z, n:
//   r = σ(W_ir x + b_ir + W_hr h + b_hr),  z = σ(W_iz x + b_iz + W_hz h + b_hz)
//   n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)),  h' = (1 − z) ⊙ n + z ⊙ h
std::vector<double> gru_cell(const nn::GRU::LayerWeights& layer, const std::vector<double>& x,
                             const std::vector<double>& h) {
  const std::vector<double> gi = affine(matrix(layer.weight_ih), x, vector_of(layer.bias_ih));
  const std::vector<double> gh = affine(matrix(layer.weight_hh), h, vector_of(layer.bias_hh));
  const size_t H = h.size();
  std::vector<double> next(H);
  for (size_t j = 0; j < H; ++j) {
    const double r = sigmoid(gi[j] + gh[j]);
    const double z = sigmoid(gi[H + j] + gh[H + j]);
    const double n = std::tanh(gi[2 * H + j] + r * gh[2 * H + j]);
    next[j] = (1 - z) * n + z * h[j];
  }
  return next;
}

std::vector<double> embedding_row(const Tensor& weight, int64_t id) {
  return vector_of(select(weight, 0, id));
}

// d2l's model on one sentence pair, written out with scalar loops from the
// textbook's description and independent of the library's batched code:
// no padding, no masks, no batch axis. Returns Σ_t −log p(target_t) with
// teacher forcing (<bos>, then the target shifted right). No dropout.
double reference_pair_loss(const BatchedSeq2Seq& model, const std::vector<int64_t>& source,
                           const std::vector<int64_t>& target) {
  const int64_t L = model.options().num_layers(), H = model.options().hidden_size();
  const auto& encoder_layers = model.encoder->rnn->layers();
  const auto& decoder_layers = model.decoder->rnn->layers();
  // Encoder: every layer's state after each real token; outputs are the top layer's.
  std::vector<std::vector<double>> state(L, std::vector<double>(H, 0.0));
  std::vector<std::vector<double>> outputs;
  for (int64_t id : source) {
    std::vector<double> x = embedding_row(model.encoder->embedding->weight, id);
    for (int64_t l = 0; l < L; ++l) x = state[l] = gru_cell(encoder_layers[l], x, state[l]);
    outputs.push_back(x);
  }
  const Matrix W_k = matrix(model.decoder->attention->W_k->weight);
  const Matrix W_q = matrix(model.decoder->attention->W_q->weight);
  const std::vector<double> w_v = vector_of(model.decoder->attention->w_v->weight);
  const Matrix dense = matrix(model.decoder->dense->weight);
  const std::vector<double> dense_bias = vector_of(model.decoder->dense->bias);
  // Decoder: starts from the encoder's final state of every layer.
  double total = 0;
  int64_t input = kBos;
  for (int64_t wanted : target) {
    // Additive attention, query = top layer's state, keys = values = encoder outputs.
    const std::vector<double> query = affine(W_q, state[L - 1]);
    std::vector<double> scores;
    for (const std::vector<double>& key : outputs) {
      const std::vector<double> projected = affine(W_k, key);
      double score = 0;
      for (int64_t j = 0; j < H; ++j) score += w_v[j] * std::tanh(query[j] + projected[j]);
      scores.push_back(score);
    }
    const double largest = *std::max_element(scores.begin(), scores.end());
    double norm = 0;
    for (double s : scores) norm += std::exp(s - largest);
    std::vector<double> x(static_cast<size_t>(H), 0.0);  // the context, then the embedding
    for (size_t s = 0; s < outputs.size(); ++s) {
      const double alpha = std::exp(scores[s] - largest) / norm;
      for (int64_t j = 0; j < H; ++j) x[j] += alpha * outputs[s][j];
    }
    const std::vector<double> embedded = embedding_row(model.decoder->embedding->weight, input);
    x.insert(x.end(), embedded.begin(), embedded.end());
    for (int64_t l = 0; l < L; ++l) x = state[l] = gru_cell(decoder_layers[l], x, state[l]);
    const std::vector<double> logits = affine(dense, state[L - 1], dense_bias);
    const double top = *std::max_element(logits.begin(), logits.end());
    double partition = 0;
    for (double z : logits) partition += std::exp(z - top);
    total += top + std::log(partition) - logits[wanted];
    input = wanted;
  }
  return total;
}
}  // namespace

TEST_CASE("BatchedSeq2Seq: shapes, masks and PyTorch's parameter names", "[batched_seq2seq]") {
  Generator generator(1);
  BatchedSeq2Seq model(small_options(), generator);
  std::vector<std::string> names;
  for (const auto& [name, tensor] : model.named_parameters()) names.push_back(name);
  for (const char* expected :
       {"encoder.embedding.weight", "encoder.rnn.weight_ih_l0", "encoder.rnn.bias_hh_l1",
        "decoder.attention.W_k.weight", "decoder.attention.W_q.weight",
        "decoder.attention.w_v.weight", "decoder.embedding.weight", "decoder.rnn.weight_ih_l0",
        "decoder.dense.weight", "decoder.dense.bias"}) {
    CHECK(std::find(names.begin(), names.end(), expected) != names.end());
  }
  CHECK(model.parameter("decoder.rnn.weight_ih_l0").shape() == Shape{18, 4 + 6});  // E + H in

  const text::PaddedArray source = padded({{3, 4, 5, kEos}, {6, kEos}, {7, 8, kEos}}, 5);
  const EncoderOutput encoded = model.encoder->forward(source.ids, {3, 5}, source.valid_lengths);
  REQUIRE(encoded.outputs.shape() == Shape{3, 5, 6});
  REQUIRE(encoded.hidden.shape() == Shape{2, 3, 6});
  CHECK(encoded.outputs.at({1, 2, 0}) == real(0));  // padding: zero outputs
  CHECK(encoded.outputs.at({0, 4, 5}) == real(0));
  CHECK(encoded.outputs.at({0, 3, 0}) != real(0));

  DecoderState state = model.decoder->init_state(encoded);
  const Tensor logits =
      model.decoder->forward({kBos, 9, 10, 11, kBos, 9, 9, 9, kBos, 1, 1, 1}, {3, 4}, state);
  REQUIRE(logits.shape() == Shape{3, 4, 15});
  const Tensor& weights = model.decoder->attention_weights();
  REQUIRE(weights.shape() == Shape{3, 4, 5});
  for (int64_t b = 0; b < 3; ++b) {
    for (int64_t t = 0; t < 4; ++t) {
      double total = 0;
      for (int64_t s = 0; s < 5; ++s) {
        total += weights.at({b, t, s});
        if (s >= source.valid_lengths[b]) CHECK(weights.at({b, t, s}) == real(0));
      }
      CHECK(total == Approx(1).margin(1e-5));
    }
  }
}

TEST_CASE("BatchedSeq2Seq: Linear and GRU weights start Xavier-uniform", "[batched_seq2seq]") {
  Generator generator(2);
  BatchedSeq2Seq model(BatchedSeq2SeqOptions(40, 50).embed_size(8).hidden_size(16).num_layers(1),
                       generator);
  // Bounds √(6/(fan_in + fan_out)); the layers' own defaults are ±1/√fan_in
  // (or ±1/√H), smaller, so reaching 90% of the Xavier bound shows it was used.
  auto check_xavier = [&](const std::string& name, double fan_in, double fan_out) {
    const double bound = std::sqrt(6.0 / (fan_in + fan_out));
    const double largest = max_abs(model.parameter(name));
    INFO(name << ": largest |w| " << largest << ", Xavier bound " << bound);
    CHECK(largest <= bound);
    CHECK(largest > 0.9 * bound);
  };
  check_xavier("decoder.dense.weight", 16, 50);
  check_xavier("decoder.attention.W_q.weight", 16, 16);
  check_xavier("encoder.rnn.weight_ih_l0", 8, 48);
  check_xavier("decoder.rnn.weight_hh_l0", 16, 48);
  // Biases keep the layers' own initialisation.
  CHECK(max_abs(model.parameter("decoder.dense.bias")) <= 1 / std::sqrt(16.0));
}

TEST_CASE("BatchedSeq2Seq: the encoder's state is the state after each sentence's last token",
          "[batched_seq2seq]") {
  Generator generator(3);
  BatchedSeq2Seq model(small_options(), generator);
  const std::vector<std::vector<int64_t>> sentences = {{3, 4, 5, kEos}, {6, kEos}, {7, 8, kEos}};
  const text::PaddedArray batch = padded(sentences, 6);
  const EncoderOutput together = model.encoder->forward(batch.ids, {3, 6}, batch.valid_lengths);
  for (int64_t b = 0; b < 3; ++b) {
    const auto length = static_cast<int64_t>(sentences[b].size());
    const EncoderOutput alone = model.encoder->forward(sentences[b], {1, length}, {length});
    CHECK(max_difference(select(together.hidden, 1, b), select(alone.hidden, 1, 0)) <= kClose);
    CHECK(max_difference(narrow(select(together.outputs, 0, b), 0, 0, length),
                         select(alone.outputs, 0, 0)) <= kClose);
  }
}

TEST_CASE("BatchedSeq2Seq: padded tokens change neither the loss nor any gradient",
          "[batched_seq2seq]") {
  Generator generator(4);
  BatchedSeq2Seq model(small_options(), generator);
  const text::PaddedArray source = padded({{3, 4, 5, kEos}, {6, kEos}, {7, 8, kEos}}, 6);
  const text::PaddedArray target = padded({{9, 10, kEos}, {11, 12, 13, 14, kEos}, {5, kEos}}, 6);
  const LossAndGradients reference = loss_and_gradients(model, source, target);

  // Overwrite every padded position of both sides with real word ids.
  text::PaddedArray other_source = source, other_target = target;
  for (int64_t b = 0; b < 3; ++b) {
    for (int64_t t = source.valid_lengths[b]; t < 6; ++t) other_source.ids[b * 6 + t] = 5 + t;
    for (int64_t t = target.valid_lengths[b]; t < 6; ++t) other_target.ids[b * 6 + t] = 13 - t;
  }
  const LossAndGradients changed = loss_and_gradients(model, other_source, other_target);
  CHECK(changed.loss == reference.loss);
  const auto named = model.named_parameters();
  for (size_t i = 0; i < named.size(); ++i) {
    INFO(named[i].first);
    REQUIRE(changed.gradients[i].defined());
    CHECK(max_difference(changed.gradients[i], reference.gradients[i]) == 0);
  }
}

TEST_CASE("BatchedSeq2Seq: a batch of one equals the unpadded sentence and its row in a batch",
          "[batched_seq2seq]") {
  Generator generator(5);
  BatchedSeq2Seq model(small_options(), generator);
  const std::vector<int64_t> source = {3, 4, 5, kEos}, target = {9, 10, kEos};
  // Unbatched: exactly the sentence's own length, no padding anywhere.
  const LossAndGradients unpadded =
      loss_and_gradients(model, padded({source}, 4), padded({target}, 3));
  // A batch of one padded to T = 8.
  const LossAndGradients one = loss_and_gradients(model, padded({source}, 8), padded({target}, 8));
  // d2l's loss divides by T, padding included: compare the sums over tokens.
  CHECK(one.loss * 8 == Approx(unpadded.loss * 3).epsilon(kClose));
  for (size_t i = 0; i < one.gradients.size(); ++i) {
    CHECK(max_difference(one.gradients[i] * real(8), unpadded.gradients[i] * real(3)) <=
          10 * kClose);
  }
  // The same pair as row 0 of a batch of three.
  const Tensor losses = model.loss(padded({source, {6, kEos}, {7, 8, 7, 8, kEos}}, 8),
                                   padded({target, {11, 12, 13, kEos}, {5, kEos}}, 8));
  CHECK(losses.at({0}) == Approx(one.loss).epsilon(kClose));
}

TEST_CASE("BatchedSeq2Seq: each row of a padded batch has the loss of a scalar reference model",
          "[batched_seq2seq]") {
  // The unbatched path written out by hand (reference_pair_loss) against the
  // batched model on the same weights: a batch of one padded to T = 8, and
  // each row of a batch of three. d2l's loss_b = (1/T) Σ_{t < valid} −log p.
  Generator generator(11);
  BatchedSeq2Seq model(small_options(), generator);
  // Sharper attention than at initialisation, so that a wrong query, key or
  // context moves the loss far more than float rounding does.
  for (nn::Linear* layer :
       {model.decoder->attention->W_q.get(), model.decoder->attention->W_k.get(),
        model.decoder->attention->w_v.get()}) {
    NoGradGuard no_grad;
    layer->weight.copy_from(layer->weight * real(4));
  }
  const std::vector<std::vector<int64_t>> sources = {
      {3, 4, 5, kEos}, {6, kEos}, {7, 8, 7, 8, 9, 10, kEos}};
  const std::vector<std::vector<int64_t>> targets = {
      {9, 10, kEos}, {11, 12, 13, 14, kEos}, {5, kEos}};
  // Float rounding moved the loss by under 4e-8 (relative); taking the query
  // from the bottom layer instead of the top one moved it by 2e-5 to 2e-4.
  const double tolerance = std::is_same_v<real, double> ? 1e-10 : 2e-6;
  constexpr int64_t T = 8;
  const Tensor one = model.loss(padded({sources[0]}, T), padded({targets[0]}, T));
  CHECK(double(one.at({0})) * T ==
        Approx(reference_pair_loss(model, sources[0], targets[0])).epsilon(tolerance));
  const Tensor batch = model.loss(padded(sources, T), padded(targets, T));
  REQUIRE(batch.shape() == Shape{3});
  for (int64_t b = 0; b < 3; ++b) {
    INFO("row " << b);
    CHECK(double(batch.at({b})) * T ==
          Approx(reference_pair_loss(model, sources[b], targets[b])).epsilon(tolerance));
  }
}

TEST_CASE("BatchedSeq2Seq: a short training run overfits 64 pairs and translates them back",
          "[batched_seq2seq][slow]") {
  const text::BatchedData data = shipped_pairs(64);
  REQUIRE(data.source.rows == 64);
  Generator generator(0);
  BatchedSeq2Seq model(
      BatchedSeq2SeqOptions(data.source_vocabulary.size(), data.target_vocabulary.size())
          .dropout(0),
      generator);
  constexpr int64_t kEpochs = 80;
  const TrainingReport report =
      train(model, data, BatchedTrainingOptions().epochs(kEpochs).lr(0.02).batch_size(64));
  REQUIRE(report.epochs.size() == kEpochs);
  INFO("first loss " << report.epochs.front().loss << ", last " << report.final_loss);
  CHECK(report.final_loss < 0.03);  // the first epoch is near log(V)/T ≈ 0.33
  CHECK(report.final_loss < 0.1 * report.epochs.front().loss);
  CHECK(report.tokens == kEpochs * std::accumulate(data.target.valid_lengths.begin(),
                                                   data.target.valid_lengths.end(), int64_t{0}));

  // Greedy translations of the training sentences give one of their references.
  std::vector<text::SentencePair> pairs;
  for (int64_t n = 0; n < 64; ++n) {
    std::vector<std::string> source, target;
    for (int64_t t = 0; t < data.source.valid_lengths[n] - 1; ++t) {
      source.push_back(data.source_vocabulary.word(data.source.at(n, t)));
    }
    for (int64_t t = 0; t < data.target.valid_lengths[n] - 1; ++t) {
      target.push_back(data.target_vocabulary.word(data.target.at(n, t)));
    }
    pairs.push_back({text::join_words(source), text::join_words(target)});
  }
  const Evaluation evaluation =
      evaluate(model, data.source_vocabulary, data.target_vocabulary, pairs, 10);
  int64_t exact = 0;
  for (const EvaluatedPair& pair : evaluation.pairs) {
    exact += std::find(pair.references.begin(), pair.references.end(), pair.output) !=
             pair.references.end();
  }
  INFO(exact << " of " << evaluation.pairs.size() << " sources translated exactly");
  CHECK(exact >= static_cast<int64_t>(0.8 * static_cast<double>(evaluation.pairs.size())));

  // A prediction's attention: one row per step, over the valid source positions only.
  const SentenceTranslation translation = translate_sentence(
      model, data.source_vocabulary, data.target_vocabulary, pairs.front().source, 10);
  const decoding::Hypothesis& prediction = translation.best;
  CHECK(prediction.reached_end);
  CHECK(prediction.length == static_cast<int64_t>(prediction.tokens.size()) + 1);
  REQUIRE(prediction.attention.size() == static_cast<size_t>(prediction.length * 10));
  const auto valid = static_cast<int64_t>(translation.source_words.size()) + 1;  // + <eos>
  for (int64_t step = 0; step < prediction.length; ++step) {
    double total = 0;
    for (int64_t s = 0; s < 10; ++s) {
      const double w = prediction.attention[static_cast<size_t>(step * 10 + s)];
      total += w;
      if (s >= valid) CHECK(w == 0);
    }
    CHECK(total == Approx(1).margin(1e-5));
  }
  CHECK(model.is_training());  // predict restores the mode it found
}

// The losses and final weights of two epochs on `data` from seed 7, with
// `replicas` replicas on `threads` threads, every product split but the
// smallest ones.
std::pair<std::vector<double>, std::vector<real>> train_briefly(const text::BatchedData& data,
                                                                int64_t replicas, int threads,
                                                                double dropout) {
  const testing::ThreadSettings settings(threads, 1024);
  Generator generator(7);
  BatchedSeq2Seq model(
      BatchedSeq2SeqOptions(data.source_vocabulary.size(), data.target_vocabulary.size())
          .embed_size(8)
          .hidden_size(8)
          .dropout(dropout),
      generator);
  const TrainingReport report = train(
      model, data, BatchedTrainingOptions().epochs(2).batch_size(16).seed(3).replicas(replicas));
  CHECK(report.replicas == replicas);
  std::vector<double> losses;
  for (const EpochReport& epoch : report.epochs) losses.push_back(epoch.loss);
  return {losses, testing::values_of(model.parameters())};
}

TEST_CASE("BatchedSeq2Seq: training repeats exactly for a seed, with 1 or 2 threads",
          "[batched_seq2seq]") {
  const text::BatchedData data = shipped_pairs(32);
  const auto first = train_briefly(data, 1, 1, 0.1);  // dropout: the masks must repeat too
  CHECK(train_briefly(data, 1, 1, 0.1) == first);
  CHECK(train_briefly(data, 1, 2, 0.1) == first);
}

TEST_CASE("BatchedSeq2Seq: replicas train as the model alone, the same on 1 or 2 threads",
          "[batched_seq2seq]") {
  const text::BatchedData data = shipped_pairs(32);
  // With dropout the replicas draw masks of their own, but the run repeats
  // exactly, whichever thread runs which replica.
  const auto two = train_briefly(data, 2, 1, 0.1);
  CHECK(train_briefly(data, 2, 2, 0.1) == two);
  CHECK(train_briefly(data, 3, 2, 0.1) != two);
  // Without dropout two replicas train the model alone does: the gradient is
  // the same sum in another order, so the runs part only by rounding.
  const auto alone = train_briefly(data, 1, 1, 0);
  const auto split = train_briefly(data, 2, 2, 0);
  const double tolerance = std::is_same_v<real, double> ? 1e-10 : 1e-4;
  for (size_t e = 0; e < alone.first.size(); ++e) {
    CHECK(split.first[e] == Approx(alone.first[e]).epsilon(tolerance));
  }
  CHECK(max_difference(split.second, alone.second) <= tolerance);
  CHECK(max_difference(split.second, alone.second) > 0);  // the replicas did split the batch

  Generator generator(1);
  BatchedSeq2Seq model(small_options(), generator);
  CHECK_THROWS_WITH(train(model, data, BatchedTrainingOptions().batch_size(4).replicas(5)),
                    Contains("5 replicas for batches of 4 pairs"));
}

TEST_CASE("BatchedSeq2Seq: a non-finite gradient norm stops training before the step",
          "[batched_seq2seq]") {
  const text::BatchedData data = shipped_pairs(16);
  Generator generator(5);
  BatchedSeq2Seq model(
      BatchedSeq2SeqOptions(data.source_vocabulary.size(), data.target_vocabulary.size())
          .embed_size(4)
          .hidden_size(4),
      generator);
  // An infinite logit bias makes the loss and every gradient NaN.
  model.decoder->dense->bias.data()[0] = std::numeric_limits<real>::infinity();
  std::vector<std::vector<real>> before;
  for (const Tensor& p : model.parameters()) before.push_back(p.to_vector());
  int64_t epochs_ended = 0;
  CHECK_THROWS_AS(train(model, data, BatchedTrainingOptions().epochs(2).batch_size(16),
                        [&](const EpochReport&) { ++epochs_ended; }),
                  nn::NonFiniteNormError);
  CHECK(epochs_ended == 0);
  std::vector<std::vector<real>> after;
  for (const Tensor& p : model.parameters()) after.push_back(p.to_vector());
  CHECK(after == before);  // Adam never stepped (the infinite bias equals itself)
}

TEST_CASE("BatchedSeq2Seq: bad input names the layer, the shapes and the values",
          "[batched_seq2seq]") {
  Generator generator(8);
  BatchedSeq2Seq model(small_options(), generator);
  CHECK_THROWS_WITH(model.encoder->forward({3, kEos, 4, kEos}, {2, 2}, {2, 3}),
                    Contains("Seq2SeqEncoder") && Contains("valid length 3") && Contains("T = 2"));
  CHECK_THROWS_WITH(model.encoder->forward({3, kEos, 4, kEos}, {2, 2}, {0, 2}),
                    Contains("valid length 0"));
  CHECK_THROWS_WITH(model.encoder->forward({3, kEos, 4}, {2, 2}, {2, 2}),
                    Contains("3 ids for a shape (2,2)"));
  CHECK_THROWS_WITH(model.encoder->forward({3, kEos, 4, kEos}, {2, 2}, {2}),
                    Contains("1 valid lengths for a batch of B = 2"));
  const EncoderOutput encoded = model.encoder->forward({3, kEos, 4, kEos}, {2, 2}, {2, 2});
  DecoderState state = model.decoder->init_state(encoded);
  CHECK_THROWS_WITH(
      model.decoder->forward({kBos, kBos, kBos}, {3, 1}, state),
      Contains("Seq2SeqAttentionDecoder") && Contains("(2,3,6)") && Contains("(2,2,6)"));
  CHECK_THROWS_WITH(model.loss(padded({{3, kEos}}, 4), padded({{5, kEos}, {6, kEos}}, 4)),
                    Contains("1 source sentences but 2 targets"));
  CHECK_THROWS_WITH(model.encoder->forward({3, 99}, {1, 2}, {2}),
                    Contains("id 99") && Contains("vocabulary of 12"));
}

}  // namespace test_batched_seq2seq
