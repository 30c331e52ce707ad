// tests/models/test_beam_search.cpp — beam search (models/translation/
// beam_search.hpp) on a toy decoder and on every decoder that implements it:
// K = 1 is exactly greedy decoding (the tutorial's location and Bahdanau
// decoders, the batched Bahdanau model, the Transformer); with K ≥ V^T it is
// exhaustive search
// over every sequence of at most T tokens; the K hypotheses are distinct and
// ranked by (1/L^α) Σ log p; bad options and a decoder that breaks the
// interface get clear errors.
//
// The exhaustive reference enumerates every sequence depth first, feeding one
// token at a time to the same single-hypothesis step greedy decoding uses,
// and sums the log-probabilities in the same order as the search, so for the
// toy decoder and the tutorial's decoders (whose StepDecoder runs each
// hypothesis alone) the scores agree exactly. The batched model and the
// Transformer run the N hypotheses as N rows of one batch; their scores are
// compared to 1e-5.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "models/batched_seq2seq/batched_seq2seq.hpp"
#include "models/batched_seq2seq/beam_decoder.hpp"
#include "models/seq2seq/seq2seq.hpp"
#include "models/transformer/beam_decoder.hpp"
#include "models/transformer/transformer.hpp"
#include "models/translation/beam_search.hpp"
#include "tensor/factory.hpp"

namespace test_beam_search {

using namespace attograd;
using namespace attograd::decoding;
using Catch::Matchers::Contains;

namespace {

// One scored sequence, as the exhaustive reference finds it.
struct Sequence {
  std::vector<int64_t> tokens;  // end token not included
  bool reached_end = false;
  double log_probability = 0;
  double score = 0;
};

// step(state, token) -> log p of every next token, and the state after `token`.
template <typename State>
using SingleStep = std::function<std::pair<std::vector<double>, State>(const State&, int64_t)>;

// Every sequence of at most `max_steps` tokens: those ending in `end` at some
// step and those stopped at max_steps, ranked by score as beam search ranks them.
template <typename State>
std::vector<Sequence> exhaustive_search(const State& initial, int64_t start, int64_t end,
                                        int64_t max_steps, double alpha,
                                        const SingleStep<State>& step) {
  std::vector<Sequence> all;
  std::function<void(const State&, int64_t, Sequence)> visit = [&](const State& state, int64_t last,
                                                                   Sequence prefix) {
    const auto [log_probs, next] = step(state, last);
    for (size_t token = 0; token < log_probs.size(); ++token) {
      Sequence extended = prefix;
      extended.log_probability += log_probs[token];
      if (static_cast<int64_t>(token) == end) {
        extended.reached_end = true;
        const auto length = static_cast<int64_t>(extended.tokens.size()) + 1;
        extended.score = length_penalized_score(extended.log_probability, length, alpha);
        all.push_back(extended);
        continue;
      }
      extended.tokens.push_back(static_cast<int64_t>(token));
      if (static_cast<int64_t>(extended.tokens.size()) == max_steps) {
        extended.score = length_penalized_score(extended.log_probability, max_steps, alpha);
        all.push_back(extended);
      } else {
        visit(next, static_cast<int64_t>(token), extended);
      }
    }
  };
  visit(initial, start, Sequence{});
  std::stable_sort(all.begin(), all.end(),
                   [](const Sequence& a, const Sequence& b) { return a.score > b.score; });
  return all;
}

// Beam search's result equals the exhaustive ranking, hypothesis by hypothesis.
void require_same_ranking(const std::vector<Hypothesis>& beam,
                          const std::vector<Sequence>& exhaustive, double alpha, double tolerance) {
  REQUIRE(beam.size() == exhaustive.size());
  for (size_t i = 0; i < beam.size(); ++i) {
    INFO("rank " << i);
    CHECK(beam[i].tokens == exhaustive[i].tokens);
    CHECK(beam[i].reached_end == exhaustive[i].reached_end);
    CHECK(beam[i].length ==
          static_cast<int64_t>(beam[i].tokens.size()) + (beam[i].reached_end ? 1 : 0));
    CHECK(beam[i].score ==
          Approx(length_penalized_score(beam[i].log_probability, beam[i].length, alpha)));
    if (tolerance == 0) {
      CHECK(beam[i].log_probability == exhaustive[i].log_probability);
      CHECK(beam[i].score == exhaustive[i].score);
    } else {
      CHECK(beam[i].log_probability ==
            Approx(exhaustive[i].log_probability).epsilon(tolerance).margin(tolerance));
    }
  }
}

void require_distinct_and_ranked(const std::vector<Hypothesis>& hypotheses, double alpha) {
  std::set<std::vector<int64_t>> seen;
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    CHECK(seen.insert(hypotheses[i].tokens).second);
    if (i > 0) CHECK(hypotheses[i - 1].score >= hypotheses[i].score);
    CHECK(hypotheses[i].score ==
          length_penalized_score(hypotheses[i].log_probability, hypotheses[i].length, alpha));
  }
}

int64_t integer_power(int64_t base, int64_t exponent) {
  int64_t result = 1;
  for (int64_t i = 0; i < exponent; ++i) result *= base;
  return result;
}

// ---------------------------------------------------------------- a toy decoder

// log p(next | prefix) from a hash of the whole prefix: every prefix has a
// distribution of its own, so the search must pass each hypothesis the state
// of its own parent. The state is the prefix, start token included.
class ToyDecoder : public StepDecoder {
 public:
  explicit ToyDecoder(int64_t vocabulary) : vocabulary_(vocabulary) {}

