// tests/models/test_seq2seq.cpp — the tutorial's translator: the encoder, the
// two attention decoders, the training step, checkpoints and resuming.
//
// Gradients are checked by central differences in double ([f64], ε = 1e-6,
// passing when |analytic − numeric| ≤ 1e-6 + 1e-5·|numeric|) for one whole
// decoder step — the inputs (state and encoder outputs) through gradcheck(),
// every parameter by perturbing it in place. The models are smooth except
// for relu in the location decoder's attn_combine; with small random weights
// a pre-activation within 1e-6 of zero is improbable and the fixed seed
// avoids it.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/fast/fast.hpp"
#include "autograd/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "autograd/ops_gru.hpp"
#include "models/seq2seq/corpus.hpp"
#include "models/seq2seq/seq2seq.hpp"
#include "models/seq2seq/training.hpp"
#include "models/text/normalize.hpp"
#include "nn/checkpoint.hpp"
#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/gru.hpp"
#include "nn/linear.hpp"
#include "nn/optim.hpp"
#include "tensor/factory.hpp"

namespace test_seq2seq {

using namespace attograd;
using namespace attograd::seq2seq;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const fs::path kShippedData = fs::path(ATTOGRAD_SOURCE_DIR) / "data" / "eng-fra.tsv";

// A small model: H = 4, V_in = 7, V_out = 6, L = 5.
Seq2SeqOptions small_options(DecoderKind decoder) {
  return Seq2SeqOptions(7, 6).hidden_size(4).max_length(5).dropout(0.1).decoder(decoder);
}

// A fresh temporary folder, removed afterwards.
struct TemporaryFolder {
  fs::path path;
  TemporaryFolder() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("attograd_seq2seq_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

double row_sum(const Tensor& t) {
  double total = 0;
  for (real v : t.to_vector()) total += static_cast<double>(v);
  return total;
}

// Every output of one decoder step, flattened into one vector.
Tensor step_outputs(const DecoderStep& step) {
  return cat(
      {reshape(step.log_probs, {-1}), reshape(step.hidden, {-1}), reshape(step.attention, {-1})},
      0);
}

// Central differences for every entry of every parameter of `module`
// against the gradients backward() leaves there, for L = Σ output ⊙ R.
void check_parameter_gradients(nn::Module& module, const std::function<Tensor()>& output) {
  const Tensor first = output();
  Generator generator(99);
  const Tensor weights = randn(first.shape(), generator);
  auto objective = [&] {
    const NoGradGuard no_grad;
    return static_cast<double>(sum(output() * weights).item());
  };
  module.zero_grad();
  backward(sum(output() * weights));
  const double epsilon = 1e-6;
  int64_t checked = 0;
  for (auto& [name, parameter] : module.named_parameters()) {
    const Tensor gradient = grad(parameter);
    real* values = parameter.data();
    for (int64_t i = 0; i < parameter.numel(); ++i) {
      const real saved = values[i];
      values[i] = saved + epsilon;
      const double plus = objective();
      values[i] = saved - epsilon;
      const double minus = objective();
      values[i] = saved;
      const double numeric = (plus - minus) / (2 * epsilon);
      const double analytic = gradient.defined() ? static_cast<double>(gradient.data()[i]) : 0.0;
      INFO(name << "[" << i << "]: analytic " << analytic << ", numeric " << numeric);
      REQUIRE(std::abs(analytic - numeric) <= 1e-6 + 1e-5 * std::abs(numeric));
      ++checked;
    }
  }
  CHECK(checked == module.parameter_count());
}

// The mean NLL per target word over `pairs`, teacher forced, in eval mode.
double mean_loss(Seq2Seq& model, const std::vector<EncodedPair>& pairs) {
  model.eval();
  const NoGradGuard no_grad;
  double total = 0;
  for (const EncodedPair& pair : pairs) {
    const PairLoss loss = model.pair_loss(pair.source, pair.target, true);
    total += static_cast<double>(loss.total.item()) / static_cast<double>(loss.target_length);
  }
  model.train();
  return total / static_cast<double>(pairs.size());
}

// The first `count` training pairs of the shipped data, with vocabularies of their own.
struct SmallCorpus {
  std::vector<text::SentencePair> pairs;
  text::Vocabulary source = text::make_tutorial_vocabulary();
  text::Vocabulary target = text::make_tutorial_vocabulary();
  std::vector<EncodedPair> encoded;
};

SmallCorpus small_corpus(size_t count) {
  const Corpus corpus = load_corpus(CorpusOptions().path(kShippedData));
  SmallCorpus small;
  small.pairs.assign(corpus.split.train.begin(),
                     corpus.split.train.begin() + static_cast<std::ptrdiff_t>(count));
  for (const text::SentencePair& pair : small.pairs) {
    small.source.add_sentence(pair.source);
    small.target.add_sentence(pair.target);
  }
  small.encoded = encode_pairs(small.pairs, small.source, small.target);
  return small;
}

bool same_parameters(const Seq2Seq& a, const Seq2Seq& b, double tolerance) {
  const auto first = a.named_parameters();
  const auto second = b.named_parameters();
  if (first.size() != second.size()) return false;
  for (size_t p = 0; p < first.size(); ++p) {
    const std::vector<real> x = first[p].second.to_vector();
    const std::vector<real> y = second[p].second.to_vector();
    if (first[p].first != second[p].first || x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::abs(static_cast<double>(x[i]) - static_cast<double>(y[i])) > tolerance) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

// ---------------------------------------------------------------- structure

TEST_CASE("Seq2Seq parameters have PyTorch's names and shapes", "[seq2seq]") {
  Generator generator(1);
  Seq2Seq location(small_options(DecoderKind::location), generator);
  std::vector<std::string> names;
  for (const auto& [name, tensor] : location.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{
                     "encoder.embedding.weight", "encoder.gru.weight_ih_l0",
                     "encoder.gru.weight_hh_l0", "encoder.gru.bias_ih_l0", "encoder.gru.bias_hh_l0",
                     "decoder.embedding.weight", "decoder.attn.weight", "decoder.attn.bias",
                     "decoder.attn_combine.weight", "decoder.attn_combine.bias",
                     "decoder.gru.weight_ih_l0", "decoder.gru.weight_hh_l0",
                     "decoder.gru.bias_ih_l0", "decoder.gru.bias_hh_l0", "decoder.out.weight",
                     "decoder.out.bias"});
  CHECK(location.parameter("encoder.embedding.weight").shape() == Shape{7, 4});
  CHECK(location.parameter("decoder.attn.weight").shape() == Shape{5, 8});  // (L, 2H)
  CHECK(location.parameter("decoder.attn_combine.weight").shape() == Shape{4, 8});
  CHECK(location.parameter("decoder.out.weight").shape() == Shape{6, 4});

  Seq2Seq bahdanau(small_options(DecoderKind::bahdanau), generator);
  CHECK(bahdanau.parameter("decoder.attention.W_q.weight").shape() == Shape{4, 4});
  CHECK(bahdanau.parameter("decoder.attention.W_k.weight").shape() == Shape{4, 4});
  CHECK(bahdanau.parameter("decoder.attention.w_v.weight").shape() == Shape{1, 4});
  CHECK(bahdanau.parameter("decoder.gru.weight_ih_l0").shape() == Shape{12, 8});  // GRU(2H, H)
  CHECK_THAT(bahdanau.summary(), Contains("BahdanauAttnDecoder"));
}

TEST_CASE("the Bahdanau decoder draws its weights in the order W_q, W_k, w_v", "[seq2seq]") {
  // A seed must keep giving the same model: the same draws, made by hand in
  // the decoder's order (embedding, dropout's seed, W_q, W_k, w_v, gru, out).
  Generator generator(12), by_hand(12);
  BahdanauAttnDecoder decoder(4, 6, 0.1, 5, generator);
  const nn::Embedding embedding(nn::EmbeddingOptions(6, 4), by_hand);
  const nn::Dropout dropout(0.1, by_hand);
  const nn::Linear W_q(nn::LinearOptions(4, 4).bias(false), by_hand);
  const nn::Linear W_k(nn::LinearOptions(4, 4).bias(false), by_hand);
  const nn::Linear w_v(nn::LinearOptions(4, 1).bias(false), by_hand);
  const nn::GRU gru(nn::GRUOptions(8, 4), by_hand);
  CHECK(decoder.embedding->weight.to_vector() == embedding.weight.to_vector());
  CHECK(decoder.attention->W_q->weight.to_vector() == W_q.weight.to_vector());
  CHECK(decoder.attention->W_k->weight.to_vector() == W_k.weight.to_vector());
  CHECK(decoder.attention->w_v->weight.to_vector() == w_v.weight.to_vector());
  CHECK(decoder.gru->layers()[0].weight_ih.to_vector() == gru.layers()[0].weight_ih.to_vector());
}

TEST_CASE("the encoder zero-pads its outputs to MAX_LENGTH rows", "[seq2seq]") {
  Generator generator(2);
  Seq2Seq model(small_options(DecoderKind::location), generator);
  const EncoderOutput encoded = model.encoder->forward({3, 4, kEos});
  REQUIRE(encoded.outputs.shape() == Shape{1, 5, 4});  // a batch of one sentence
  REQUIRE(encoded.hidden.shape() == Shape{1, 1, 4});
  CHECK(encoded.valid_lens == std::vector<int64_t>{3});
  for (int64_t j = 0; j < 4; ++j) {
    CHECK(encoded.outputs.at({0, 2, j}) == encoded.hidden.at({0, 0, j}));  // last output = h_n
    CHECK(encoded.outputs.at({0, 3, j}) == 0);
    CHECK(encoded.outputs.at({0, 4, j}) == 0);
  }
  CHECK_THROWS_WITH(model.encoder->forward({1, 2, 3, 4, 5, kEos}), Contains("MAX_LENGTH"));
  CHECK_THROWS_WITH(model.encoder->forward({}), Contains("encoder keeps 1 to 5"));
}

TEST_CASE("a decoder step has the tutorial's shapes and attention rows sum to 1", "[seq2seq]") {
  for (const DecoderKind kind : {DecoderKind::location, DecoderKind::bahdanau}) {
    INFO("decoder " << to_string(kind));
    Generator generator(3);
    Seq2Seq model(small_options(kind), generator);
    const EncoderOutput encoded = model.encoder->forward({3, 4, kEos});
    const AttentionMemory memory = model.decoder->remember(encoded);
    const DecoderStep step = model.decoder->forward(kSos, encoded.hidden, memory);
    CHECK(step.log_probs.shape() == Shape{1, 6});
    CHECK(step.hidden.shape() == Shape{1, 1, 4});
    CHECK(step.attention.shape() == Shape{1, 5});
    CHECK(row_sum(step.attention) == Approx(1.0).epsilon(1e-6));
    double probability = 0;
    for (real v : step.log_probs.to_vector()) probability += std::exp(static_cast<double>(v));
    CHECK(probability == Approx(1.0).epsilon(1e-5));
    // The next step takes the new state.
    const DecoderStep next = model.decoder->forward(2, step.hidden, memory);
    CHECK(row_sum(next.attention) == Approx(1.0).epsilon(1e-6));
  }
}

TEST_CASE("Bahdanau attention gives the padded positions exactly zero weight", "[seq2seq]") {
  Generator generator(4);
  Seq2Seq bahdanau(small_options(DecoderKind::bahdanau), generator);
  bahdanau.eval();
  const EncoderOutput encoded = bahdanau.encoder->forward({3, kEos});
  const DecoderStep step =
      bahdanau.decoder->forward(kSos, encoded.hidden, bahdanau.decoder->remember(encoded));
  const std::vector<real> weights = step.attention.to_vector();
  CHECK(weights[0] > 0);
  CHECK(weights[1] > 0);
  CHECK(weights[2] == 0);
  CHECK(weights[3] == 0);
  CHECK(weights[4] == 0);
  CHECK(weights[0] + weights[1] == Approx(1.0).epsilon(1e-6));

  // The classic decoder scores positions, padded ones included, as the tutorial does.
  Seq2Seq location(small_options(DecoderKind::location), generator);
  location.eval();
  const EncoderOutput classic = location.encoder->forward({3, kEos});
  const DecoderStep classic_step =
      location.decoder->forward(kSos, classic.hidden, location.decoder->remember(classic));
  CHECK(classic_step.attention.to_vector()[4] > 0);
}

TEST_CASE("dropout is active in training mode and off in evaluation mode", "[seq2seq]") {
  Generator generator(5);
  Seq2Seq model(small_options(DecoderKind::location).dropout(0.5), generator);
  const EncoderOutput encoded = model.encoder->forward({3, 4, kEos});
  const AttentionMemory memory = model.decoder->remember(encoded);
  model.eval();
  const std::vector<real> a =
      model.decoder->forward(kSos, encoded.hidden, memory).log_probs.to_vector();
  const std::vector<real> b =
      model.decoder->forward(kSos, encoded.hidden, memory).log_probs.to_vector();
  CHECK(a == b);
  model.train();
  bool differs = false;
  for (int attempt = 0; attempt < 5 && !differs; ++attempt) {
    differs = model.decoder->forward(kSos, encoded.hidden, memory).log_probs.to_vector() != a;
  }
  CHECK(differs);
}

// ---------------------------------------------------------------- gradients

TEST_CASE("gradcheck of one whole decoder step, both decoders", "[seq2seq][f64]") {
  for (const DecoderKind kind : {DecoderKind::location, DecoderKind::bahdanau}) {
    INFO("decoder " << to_string(kind));
    Generator generator(6);
    Seq2Seq model(small_options(kind).hidden_size(3), generator);
    model.eval();  // no dropout: the step must be a deterministic function
    AttnDecoderRNN* location = dynamic_cast<AttnDecoderRNN*>(model.decoder.get());
    const int64_t source_length = 3;

    // The inputs: the state and the encoder outputs (rows ≥ S zero, as the encoder makes them).
    Tensor hidden = randn({1, 1, 3}, generator) * real(0.5);
    Tensor outputs = randn({1, 5, 3}, generator) * real(0.5);
    for (int64_t row = source_length; row < 5; ++row) {
      for (int64_t j = 0; j < 3; ++j) outputs.set({0, row, j}, 0);
    }
    auto step = [&](const Tensor& h, const Tensor& values) {
      EncoderOutput encoded{values, h, {source_length}};
      return step_outputs(model.decoder->forward(4, h, model.decoder->remember(encoded)));
    };
    const GradcheckResult inputs = gradcheck(
        [&](const std::vector<Tensor>& x) { return step(x[0], x[1]); }, {hidden, outputs});
    INFO(inputs.report);
    CHECK(inputs.passed);
    check_parameter_gradients(*model.decoder, [&] { return step(hidden, outputs); });
    if (location) CHECK(location->attn->weight.shape() == Shape{5, 6});
  }
}

TEST_CASE("gradcheck of a whole pair's loss through encoder and decoder", "[seq2seq][f64]") {
  for (const DecoderKind kind : {DecoderKind::location, DecoderKind::bahdanau}) {
    INFO("decoder " << to_string(kind));
    Generator generator(7);
    Seq2Seq model(small_options(kind).hidden_size(3), generator);
    model.eval();
    check_parameter_gradients(model, [&] {
      return reshape(model.pair_loss({3, 5, kEos}, {2, 4, kEos}, true).total, {1});
    });
  }
}

TEST_CASE("pair_loss equals the tutorial's step-by-step loss", "[seq2seq]") {
  for (const DecoderKind kind : {DecoderKind::location, DecoderKind::bahdanau}) {
    INFO("decoder " << to_string(kind));
    Generator generator(8);
    Seq2Seq model(small_options(kind), generator);
    model.eval();
    const std::vector<int64_t> source = {3, 5, 6, kEos}, target = {2, 4, 5, kEos};
    for (const bool teacher_forcing : {true, false}) {
      INFO("teacher forcing " << teacher_forcing);
      // The tutorial's loop: decoder(input, hidden, encoder_outputs) once per word.
      const EncoderOutput encoded = model.encoder->forward(source);
      const AttentionMemory memory = model.decoder->remember(encoded);
      Tensor hidden = encoded.hidden;
      int64_t input = kSos;
      double expected = 0;
      for (const int64_t word : target) {
        const DecoderStep step = model.decoder->forward(input, hidden, memory);
        expected -= static_cast<double>(step.log_probs.at({0, word}));
        hidden = step.hidden;
        input = teacher_forcing ? word : argmax(step.log_probs, 1)[0];
        if (!teacher_forcing && input == kEos) break;
      }
      const PairLoss loss = model.pair_loss(source, target, teacher_forcing);
      CHECK(loss.target_length == 4);
      CHECK(static_cast<double>(loss.total.item()) == Approx(expected).epsilon(1e-5));
    }
  }
}

// The gradients of every parameter after backward, by name.
std::map<std::string, std::vector<real>> parameter_gradients(nn::Module& module) {
  std::map<std::string, std::vector<real>> gradients;
  for (auto& [name, parameter] : module.named_parameters()) {
    const Tensor gradient = grad(parameter);
    gradients[name] = gradient.defined() ? gradient.to_vector() : std::vector<real>();
  }
  return gradients;
}

// Largest |a − b| / (1 + |b|) over all entries of all gradients; 1 when a
// gradient is missing from one side only.
double largest_gradient_difference(const std::map<std::string, std::vector<real>>& a,
                                   const std::map<std::string, std::vector<real>>& b) {
  double worst = 0;
  for (const auto& [name, values] : b) {
    const std::vector<real>& other = a.at(name);
    if (other.size() != values.size()) return 1;
    for (size_t i = 0; i < values.size(); ++i) {
      const double difference =
          std::abs(double(other[i]) - double(values[i])) / (1 + std::abs(double(values[i])));
      worst = std::max(worst, difference);
    }
  }
  return worst;
}

TEST_CASE("pair_loss gradients equal the step-by-step loss's gradients", "[seq2seq]") {
  for (const DecoderKind kind : {DecoderKind::location, DecoderKind::bahdanau}) {
    INFO("decoder " << to_string(kind));
    Generator generator(10);
    Seq2Seq model(small_options(kind), generator);
    model.eval();
    const std::vector<int64_t> source = {3, 5, 6, kEos}, target = {2, 4, 5, kEos};
    for (const bool teacher_forcing : {true, false}) {
      INFO("teacher forcing " << teacher_forcing);
      // The specification: the tutorial's loop, the decoder's whole forward()
      // once per word, on the reference path (every gradient a dense tensor,
      // each step forming its own weight gradients).
      model.zero_grad();
      Tensor expected = zeros({});
      {
        const fast::ReferencePath reference;
        const EncoderOutput encoded = model.encoder->forward(source);
        const AttentionMemory memory = model.decoder->remember(encoded);
        Tensor hidden = encoded.hidden;
        int64_t input = kSos;
        for (const int64_t word : target) {
          const DecoderStep step = model.decoder->forward(input, hidden, memory);
          expected = expected - select(select(step.log_probs, 0, 0), 0, word);
          hidden = step.hidden;
          input = teacher_forcing ? word : argmax(step.log_probs, 1)[0];
          if (!teacher_forcing && input == kEos) break;
        }
        backward(expected);
      }
      const auto step_by_step = parameter_gradients(model);

      model.zero_grad();
      const PairLoss loss = model.pair_loss(source, target, teacher_forcing);
      backward(loss.total);
      const auto batched = parameter_gradients(model);
      CHECK(static_cast<double>(loss.total.item()) ==
            Approx(static_cast<double>(expected.item())).epsilon(1e-5));
      CHECK(largest_gradient_difference(batched, step_by_step) <= 1e-5);
    }
  }
}

TEST_CASE("teacher-forced steps with sentence products draw the same dropout masks",
          "[seq2seq][fast_paths]") {
  // Training mode, dropout on: the location decoder's sentence-product path
  // (autograd/fast/sentence_products.hpp) against its T calls of advance(),
  // from the same generator state. Other masks would change the outputs by
  // far more than rounding.
  Generator generator(12);
  Seq2Seq model(small_options(DecoderKind::location).dropout(0.5), generator);
  model.train();
  const std::vector<int64_t> source = {3, 5, 6, kEos}, inputs = {kSos, 2, 4, 5, 2};
  const EncoderOutput encoded = model.encoder->forward(source);
  const AttentionMemory memory = model.decoder->remember(encoded);
  const Generator masks = model.decoder->dropout_generator();
  const std::vector<DecoderStep> fast_steps =
      model.decoder->advance_teacher_forced(inputs, encoded.hidden, memory);
  model.decoder->dropout_generator() = masks;
  std::vector<DecoderStep> steps;
  {
    const fast::ReferencePath reference;
    steps = model.decoder->advance_teacher_forced(inputs, encoded.hidden, memory);
  }
  model.decoder->dropout_generator() = masks;
  Tensor hidden = encoded.hidden;
  for (size_t t = 0; t < inputs.size(); ++t) {
    INFO("step " << t);
    const DecoderStep step = model.decoder->advance(inputs[t], hidden, memory);
    hidden = step.hidden;
    // The reference path is advance() itself, bit for bit.
    CHECK(steps[t].output.to_vector() == step.output.to_vector());
    CHECK(steps[t].attention.to_vector() == step.attention.to_vector());
    for (const auto& [a, b] : {std::pair{fast_steps[t].output, step.output},
                               std::pair{fast_steps[t].hidden, step.hidden},
                               std::pair{fast_steps[t].attention, step.attention}}) {
      const std::vector<real> x = a.to_vector(), y = b.to_vector();
      REQUIRE(x.size() == y.size());
      for (size_t i = 0; i < x.size(); ++i)
        CHECK(double(x[i]) == Approx(double(y[i])).margin(1e-5));
    }
  }
}

TEST_CASE("GRU weight gradients kept as factors over the steps equal the per-step ones",
          "[seq2seq][gru]") {
  // Three steps of one cell with batch 2, every input requiring grad.
  Generator generator(11);
  const int64_t B = 2, I = 5, H = 3, T = 3;
  const Tensor weight_ih = requires_grad_(randn({3 * H, I}, generator));
  const Tensor weight_hh = requires_grad_(randn({3 * H, H}, generator));
  const Tensor bias_ih = requires_grad_(randn({3 * H}, generator));
  const Tensor bias_hh = requires_grad_(randn({3 * H}, generator));
  const Tensor h0 = requires_grad_(randn({B, H}, generator));
  std::vector<Tensor> xs;
  for (int64_t t = 0; t < T; ++t) xs.push_back(requires_grad_(randn({B, I}, generator)));
  const Tensor readout = randn({B, H}, generator);
  const std::vector<Tensor> inputs = {weight_ih, weight_hh, bias_ih, bias_hh,
                                      h0,        xs[0],     xs[1],   xs[2]};

  auto gradients = [&](bool reference_path) {
    std::optional<fast::ReferencePath> reference;
    if (reference_path) reference.emplace();
    for (const Tensor& t : inputs) zero_grad(t);
    Tensor h = h0, total = zeros({});
    for (const Tensor& x : xs) {
      h = gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh);
      total = total + sum(h * readout);
    }
    backward(total);
    // On the fast path the weights' gradients wait as T·B rows of factors.
    const auto* deferred = fast::deferred_gradient_of(weight_hh);
    CHECK((deferred != nullptr) == !reference_path);
    if (deferred != nullptr) CHECK(deferred->product_rows() == T * B);
    std::vector<std::vector<real>> result;
    for (const Tensor& t : inputs) result.push_back(grad(t).to_vector());
    return std::make_pair(static_cast<double>(total.item()), result);
  };
  const auto [reference_value, reference] = gradients(true);
  const auto [fast_value, fast_path] = gradients(false);
  CHECK(fast_value == reference_value);  // the forward pass is the same arithmetic
  for (size_t i = 0; i < inputs.size(); ++i) {
    INFO("input " << i);
    REQUIRE(fast_path[i].size() == reference[i].size());
    for (size_t j = 0; j < reference[i].size(); ++j) {
      // The weights' sums run in another order (one product over T·B rows
      // rather than T products added up): equal to float rounding.
      CHECK(fast_path[i][j] == Approx(reference[i][j]).epsilon(1e-5).margin(1e-6));
    }
  }
}

TEST_CASE("sparse embedding gradients give the same SGD step as dense ones", "[seq2seq]") {
  Generator first_generator(9), second_generator(9);
  Seq2Seq dense(small_options(DecoderKind::location).dropout(0), first_generator);
  Seq2Seq sparse(small_options(DecoderKind::location).dropout(0), second_generator);
  sparse.set_sparse_embeddings(true);
  nn::SGD dense_sgd(dense.named_parameters(), nn::SGDOptions(0.5));
  nn::SGD sparse_sgd(sparse.named_parameters(), nn::SGDOptions(0.5));
  const std::vector<int64_t> source = {3, 3, 5, kEos}, target = {2, 2, 4, kEos};  // repeated words
  for (int step = 0; step < 3; ++step) {
    dense_sgd.zero_grad();
    backward(dense.pair_loss(source, target, true).total);
    dense_sgd.step();
    sparse_sgd.zero_grad();
    backward(sparse.pair_loss(source, target, true).total);
    // The tables' gradients wait as the rows read: 4 source words, 4 decoder inputs.
    const Tensor& encoder_table = sparse.encoder->embedding->weight;
    CHECK_FALSE(autograd_meta(encoder_table)->grad.dense().defined());  // no dense gradient
    REQUIRE(fast::deferred_gradient_of(encoder_table) != nullptr);
    CHECK(fast::deferred_gradient_of(encoder_table)->table_rows() == 4);
    sparse_sgd.step();  // plain SGD updates just those rows
    CHECK(fast::deferred_gradient_of(encoder_table) == nullptr);
  }
  CHECK(same_parameters(dense, sparse, 1e-5));
  // The rows never looked up did not move.
  CHECK(dense.encoder->embedding->weight.at({0, 0}) ==
        sparse.encoder->embedding->weight.at({0, 0}));
}

// ---------------------------------------------------------------- training

TEST_CASE("300 iterations on 20 pairs drive the loss below a tenth of its start",
          "[seq2seq][slow]") {
  const SmallCorpus corpus = small_corpus(20);
  Generator generator(1);
  Seq2Seq model(Seq2SeqOptions(corpus.source.size(), corpus.target.size()).hidden_size(32),
                generator);
  Trainer trainer(model, corpus.encoded,
                  TrainingOptions().iterations(300).learning_rate(0.2).seed(1).print_every(100));
  const double before = mean_loss(model, corpus.encoded);
  std::vector<double> reported;
  Trainer::Hooks hooks;
  hooks.report = [&](const IntervalReport& report) { reported.push_back(report.average_loss); };
  REQUIRE(trainer.run(hooks));
  const double after = mean_loss(model, corpus.encoded);
  INFO("mean loss per word: before " << before << ", after " << after);
  CHECK(before > 2.5);
  CHECK(after < before / 10);
  REQUIRE(reported.size() == 3);
  CHECK(reported[2] < reported[0]);
  CHECK(trainer.progress().iteration == 300);
  CHECK(trainer.progress().plot_losses.size() == 3);  // plot_every 100
  CHECK(trainer.progress().interval_losses == reported);
}

TEST_CASE("a stop request ends the run early and cleanly", "[seq2seq]") {
  const SmallCorpus corpus = small_corpus(5);
  Generator generator(1);
  Seq2Seq model(Seq2SeqOptions(corpus.source.size(), corpus.target.size()).hidden_size(8),
                generator);
  Trainer trainer(model, corpus.encoded, TrainingOptions().iterations(100).print_every(10));
  Trainer::Hooks hooks;
  int checkpoints = 0;
  hooks.checkpoint_every = 5;
  hooks.checkpoint = [&] { ++checkpoints; };
  hooks.stop_requested = [&] { return trainer.progress().iteration >= 12; };
  CHECK_FALSE(trainer.run(hooks));
  CHECK(trainer.progress().iteration == 12);
  CHECK(checkpoints == 2);
}

// ---------------------------------------------------------------- checkpoints

TEST_CASE("save -> load gives identical translations", "[seq2seq]") {
  TemporaryFolder folder;
  for (const DecoderKind kind : {DecoderKind::location, DecoderKind::bahdanau}) {
    INFO("decoder " << to_string(kind));
    const SmallCorpus corpus = small_corpus(10);
    Generator generator(2);
    Seq2Seq model(
        Seq2SeqOptions(corpus.source.size(), corpus.target.size()).hidden_size(16).decoder(kind),
        generator);
    Trainer trainer(model, corpus.encoded,
                    TrainingOptions().iterations(40).learning_rate(0.2).print_every(20));
    REQUIRE(trainer.run({}));
    // Checkpoints hold float32; in the double build, make the values float-exact
    // first, so that "identical" can mean identical.
    for (Tensor& parameter : model.parameters()) {
      real* values = parameter.data();
      for (int64_t i = 0; i < parameter.numel(); ++i) {
        values[i] = static_cast<real>(static_cast<float>(values[i]));
      }
    }
    const fs::path path = folder.path / (std::string(to_string(kind)) + ".safetensors");
    CheckpointInfo info{model.options(),   corpus.source,
                        corpus.target,     CorpusOptions().path(kShippedData),
                        trainer.options(), trainer.progress()};
    save_checkpoint(path, model, &trainer.optimizer(), info);

    const CheckpointInfo read = read_checkpoint_info(path);
    CHECK(read.source_vocabulary == corpus.source);
    CHECK(read.target_vocabulary == corpus.target);
    CHECK(read.model.decoder() == kind);
    CHECK(read.model.hidden_size() == 16);
    CHECK(read.progress.iteration == 40);
    CHECK(read.progress.interval_losses == trainer.progress().interval_losses);
    CHECK(read.progress.first_loss == trainer.progress().first_loss);
    const std::unique_ptr<Seq2Seq> loaded = load_model(path, read);
    CHECK(same_parameters(model, *loaded, 0));
    for (const text::SentencePair& pair : corpus.pairs) {
      const SentenceTranslation a =
          translate_sentence(model, corpus.source, corpus.target, pair.source);
      const SentenceTranslation b =
          translate_sentence(*loaded, read.source_vocabulary, read.target_vocabulary, pair.source);
      CHECK(a.output_words == b.output_words);
      CHECK(a.best.attention == b.best.attention);
    }
  }
}

TEST_CASE("a resumed run equals an uninterrupted one", "[seq2seq]") {
  TemporaryFolder folder;
  const SmallCorpus corpus = small_corpus(8);
  const Seq2SeqOptions options =
      Seq2SeqOptions(corpus.source.size(), corpus.target.size()).hidden_size(12);
  const TrainingOptions training =
      TrainingOptions().iterations(30).learning_rate(0.1).seed(7).print_every(7).plot_every(4);

  Generator straight_generator(7);
  Seq2Seq straight(options, straight_generator);
  Trainer uninterrupted(straight, corpus.encoded, training);
  REQUIRE(uninterrupted.run({}));

  // The same run, stopped after 13 iterations, saved, and continued in a new model.
  const fs::path path = folder.path / "resume.safetensors";
  {
    Generator generator(7);
    Seq2Seq first(options, generator);
    Trainer trainer(first, corpus.encoded, training);
    Trainer::Hooks hooks;
    hooks.stop_requested = [&] { return trainer.progress().iteration == 13; };
    REQUIRE_FALSE(trainer.run(hooks));
    save_checkpoint(path, first, &trainer.optimizer(),
                    CheckpointInfo{options, corpus.source, corpus.target, CorpusOptions(), training,
                                   trainer.progress()});
  }
  const CheckpointInfo info = read_checkpoint_info(path);
  Generator other(12345);  // different initial weights: all must come from the file
  Seq2Seq second(info.model, other);
  Trainer resumed(second, corpus.encoded, info.training);
  load_training_state(path, resumed, info);
  CHECK(resumed.progress().iteration == 13);
  REQUIRE(resumed.run({}));

  // Exact in float; the double build saves float32 tensors, so it agrees to rounding.
  const double tolerance = std::is_same_v<real, float> ? 0.0 : 1e-5;
  CHECK(same_parameters(straight, second, tolerance));
  CHECK(resumed.progress().iteration == uninterrupted.progress().iteration);
  // The first iteration's loss, which the divergence check compares with, comes from the file.
  CHECK(uninterrupted.progress().first_loss > 0);
  CHECK(resumed.progress().first_loss == uninterrupted.progress().first_loss);
  REQUIRE(resumed.progress().interval_losses.size() ==
          uninterrupted.progress().interval_losses.size());
  REQUIRE(resumed.progress().plot_losses.size() == uninterrupted.progress().plot_losses.size());
  for (size_t i = 0; i < resumed.progress().plot_losses.size(); ++i) {
    CHECK(resumed.progress().plot_losses[i] ==
          Approx(uninterrupted.progress().plot_losses[i]).margin(tolerance));
  }
  CHECK(resumed.progress().print_loss_total ==
        Approx(uninterrupted.progress().print_loss_total).margin(tolerance * 10));
}

TEST_CASE("a checkpoint whose vocabulary does not match the data is refused", "[seq2seq]") {
  TemporaryFolder folder;
  const SmallCorpus corpus = small_corpus(6);
  Generator generator(3);
  Seq2Seq model(Seq2SeqOptions(corpus.source.size(), corpus.target.size()).hidden_size(8),
                generator);
  const fs::path path = folder.path / "model.safetensors";
  const CheckpointInfo info{model.options(), corpus.source,     corpus.target,
                            CorpusOptions(), TrainingOptions(), TrainingProgress()};
  save_checkpoint(path, model, nullptr, info);
  const CheckpointInfo read = read_checkpoint_info(path);
  CHECK_NOTHROW(check_vocabularies(path, read, corpus.source, corpus.target));
  text::Vocabulary other = corpus.source;
  other.add_word("zzzz");
  CHECK_THROWS_WITH(check_vocabularies(path, read, other, corpus.target),
                    Contains("source vocabulary") && Contains(path.string()));

  // A file that is not a translation checkpoint is named as such.
  const fs::path foreign = folder.path / "foreign.safetensors";
  nn::save(model, foreign);
  CHECK_THROWS_WITH(read_checkpoint_info(foreign),
                    Contains("not a translation checkpoint") && Contains(foreign.string()));
  CHECK_THROWS_WITH(read_checkpoint_info(folder.path / "missing.safetensors"),
                    Contains("missing.safetensors"));
}

// ---------------------------------------------------------------- using a model

TEST_CASE("an unknown word is mapped to <unk> and reported, not fatal", "[seq2seq]") {
  const SmallCorpus corpus = small_corpus(6);
  Generator generator(4);
  Seq2Seq model(Seq2SeqOptions(corpus.source.size(), corpus.target.size()).hidden_size(8),
                generator);
  const SentenceTranslation translation =
      translate_sentence(model, corpus.source, corpus.target, "zorglub blorp .");
  CHECK(translation.unknown_words == std::vector<std::string>{"zorglub", "blorp"});
  CHECK(translation.source_words.size() == 3);
  CHECK(translation.best.length >= 1);
  CHECK(translation.best.length <= 10);

  const EncodedSentence encoded = encode_sentence(corpus.source, "zorglub .");
  CHECK(encoded.ids == std::vector<int64_t>{kUnknown, corpus.source.index("."), kEos});

  // Too long for MAX_LENGTH: the first L − 1 words are kept and the rest counted.
  const SentenceTranslation long_one =
      translate_sentence(model, corpus.source, corpus.target, "a b c d e f g h i j k l");
  CHECK(long_one.source_words.size() == 9);
  CHECK(long_one.dropped_words == 3);
}

TEST_CASE("evaluate scores each source against all of its references", "[seq2seq]") {
  const SmallCorpus corpus = small_corpus(6);
  Generator generator(5);
  Seq2Seq model(Seq2SeqOptions(corpus.source.size(), corpus.target.size()).hidden_size(8),
                generator);
  std::vector<text::SentencePair> pairs = corpus.pairs;
  pairs.push_back({corpus.pairs[0].source, "another reference ."});
  const Evaluation evaluation = evaluate(model, corpus.source, corpus.target, pairs);
  REQUIRE(evaluation.pairs.size() == 6);
  CHECK(evaluation.pairs[0].references.size() == 2);
  CHECK(evaluation.corpus.score >= 0);
  CHECK(evaluation.corpus.score <= 1);
}

TEST_CASE("the shipped data gives the tutorial's corpus", "[seq2seq]") {
  const Corpus corpus = load_corpus(CorpusOptions().path(kShippedData));
  CHECK(corpus.report.lines_read > 70000);
  CHECK(corpus.pairs.size() > 8000);
  CHECK(corpus.pairs.size() < 10000);
  const double held_out = static_cast<double>(corpus.split.validation.size()) /
                          static_cast<double>(corpus.pairs.size());
  CHECK(held_out == Approx(0.05).margin(0.01));
  CHECK(corpus.source_vocabulary.word(kSos) == "SOS");
  CHECK(corpus.source_vocabulary.word(kEos) == "EOS");
  for (const text::SentencePair& pair : corpus.pairs) {
    REQUIRE(text::split_words(pair.source).size() < 10);  // fits with EOS in MAX_LENGTH
  }
  CHECK_THROWS_WITH(load_corpus(CorpusOptions().path("no/such/file.tsv")),
                    Contains("no/such/file.tsv"));
}

}  // namespace test_seq2seq
