// models/translation/beam_search.hpp — beam search for any decoder that can
// be driven one token at a time (d2l.ai, "Beam Search").
//
// Legend: K beam size, N hypotheses fed to one step (N ≤ K), V target
// vocabulary size, T the most output tokens (max_steps), S the source
// positions a step's attention covers.
//
// The search knows nothing of GRUs, attention or Transformers. A decoder
// takes part by implementing StepDecoder: given the last token of each of N
// hypotheses and the state each carries, one step returns log p(next token)
// for every hypothesis, (N,V), and each hypothesis's new state. The state is
// opaque to the search: a list of tensors the decoder alone reads (a GRU's
// hidden state; a Transformer's per-block key/value cache). The search only
// copies it from a hypothesis to the hypotheses that extend it.
//
//   MyStepDecoder decoder(model, encoded);           // implements StepDecoder
//   std::vector<Hypothesis> best = beam_search(decoder, {first_state}, max_steps,
//                                              BeamSearchOptions().beam_size(5));
//   best[0].tokens;  // the highest-scoring output, the end token not included
//
// The algorithm. Hypotheses start as one: the start token, log-probability 0.
// At each step t = 0 … T−1 every live hypothesis is extended by every token;
// the K extensions with the largest Σ log p are kept and all others dropped.
// A kept extension whose new token is the end token is finished; the rest
// stay live. After step T−1 the hypotheses still live are finished too
// (stopped at the maximum length). The finished hypotheses, at most K per
// step, are ranked by the length-penalised score
//
//   score = (1 / L^α) · Σ_{i=1..L} log p(y_i | y_<i, source)
//
// where L counts the tokens whose log-probabilities are summed: the output
// tokens plus the end token when the hypothesis produced it (a hypothesis
// stopped at the maximum length has L = T and no end token). α = 0.75 is
// d2l's value; α = 0 ranks by the plain log-probability, and a larger α
// favours longer outputs. The K best finished hypotheses are returned, best
// first.
//
// Properties (tested in tests/models/test_beam_search.cpp):
//   - K = 1 is greedy decoding: the kept extension is the argmax token, and
//     ties go to the lower token id, as argmax's do.
//   - With K ≥ V^T nothing is ever dropped, so the result is exhaustive
//     search over every sequence of at most T tokens.
//   - Every hypothesis extends a distinct parent or its parent by a distinct
//     token, so the returned hypotheses are distinct sequences.
//
// Beam search records no graph: it runs the steps under a NoGradGuard. A
// model's own beam-search entry point also puts the model in evaluation mode
// (nn::EvalModeGuard), as its greedy decoding does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/text/vocabulary.hpp"
#include "tensor/tensor.hpp"

namespace attograd::decoding {

// What a hypothesis carries from one step to the next; only its decoder reads it.
using HypothesisState = std::vector<Tensor>;

// One step of N hypotheses.
struct StepOutput {
  Tensor log_probs;                     // (N,V): log p(next token) of each hypothesis
  std::vector<HypothesisState> states;  // N: each hypothesis's state after its last token
  // (N,S): the step's attention weights over the source, or undefined for a
  // decoder that has none to show; kept per hypothesis for heatmaps.
  Tensor attention;
};

// The interface a decoder implements to be searched.
class StepDecoder {
 public:
  virtual ~StepDecoder() = default;
  // tokens: N ids (the start token at step 0), states: N, step: t (each of
  // the N hypotheses has t output tokens before `tokens`) -> StepOutput of N.
  virtual StepOutput step(const std::vector<int64_t>& tokens,
                          const std::vector<HypothesisState>& states, int64_t step) = 0;
  virtual int64_t start_token() const = 0;  // fed at step 0 (SOS, <bos>)
  virtual int64_t end_token() const = 0;    // finishes a hypothesis (EOS, <eos>)
};

struct BeamSearchOptions {
  // K, the hypotheses kept per step (1: greedy decoding).
  BeamSearchOptions& beam_size(int64_t value) {
    beam_size_ = value;
    return *this;
  }
  // α of the length penalty 1/L^α (d2l: 0.75); finite and ≥ 0.
  BeamSearchOptions& length_penalty(double value) {
    length_penalty_ = value;
    return *this;
  }

  int64_t beam_size() const { return beam_size_; }
  double length_penalty() const { return length_penalty_; }

 private:
  int64_t beam_size_ = 1;
  double length_penalty_ = 0.75;
};

// Throws attograd::Error naming the value and the accepted range unless
// K ≥ 1 and α is finite and ≥ 0.
void check_options(const BeamSearchOptions& options);

// A finished hypothesis.
struct Hypothesis {
  std::vector<int64_t> tokens;  // the output, the end token not included
  bool reached_end = false;     // false: stopped after max_steps tokens
  double log_probability = 0;   // Σ log p over the L scored tokens
  int64_t length = 0;           // L = tokens.size() + (reached_end ? 1 : 0)
  double score = 0;             // log_probability / L^α
  // One row of attention per step, the end token's step included,
  // row-major (length × attention_width); empty if the decoder gave none.
  std::vector<double> attention;
  int64_t attention_width = 0;  // S
};

// (1/L^α) · log_probability, the ranking of finished hypotheses. L ≥ 1.
double length_penalized_score(double log_probability, int64_t length, double alpha);

// Beam search from `initial` (the state before the start token) for at most
// `max_steps` output tokens (≥ 1) -> the min(K, finished) best finished
// hypotheses, highest score first (ties: the one finished first, then the
// one from the higher-ranked parent). Throws on bad options and when the
// decoder returns log_probs or states of the wrong shape or count.
std::vector<Hypothesis> beam_search(StepDecoder& decoder, const HypothesisState& initial,
                                    int64_t max_steps, const BeamSearchOptions& options);

// One of the K best outputs in words, as `--nbest` prints them.
struct ScoredWords {
  std::vector<std::string> words;  // the end token not included
  double score = 0;                // log_probability / L^α
  double log_probability = 0;
};

// Each hypothesis's tokens as `vocabulary`'s words, with its scores, in order.
std::vector<ScoredWords> in_words(const std::vector<Hypothesis>& hypotheses,
                                  const text::Vocabulary& vocabulary);

}  // namespace attograd::decoding