  static std::vector<double> log_probs_after(const std::vector<int64_t>& prefix,
                                             int64_t vocabulary) {
    uint64_t hash = 1469598103934665603ULL;
    for (int64_t token : prefix)
      hash = (hash ^ static_cast<uint64_t>(token + 1)) * 1099511628211ULL;
    std::vector<double> logits(static_cast<size_t>(vocabulary));
    double top = -1e300;
    for (auto& logit : logits) {
      hash = hash * 6364136223846793005ULL + 1442695040888963407ULL;
      logit = 3.0 * static_cast<double>(hash >> 11) / static_cast<double>(1ULL << 53);
      top = std::max(top, logit);
    }
    double partition = 0;
    for (double logit : logits) partition += std::exp(logit - top);
    for (auto& logit : logits) {
      logit = static_cast<double>(static_cast<real>(logit - top - std::log(partition)));
    }
    return logits;
  }

  StepOutput step(const std::vector<int64_t>& tokens, const std::vector<HypothesisState>& states,
                  int64_t) override {
    saw_grad_enabled_ = saw_grad_enabled_ || grad_enabled();
    max_batch_ = std::max(max_batch_, tokens.size());
    StepOutput output;
    std::vector<real> log_probs;
    for (size_t n = 0; n < tokens.size(); ++n) {
      std::vector<int64_t> prefix;
      for (real value : states[n][0].to_vector()) prefix.push_back(static_cast<int64_t>(value));
      prefix.push_back(tokens[n]);
      for (double value : log_probs_after(prefix, vocabulary_)) {
        log_probs.push_back(static_cast<real>(value));
      }
      output.states.push_back({as_tensor(prefix)});
    }
    output.log_probs = from_vector(log_probs, {static_cast<int64_t>(tokens.size()), vocabulary_});
    return output;
  }
  int64_t start_token() const override { return 0; }
  int64_t end_token() const override { return 1; }

  static Tensor as_tensor(const std::vector<int64_t>& prefix) {
    std::vector<real> values(prefix.begin(), prefix.end());
    return from_vector(values.empty() ? std::vector<real>{-1} : values);
  }

  bool saw_grad_enabled() const { return saw_grad_enabled_; }
  size_t max_batch() const { return max_batch_; }

