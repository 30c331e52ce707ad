// tests/models/test_transformer.cpp — the Transformer encoder–decoder
// (models/transformer/transformer.hpp).
//
// d2l's parameter names and shapes; cached one-token-at-a-time decoding
// equals running the whole prefix with the causal mask; padded source
// positions and later target tokens change nothing; a short training run
// overfits 64 pairs of the shipped data and translates them back; two
// replicas train as the model alone does, to rounding; predict's
// attention maps have the promised shapes; bad sizes are clear errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/ops.hpp"
#include "models/text/batching.hpp"
#include "models/text/normalize.hpp"
#include "models/text/pairs.hpp"
#include "models/transformer/transformer.hpp"
#include "models/translation/batched_translator.hpp"
#include "tensor/factory.hpp"
#include "tests/support/tensor_checks.hpp"
#include "tests/support/thread_settings.hpp"

namespace test_transformer {

using namespace attograd;
using namespace attograd::transformer;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using testing::max_difference;
using translation::kBos;
using translation::kPad;

namespace {

const double kClose = std::is_same_v<real, double> ? 1e-12 : 2e-5;

text::PaddedArray padded(const std::vector<std::vector<int64_t>>& sentences, int64_t T) {
  return testing::padded(sentences, T, kPad);
}

TransformerOptions small_options() {
  return TransformerOptions(12, 15).num_hiddens(8).num_blocks(2).num_heads(2).ffn_num_hiddens(16);
}

}  // namespace

TEST_CASE("Transformer: shapes and d2l's parameter names", "[transformer_model]") {
  Generator generator(1);
  Transformer model(small_options(), generator);
  std::vector<std::string> names;
  for (const auto& [name, tensor] : model.named_parameters()) names.push_back(name);
  CHECK(names.front() == "encoder.embedding.weight");
  CHECK(std::count(names.begin(), names.end(), "encoder.blks.block1.attention.W_q.weight") == 1);
  CHECK(std::count(names.begin(), names.end(), "encoder.blks.block0.addnorm2.ln.bias") == 1);
  CHECK(std::count(names.begin(), names.end(), "decoder.blks.block1.attention2.W_o.weight") == 1);
  CHECK(std::count(names.begin(), names.end(), "decoder.blks.block0.ffn.dense1.bias") == 1);
  CHECK(names.back() == "decoder.dense.bias");
  const text::PaddedArray source = padded({{4, 5, 3}, {6, 3}}, 5);
  const Tensor logits = model.forward(source, {kBos, 7, 8, kBos, 9, 10}, {2, 3});
  CHECK(logits.shape() == Shape{2, 3, 15});
  CHECK(model.encoder->attention_weights().at(1).shape() == Shape{2, 2, 5, 5});
  CHECK(model.decoder->self_attention_weights().at(0).shape() == Shape{2, 2, 3, 3});
  CHECK(model.decoder->cross_attention_weights().at(0).shape() == Shape{2, 2, 3, 5});
}

TEST_CASE("Transformer: cached step-by-step decoding equals recomputing the prefix",
          "[transformer_model]") {
  Generator generator(2);
  Transformer model(small_options().dropout(0.3), generator);
  model.eval();  // no dropout, so both runs compute the same function
  const text::PaddedArray source = padded({{4, 5, 6, 3}, {7, 3}}, 6);
  const std::vector<int64_t> inputs = {kBos, 8, 9, 10, 11, kBos, 12, 13, 14, 4};
  const Tensor encoded = model.encoder->forward(source.ids, {2, 6}, source.valid_lengths);
  TransformerDecoderState whole = model.decoder->init_state(encoded, source.valid_lengths);
  const Tensor all_at_once = model.decoder->forward(inputs, {2, 5}, whole);  // (2,5,15)

  TransformerDecoderState cached = model.decoder->init_state(encoded, source.valid_lengths);
  std::vector<Tensor> steps;
  for (int64_t t = 0; t < 5; ++t) {
    steps.push_back(model.decoder->forward({inputs[t], inputs[5 + t]}, {2, 1}, cached));
  }
  CHECK(cached.positions == 5);
  CHECK(max_difference(cat(steps, 1), all_at_once) <= kClose);
}

TEST_CASE("Transformer: padded source ids and later target tokens change nothing",
          "[transformer_model]") {
  Generator generator(3);
  Transformer model(small_options().dropout(0), generator);
  const text::PaddedArray source = padded({{4, 5, 3}, {6, 3}}, 5);
  const std::vector<int64_t> inputs = {kBos, 7, 8, 9, kBos, 10, 11, 4};
  const Tensor logits = model.forward(source, inputs, {2, 4});
  text::PaddedArray other_padding = source;
  for (int64_t t = 3; t < 5; ++t) other_padding.ids[t] = 9;  // example 0's padding
  for (int64_t t = 2; t < 5; ++t) other_padding.ids[5 + t] = 10;
  CHECK(max_difference(model.forward(other_padding, inputs, {2, 4}), logits) == 0);
  std::vector<int64_t> later = inputs;
  later[2] = 11;  // example 0, position 2: positions 0 and 1 must not move
  const Tensor changed = model.forward(source, later, {2, 4});
  CHECK(max_difference(narrow(narrow(changed, 0, 0, 1), 1, 0, 2),
                       narrow(narrow(logits, 0, 0, 1), 1, 0, 2)) == 0);
  CHECK(max_difference(narrow(changed, 1, 2, 2), narrow(logits, 1, 2, 2)) > 0);
}

TEST_CASE("Transformer: a short training run overfits 64 pairs and translates them back",
          "[transformer_model][slow]") {
  const text::BatchedData data = testing::shipped_pairs(64);
  Generator generator(0);
  Transformer model(
      TransformerOptions(data.source_vocabulary.size(), data.target_vocabulary.size()).dropout(0),
      generator);
  constexpr int64_t kEpochs = 60;
  const translation::TrainingReport report = translation::train(
      model, data, translation::BatchedTrainingOptions().epochs(kEpochs).lr(0.01));
  INFO("first loss " << report.epochs.front().loss << ", last " << report.final_loss);
  CHECK(report.final_loss < 0.1 * report.epochs.front().loss);
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
  const translation::Evaluation evaluation =
      translation::evaluate(model, data.source_vocabulary, data.target_vocabulary, pairs, 10);
  int64_t exact = 0;
  for (const translation::EvaluatedPair& pair : evaluation.pairs) {
    exact += std::find(pair.references.begin(), pair.references.end(), pair.output) !=
             pair.references.end();
  }
  INFO(exact << " of " << evaluation.pairs.size() << " sources translated exactly");
  CHECK(exact >= static_cast<int64_t>(0.8 * static_cast<double>(evaluation.pairs.size())));
  CHECK(model.is_training());  // predict restores the mode it found
}

TEST_CASE("Transformer: two replicas train as the model alone, the same on 1 or 2 threads",
          "[transformer_model]") {
  const text::BatchedData data = testing::shipped_pairs(32);
  auto run = [&](int64_t replicas, int threads) {
    const testing::ThreadSettings settings(threads);
    Generator generator(5);
    Transformer model(
        TransformerOptions(data.source_vocabulary.size(), data.target_vocabulary.size())
            .num_hiddens(8)
            .num_heads(2)
            .ffn_num_hiddens(16)
            .dropout(0),
        generator);
    translation::train(
        model, data,
        translation::BatchedTrainingOptions().epochs(2).batch_size(16).replicas(replicas));
    return testing::values_of(model.parameters());
  };
  const std::vector<real> alone = run(1, 1);
  const std::vector<real> split = run(2, 1);
  CHECK(run(2, 2) == split);
  CHECK(max_difference(split, alone) <= (std::is_same_v<real, double> ? 1e-10 : 1e-4));
  CHECK(max_difference(split, alone) > 0);  // the replicas did split the batch
}

TEST_CASE("Transformer: predict keeps every head's weights", "[transformer_model]") {
  Generator generator(4);
  Transformer model(small_options(), generator);
  const translation::Prediction prediction = model.predict({4, 5, 3}, 6);
  const int64_t steps = prediction.steps;
  REQUIRE(steps >= 1);
  CHECK(prediction.attention.size() == static_cast<size_t>(steps * 6));
  const AttentionMaps& maps = model.attention_maps();
  REQUIRE(maps.encoder.size() == 2);
  CHECK(maps.encoder[0].shape() == Shape{2, 6, 6});
  CHECK(maps.decoder_self[1].shape() == Shape{2, steps, steps});
  CHECK(maps.decoder_cross[1].shape() == Shape{2, steps, 6});
  const std::vector<real> self = maps.decoder_self[0].to_vector();
  const std::vector<real> cross = maps.decoder_cross[0].to_vector();
  for (int64_t head = 0; head < 2; ++head) {
    for (int64_t t = 0; t < steps; ++t) {
      double self_total = 0, cross_total = 0;
      for (int64_t k = 0; k < steps; ++k) {
        const real w = self[(head * steps + t) * steps + k];
        if (k > t) CHECK(w == 0);  // causal: nothing after the step itself
        self_total += w;
      }
      for (int64_t s = 0; s < 6; ++s) {
        const real w = cross[(head * steps + t) * 6 + s];
        if (s >= 3) CHECK(w == 0);  // the source has 3 valid positions
        cross_total += w;
      }
      CHECK(self_total == Approx(1).margin(1e-5));
      CHECK(cross_total == Approx(1).margin(1e-5));
    }
  }
}

TEST_CASE("Transformer: decode_step of several hypotheses equals each alone, and greedy",
          "[transformer_model]") {
  Generator generator(5);
  Transformer model(small_options(), generator);
  model.eval();
  const std::vector<int64_t> source = text::truncate_pad({4, 5, 6, 3}, 6, kPad);
  const Tensor encoded = model.encoder->forward(source, {1, 6}, {4});
  // Greedy through decode_step: the same ids as predict.
  const translation::Prediction greedy = model.predict({4, 5, 6, 3}, 6);
  std::vector<std::vector<Tensor>> caches(1);
  int64_t token = kBos;
  std::vector<int64_t> ids;
  for (int64_t step = 0; step < 6; ++step) {
    const DecodeStep result = model.decode_step(encoded, 4, {token}, caches, step);
    caches = result.caches;
    token = argmax(result.log_probs, 1).front();
    if (token == translation::kEos) break;
    ids.push_back(token);
  }
  CHECK(ids == greedy.ids);
  // Two hypotheses in one call give what each gives alone.
  std::vector<std::vector<Tensor>> alone_a(1), alone_b(1);
  const DecodeStep a0 = model.decode_step(encoded, 4, {kBos}, alone_a, 0);
  const DecodeStep a1 = model.decode_step(encoded, 4, {7}, a0.caches, 1);
  const DecodeStep b1 = model.decode_step(encoded, 4, {9}, a0.caches, 1);
  const DecodeStep pair = model.decode_step(encoded, 4, {7, 9}, {a0.caches[0], a0.caches[0]}, 1);
  CHECK(max_difference(narrow(pair.log_probs, 0, 0, 1), a1.log_probs) <= kClose);
  CHECK(max_difference(narrow(pair.log_probs, 0, 1, 1), b1.log_probs) <= kClose);
  CHECK(pair.attention.shape() == Shape{2, 6});
  CHECK(pair.caches.at(1).at(1).shape() == Shape{1, 2, 8});
  CHECK_THROWS_WITH(model.decode_step(encoded, 4, {7}, alone_b, 1),
                    Contains("a cache must hold 2 blocks' inputs of 1 positions at step 1"));
}

TEST_CASE("Transformer: bad sizes are errors naming the model and the values",
          "[transformer_model]") {
  CHECK_THROWS_WITH(Transformer(small_options().num_heads(3)),
                    StartsWith("Transformer: num_heads = 3 does not divide num_hiddens = 8"));
  CHECK_THROWS_WITH(Transformer(TransformerOptions(0, 5)),
                    StartsWith("Transformer: vocabulary sizes 0 (source) and 5 (target)"));
  Transformer model(small_options());
  CHECK_THROWS_WITH(model.forward(padded({{4, 3}}, 4), {kBos, 5}, {2, 1}),
                    Contains("decoder inputs of shape (2,1) for 1 source sentences"));
  CHECK_THROWS_WITH(model.predict({4, 3}, 0), Contains("num_steps is 0"));
}

}  // namespace test_transformer