 private:
  int64_t vocabulary_;
  bool saw_grad_enabled_ = false;
  size_t max_batch_ = 0;
};

// The toy decoder's exhaustive ranking, one prefix at a time.
std::vector<Sequence> toy_exhaustive(int64_t vocabulary, int64_t max_steps, double alpha) {
  const SingleStep<std::vector<int64_t>> step = [vocabulary](const std::vector<int64_t>& prefix,
                                                             int64_t token) {
    std::vector<int64_t> next = prefix;
    next.push_back(token);
    return std::make_pair(ToyDecoder::log_probs_after(next, vocabulary), next);
  };
  return exhaustive_search<std::vector<int64_t>>({-1}, 0, 1, max_steps, alpha, step);
}

// ---------------------------------------------------------------- the tutorial's model

seq2seq::Seq2SeqOptions tiny_tutorial(seq2seq::DecoderKind decoder, int64_t target_vocabulary) {
  return seq2seq::Seq2SeqOptions(7, target_vocabulary)
      .hidden_size(4)
      .max_length(5)
      .dropout(0.1)
      .decoder(decoder);
}

// Larger weights than the initialisation's, so that the distributions are far
// from uniform and greedy decoding stops at different lengths.
void sharpen(nn::Module& model, double factor) {
  for (auto& [name, parameter] : model.named_parameters()) {
    real* values = parameter.data();
    for (int64_t i = 0; i < parameter.numel(); ++i) values[i] *= static_cast<real>(factor);
  }
}

std::vector<Sequence> tutorial_exhaustive(seq2seq::Seq2Seq& model,
                                          const std::vector<int64_t>& source, int64_t max_steps,
                                          double alpha) {
  const nn::EvalModeGuard eval_mode(model);
  const NoGradGuard no_grad;
  const encoder_decoder::EncoderOutput encoded = model.encoder->forward(source);
  const encoder_decoder::AttentionMemory memory = model.decoder->remember(encoded);
  const SingleStep<Tensor> step = [&](const Tensor& hidden, int64_t token) {
    const seq2seq::DecoderStep result = model.decoder->forward(token, hidden, memory);
    std::vector<double> log_probs;
    for (real value : result.log_probs.to_vector()) log_probs.push_back(value);
    return std::make_pair(log_probs, result.hidden);
  };
  return exhaustive_search<Tensor>(encoded.hidden, seq2seq::kSos, seq2seq::kEos, max_steps, alpha,
                                   step);
}

// ---------------------------------------------------------------- the batched model

batched_seq2seq::BatchedSeq2SeqOptions tiny_batched(int64_t target_vocabulary) {
  return batched_seq2seq::BatchedSeq2SeqOptions(12, target_vocabulary)
      .embed_size(4)
      .hidden_size(6)
      .num_layers(2)
      .dropout(0.2);
}

// One hypothesis alone through a decoder of the batched loop (the batched
// model's, the Transformer's): forward({token}, {1,1}, state) on a copy of
// the state, then log_softmax of the logits.
template <typename State, typename Decoder>
SingleStep<State> one_row_step(Decoder& decoder) {
  return [&decoder](const State& state, int64_t token) {
    State next = state;
    const Tensor logits = decoder.forward({token}, {1, 1}, next);
    std::vector<double> log_probs;
    for (real value : log_softmax(reshape(logits, {1, -1}), 1).to_vector()) {
      log_probs.push_back(value);
    }
    return std::make_pair(log_probs, next);
  };
}

std::vector<Sequence> batched_exhaustive(batched_seq2seq::BatchedSeq2Seq& model,
                                         const std::vector<int64_t>& source, int64_t num_steps,
                                         double alpha) {
  using namespace batched_seq2seq;
  const nn::EvalModeGuard eval_mode(model);
  const NoGradGuard no_grad;
  const DecoderState first = model.decoder->init_state(model.encode_sentence(source, num_steps));
  return exhaustive_search<DecoderState>(first, kBos, kEos, num_steps, alpha,
                                         one_row_step<DecoderState>(*model.decoder));
}

// ---------------------------------------------------------------- the Transformer

transformer::TransformerOptions tiny_transformer(int64_t target_vocabulary) {
  return transformer::TransformerOptions(12, target_vocabulary)
      .num_hiddens(8)
      .num_blocks(2)
      .num_heads(2)
      .ffn_num_hiddens(16)
      .dropout(0.2);
}

// The state of one hypothesis is its decoder state: each block's inputs so far.
std::vector<Sequence> transformer_exhaustive(transformer::Transformer& model,
                                             const std::vector<int64_t>& source, int64_t num_steps,
                                             double alpha) {
  using transformer::TransformerDecoderState;
  const nn::EvalModeGuard eval_mode(model);
  const NoGradGuard no_grad;
  const transformer::Transformer::EncodedSentence encoded =
      model.encode_sentence(source, num_steps);
  const TransformerDecoderState first =
      model.decoder->init_state(encoded.outputs, {encoded.length});
  return exhaustive_search<TransformerDecoderState>(
      first, batched_seq2seq::kBos, batched_seq2seq::kEos, num_steps, alpha,
      one_row_step<TransformerDecoderState>(*model.decoder));
}

// For a model of the batched loop: beam search with K = 1 gives exactly
// predict's ids, steps, attention rows and log-probability, on four sources.
void require_beam_one_is_greedy(translation::BatchedTranslator& model) {
  using namespace translation;
  const std::vector<std::vector<int64_t>> sources = {
      {3, kEos}, {4, 5, 6, kEos}, {6, 7, 8, 9, 10, 11, kEos}, {kEos}};
  for (const std::vector<int64_t>& source : sources) {
    const Prediction greedy = model.predict(source, 6);
    const std::vector<Hypothesis> beam =
        model.beam_predict(source, 6, BeamSearchOptions().beam_size(1));
    REQUIRE(beam.size() == 1);
    const Hypothesis& best = beam[0];
    CHECK(best.tokens == greedy.ids);
    CHECK(best.reached_end == greedy.reached_eos);
    CHECK(best.length == greedy.steps);
    CHECK(best.attention_width == greedy.source_positions);
    CHECK(best.attention == greedy.attention);
    CHECK(best.log_probability == greedy.log_probability);
    CHECK(greedy.log_probability < 0);
  }
}

// For a model of the batched loop in training mode: a beam of 4 gives 4
// distinct ranked hypotheses with one attention row per step, and leaves the
// model in training mode; a negative α is refused.
void require_distinct_in_eval_mode(translation::BatchedTranslator& model) {
  using translation::kEos;
  model.train();
  const std::vector<Hypothesis> best =
      model.beam_predict({4, 5, kEos}, 6, BeamSearchOptions().beam_size(4));
  CHECK(model.is_training());
  REQUIRE(best.size() == 4);
  require_distinct_and_ranked(best, 0.75);
  for (const Hypothesis& hypothesis : best) {
    CHECK(hypothesis.attention_width == 6);
    CHECK(static_cast<int64_t>(hypothesis.attention.size()) == hypothesis.length * 6);
  }
  CHECK_THROWS_WITH(model.beam_predict({4, kEos}, 6, BeamSearchOptions().length_penalty(-1)),
                    Contains("length penalty alpha = -1"));
}

}  // namespace

// ---------------------------------------------------------------- the search itself

TEST_CASE("beam search with K >= V^T equals exhaustive search (toy decoder)", "[beam_search]") {
  const int64_t V = 3, T = 4;
  for (double alpha : {0.0, 0.75, 2.0}) {
    INFO("alpha " << alpha);
    ToyDecoder decoder(V);
    const std::vector<Hypothesis> beam =
        beam_search(decoder, {ToyDecoder::as_tensor({})}, T,
                    BeamSearchOptions().beam_size(integer_power(V, T)).length_penalty(alpha));
    const std::vector<Sequence> exhaustive = toy_exhaustive(V, T, alpha);
    // Σ_{t<T} (V−1)^t sequences end in the end token, (V−1)^T stop at T tokens.
    int64_t expected = integer_power(V - 1, T);
    for (int64_t t = 0; t < T; ++t) expected += integer_power(V - 1, t);
    CHECK(static_cast<int64_t>(exhaustive.size()) == expected);
    require_same_ranking(beam, exhaustive, alpha, 0);
    CHECK_FALSE(decoder.saw_grad_enabled());
    CHECK(decoder.max_batch() <= static_cast<size_t>(integer_power(V, T)));
  }
}

TEST_CASE("beam search keeps at most K hypotheses a step and returns K distinct ones",
          "[beam_search]") {
  for (int64_t K : {1, 2, 3, 5, 8}) {
    INFO("K = " << K);
    ToyDecoder decoder(6);
    const std::vector<Hypothesis> best =
        beam_search(decoder, {ToyDecoder::as_tensor({})}, 6, BeamSearchOptions().beam_size(K));
    CHECK(static_cast<int64_t>(best.size()) == K);
    CHECK(decoder.max_batch() <= static_cast<size_t>(K));
    require_distinct_and_ranked(best, 0.75);
  }
}

TEST_CASE("beam search with K = 1 follows the argmax token, ties to the lower id",
          "[beam_search]") {
  // Every step offers tokens 2 and 3 at the same highest log-probability.
  class TiedDecoder : public StepDecoder {
   public:
    StepOutput step(const std::vector<int64_t>& tokens, const std::vector<HypothesisState>& states,
                    int64_t) override {
      const auto N = static_cast<int64_t>(tokens.size());
      std::vector<real> rows;
      for (int64_t n = 0; n < N; ++n) rows.insert(rows.end(), {-3, -4, -0.5, -0.5});
      return {from_vector(rows, {N, 4}), states, Tensor()};
    }
    int64_t start_token() const override { return 0; }
    int64_t end_token() const override { return 1; }
  };
  TiedDecoder decoder;
  const std::vector<Hypothesis> best = beam_search(decoder, {}, 3, BeamSearchOptions());
  REQUIRE(best.size() == 1);
  CHECK(best[0].tokens == std::vector<int64_t>{2, 2, 2});
  CHECK_FALSE(best[0].reached_end);
  CHECK(best[0].length == 3);
  CHECK(best[0].log_probability == -1.5);
  CHECK(best[0].score == Approx(-1.5 / std::pow(3.0, 0.75)));
}

TEST_CASE("the length penalty divides by L^alpha, L counting the end token", "[beam_search]") {
  CHECK(length_penalized_score(-6.0, 4, 0.0) == -6.0);
  CHECK(length_penalized_score(-6.0, 4, 0.5) == -3.0);
  CHECK(length_penalized_score(-6.0, 1, 0.75) == -6.0);
  CHECK(length_penalized_score(-8.0, 16, 0.75) == Approx(-1.0));
  CHECK_THROWS_WITH(length_penalized_score(-1.0, 0, 0.75), Contains("length L = 0"));
  // A one-token output with its end token: L = 2.
  class Fixed : public StepDecoder {
   public:
    StepOutput step(const std::vector<int64_t>& tokens, const std::vector<HypothesisState>& states,
                    int64_t step) override {
      const auto N = static_cast<int64_t>(tokens.size());
      std::vector<real> rows;
      for (int64_t n = 0; n < N; ++n) {
        if (step == 0)
          rows.insert(rows.end(), {-9, -2, -0.25});  // token 2 first
        else
          rows.insert(rows.end(), {-9, -0.5, -3});  // then the end token
      }
      return {from_vector(rows, {N, 3}), states, Tensor()};
    }
    int64_t start_token() const override { return 0; }
    int64_t end_token() const override { return 1; }
  };
  Fixed decoder;
  const std::vector<Hypothesis> best =
      beam_search(decoder, {}, 5, BeamSearchOptions().length_penalty(1));
  REQUIRE(best.size() == 1);
  CHECK(best[0].tokens == std::vector<int64_t>{2});
  CHECK(best[0].reached_end);
  CHECK(best[0].length == 2);
  CHECK(best[0].log_probability == -0.75);
  CHECK(best[0].score == -0.375);
}

TEST_CASE("beam search: bad options and a decoder that breaks the interface are refused",
          "[beam_search]") {
  ToyDecoder decoder(4);
  const HypothesisState start = {ToyDecoder::as_tensor({})};
  CHECK_THROWS_WITH(beam_search(decoder, start, 5, BeamSearchOptions().beam_size(0)),
                    Contains("beam size K = 0 must be at least 1"));
  CHECK_THROWS_WITH(beam_search(decoder, start, 5, BeamSearchOptions().beam_size(-3)),
                    Contains("beam size K = -3"));
  CHECK_THROWS_WITH(beam_search(decoder, start, 5, BeamSearchOptions().length_penalty(-0.5)),
                    Contains("length penalty alpha = -0.5 must be a finite number >= 0"));
  CHECK_THROWS_WITH(
      beam_search(decoder, start, 5,
                  BeamSearchOptions().length_penalty(std::numeric_limits<double>::quiet_NaN())),
      Contains("length penalty alpha = nan"));
  CHECK_THROWS_WITH(beam_search(decoder, start, 0, BeamSearchOptions()),
                    Contains("max_steps = 0 must be at least 1"));

  class Broken : public StepDecoder {
   public:
    explicit Broken(int mode) : mode_(mode) {}
    StepOutput step(const std::vector<int64_t>& tokens, const std::vector<HypothesisState>& states,
                    int64_t) override {
      const auto N = static_cast<int64_t>(tokens.size());
      if (mode_ == 0) return {zeros({N + 1, 4}), states, Tensor()};
      if (mode_ == 1) return {zeros({N, 4}), {}, Tensor()};
      return {zeros({N, 4}), states, zeros({N + 2, 3})};
    }
    int64_t start_token() const override { return 0; }
    int64_t end_token() const override { return 1; }

   private:
    int mode_;
  };
  Broken wrong_rows(0), no_states(1), wrong_attention(2);
  CHECK_THROWS_WITH(beam_search(wrong_rows, {}, 3, BeamSearchOptions()),
                    Contains("step 0 of 1 hypotheses returned log_probs of shape (2,4)"));
  CHECK_THROWS_WITH(beam_search(no_states, {}, 3, BeamSearchOptions()),
                    Contains("returned 0 states"));
  CHECK_THROWS_WITH(beam_search(wrong_attention, {}, 3, BeamSearchOptions()),
                    Contains("attention of shape (3,3)"));
}

// ---------------------------------------------------------------- the tutorial's decoders

TEST_CASE("beam search with K = 1 is the tutorial's greedy decoding, both decoders",
          "[beam_search][seq2seq]") {
  const std::vector<std::vector<int64_t>> sources = {
      {3, seq2seq::kEos}, {4, 5, 6, seq2seq::kEos}, {6, 6, 2, 3, seq2seq::kEos}, {seq2seq::kEos}};
  for (seq2seq::DecoderKind kind :
       {seq2seq::DecoderKind::location, seq2seq::DecoderKind::bahdanau}) {
    for (uint64_t seed : {1, 2, 3}) {
      INFO(seq2seq::to_string(kind) << ", seed " << seed);
      Generator generator(seed);
      seq2seq::Seq2Seq model(tiny_tutorial(kind, 6), generator);
      sharpen(model, 3);
      for (const std::vector<int64_t>& source : sources) {
        const seq2seq::Translation greedy = model.translate(source);
        const std::vector<Hypothesis> beam =
            seq2seq::beam_translate(model, source, BeamSearchOptions().beam_size(1));
        REQUIRE(beam.size() == 1);
        const Hypothesis& best = beam[0];
        CHECK(best.tokens == greedy.words);
        CHECK(best.reached_end == greedy.reached_eos);
        CHECK(best.length == greedy.steps);
        CHECK(best.attention == greedy.attention);
        CHECK(best.log_probability == greedy.log_probability);
        CHECK(beam[0].attention_width == 5);
      }
    }
  }
}

TEST_CASE("beam search with K >= V^T is exhaustive search, the tutorial's decoders",
          "[beam_search][seq2seq]") {
  // V_out = 4 (SOS, EOS, <unk> and one word), T = 4: 256 sequences bound K.
  const int64_t V = 4, T = 4;
  for (seq2seq::DecoderKind kind :
       {seq2seq::DecoderKind::location, seq2seq::DecoderKind::bahdanau}) {
    INFO(seq2seq::to_string(kind));
    Generator generator(7);
    seq2seq::Seq2Seq model(tiny_tutorial(kind, V), generator);
    sharpen(model, 2);
    const std::vector<int64_t> source = {3, 5, seq2seq::kEos};
    for (double alpha : {0.0, 0.75}) {
      const std::vector<Hypothesis> beam = seq2seq::beam_translate(
          model, source, BeamSearchOptions().beam_size(integer_power(V, T)).length_penalty(alpha),
          T);
      require_same_ranking(beam, tutorial_exhaustive(model, source, T, alpha), alpha, 0);
    }
  }
}

TEST_CASE("beam search on the tutorial's model: K distinct hypotheses, eval mode, no graph",
          "[beam_search][seq2seq]") {
  for (seq2seq::DecoderKind kind :
       {seq2seq::DecoderKind::location, seq2seq::DecoderKind::bahdanau}) {
    INFO(seq2seq::to_string(kind));
    Generator generator(5);
    seq2seq::Seq2Seq model(tiny_tutorial(kind, 6), generator);
    sharpen(model, 3);
    model.train();
    const std::vector<int64_t> source = {4, 5, seq2seq::kEos};
    const BeamSearchOptions options = BeamSearchOptions().beam_size(5);
    const std::vector<Hypothesis> first = seq2seq::beam_translate(model, source, options);
    CHECK(model.is_training());  // restored afterwards
    REQUIRE(first.size() == 5);
    require_distinct_and_ranked(first, 0.75);
    for (const Hypothesis& hypothesis : first) {
      CHECK(static_cast<int64_t>(hypothesis.attention.size()) == hypothesis.length * 5);
    }
    // Dropout is off: a second search gives the same hypotheses.
    const std::vector<Hypothesis> second = seq2seq::beam_translate(model, source, options);
    REQUIRE(second.size() == first.size());
    for (size_t i = 0; i < first.size(); ++i) {
      CHECK(second[i].tokens == first[i].tokens);
      CHECK(second[i].score == first[i].score);
    }
    CHECK_THROWS_WITH(seq2seq::beam_translate(model, source, BeamSearchOptions().beam_size(0)),
                      Contains("beam size K = 0"));
  }
}

// ---------------------------------------------------------------- the batched model

TEST_CASE("beam search with K = 1 is the batched model's greedy prediction",
          "[beam_search][batched_seq2seq]") {
  for (uint64_t seed : {1, 2, 3}) {
    INFO("seed " << seed);
    Generator generator(seed);
    batched_seq2seq::BatchedSeq2Seq model(tiny_batched(9), generator);
    sharpen(model, 3);
    require_beam_one_is_greedy(model);
  }
}

TEST_CASE("beam search with K >= V^T is exhaustive search, the batched model",
          "[beam_search][batched_seq2seq]") {
  using namespace batched_seq2seq;
  // V_tgt = 5 (<pad>, <bos>, <eos>, <unk> and one word), T = 3: 125 sequences bound K.
  const int64_t V = 5, T = 3;
  Generator generator(11);
  BatchedSeq2Seq model(tiny_batched(V), generator);
  sharpen(model, 2);
  const std::vector<int64_t> source = {4, 7, kEos};
  for (double alpha : {0.0, 0.75}) {
    const std::vector<Hypothesis> beam = beam_predict(
        model, source, T, BeamSearchOptions().beam_size(integer_power(V, T)).length_penalty(alpha));
    require_same_ranking(beam, batched_exhaustive(model, source, T, alpha), alpha, 1e-5);
  }
}

TEST_CASE("beam search on the batched model: K distinct hypotheses, eval mode",
          "[beam_search][batched_seq2seq]") {
  Generator generator(4);
  batched_seq2seq::BatchedSeq2Seq model(tiny_batched(9), generator);
  sharpen(model, 3);
  require_distinct_in_eval_mode(model);
}

// ---------------------------------------------------------------- the Transformer

TEST_CASE("beam search with K = 1 is the Transformer's greedy prediction",
          "[beam_search][transformer_model]") {
  for (uint64_t seed : {1, 2, 3}) {
    INFO("seed " << seed);
    Generator generator(seed);
    transformer::Transformer model(tiny_transformer(9), generator);
    sharpen(model, 3);
    require_beam_one_is_greedy(model);
  }
}

TEST_CASE("beam search with K >= V^T is exhaustive search, the Transformer",
          "[beam_search][transformer_model]") {
  // V_tgt = 5 (<pad>, <bos>, <eos>, <unk> and one word), T = 3: 125 sequences bound K.
  const int64_t V = 5, T = 3;
  Generator generator(11);
  transformer::Transformer model(tiny_transformer(V), generator);
  sharpen(model, 2);
  const std::vector<int64_t> source = {4, 7, batched_seq2seq::kEos};
  for (double alpha : {0.0, 0.75}) {
    const std::vector<Hypothesis> beam = transformer::beam_predict(
        model, source, T, BeamSearchOptions().beam_size(integer_power(V, T)).length_penalty(alpha));
    require_same_ranking(beam, transformer_exhaustive(model, source, T, alpha), alpha, 1e-5);
  }
}

TEST_CASE("beam search on the Transformer: K distinct hypotheses, eval mode",
          "[beam_search][transformer_model]") {
  Generator generator(4);
  transformer::Transformer model(tiny_transformer(9), generator);
  sharpen(model, 3);
  require_distinct_in_eval_mode(model);
  CHECK_THROWS_WITH(
      model.beam_predict({4, batched_seq2seq::kEos}, 6, BeamSearchOptions().beam_size(0)),
      Contains("beam size K = 0"));
}

}  // namespace test_beam_search
