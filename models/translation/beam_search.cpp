// models/translation/beam_search.cpp — the search (the algorithm and its
// properties are in the header).
//
// Legend: K beam size, N live hypotheses, V target vocabulary size, T max_steps.
#include "models/translation/beam_search.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "autograd/engine.hpp"
#include "tensor/error.hpp"

namespace attograd::decoding {

namespace {

// A hypothesis still being extended.
struct LiveHypothesis {
  std::vector<int64_t> tokens;  // output tokens so far
  double log_probability = 0;
  HypothesisState state;
  std::vector<double> attention;
};

// An extension of live hypothesis `parent` by `token`.
struct Candidate {
  size_t parent = 0;
  int64_t token = 0;
  double log_probability = 0;  // the parent's plus log p(token)
};

// The K extensions of each parent with the largest log p, then the K best of
// all of them: the K best extensions overall, since a parent's (K+1)-th best
// can never outrank its K better siblings. Within a parent the float log p
// decide, ties going to the lower token id (argmax's rule), so K = 1 picks
// exactly the token greedy decoding picks; across parents the sums decide,
// ties going to the higher-ranked parent.
std::vector<Candidate> best_extensions(const std::vector<LiveHypothesis>& live,
                                       const std::vector<real>& log_probs, int64_t V, int64_t K) {
  const auto keep = static_cast<size_t>(std::min(K, V));
  std::vector<Candidate> candidates;
  std::vector<int64_t> order(static_cast<size_t>(V));
  for (size_t parent = 0; parent < live.size(); ++parent) {
    const real* row = log_probs.data() + parent * static_cast<size_t>(V);
    std::iota(order.begin(), order.end(), int64_t{0});
    std::partial_sort(
        order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
        [row](int64_t a, int64_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    for (size_t i = 0; i < keep; ++i) {
      const int64_t token = order[i];
      candidates.push_back(
          {parent, token, live[parent].log_probability + static_cast<double>(row[token])});
    }
  }
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [](const Candidate& a, const Candidate& b) { return a.log_probability > b.log_probability; });
  if (candidates.size() > static_cast<size_t>(K)) candidates.resize(static_cast<size_t>(K));
  return candidates;
}

Hypothesis finish(LiveHypothesis hypothesis, bool reached_end, int64_t attention_width,
                  double alpha) {
  Hypothesis finished;
  finished.length = static_cast<int64_t>(hypothesis.tokens.size()) + (reached_end ? 1 : 0);
  finished.tokens = std::move(hypothesis.tokens);
  finished.reached_end = reached_end;
  finished.log_probability = hypothesis.log_probability;
  finished.score = length_penalized_score(finished.log_probability, finished.length, alpha);
  finished.attention = std::move(hypothesis.attention);
  finished.attention_width = finished.attention.empty() ? 0 : attention_width;
  return finished;
}

// Throws unless the decoder answered N hypotheses as StepOutput promises.
void check_step(const StepOutput& output, size_t N, int64_t step) {
  check(output.log_probs.defined() && output.log_probs.dim() == 2 &&
            output.log_probs.shape()[0] == static_cast<int64_t>(N) &&
            output.log_probs.shape()[1] >= 1,
        "beam_search: step {} of {} hypotheses returned log_probs of shape {}; a StepDecoder "
        "must return (N,V) = ({},V)",
        step, N, output.log_probs.defined() ? output.log_probs.shape() : Shape{}, N);
  check(output.states.size() == N,
        "beam_search: step {} of {} hypotheses returned {} states; a StepDecoder returns one "
        "state per hypothesis",
        step, N, output.states.size());
  check(!output.attention.defined() ||
            (output.attention.dim() == 2 && output.attention.shape()[0] == static_cast<int64_t>(N)),
        "beam_search: step {} of {} hypotheses returned attention of shape {}; expected (N,S) = "
        "({},S) or none",
        step, N, output.attention.defined() ? output.attention.shape() : Shape{}, N);
}

}  // namespace

void check_options(const BeamSearchOptions& options) {
  check(options.beam_size() >= 1,
        "beam_search: beam size K = {} must be at least 1 (1 is greedy decoding)",
        options.beam_size());
  check(std::isfinite(options.length_penalty()) && options.length_penalty() >= 0,
        "beam_search: length penalty alpha = {} must be a finite number >= 0 (d2l uses 0.75)",
        options.length_penalty());
}

double length_penalized_score(double log_probability, int64_t length, double alpha) {
  check(length >= 1, "length_penalized_score: length L = {} must be at least 1", length);
  return log_probability / std::pow(static_cast<double>(length), alpha);
}

std::vector<Hypothesis> beam_search(StepDecoder& decoder, const HypothesisState& initial,
                                    int64_t max_steps, const BeamSearchOptions& options) {
  check_options(options);
  check(max_steps >= 1, "beam_search: max_steps = {} must be at least 1", max_steps);
  const NoGradGuard no_grad;
  const int64_t K = options.beam_size();
  const double alpha = options.length_penalty();
  const int64_t end = decoder.end_token();
  std::vector<LiveHypothesis> live(1);
  live[0].state = initial;
  std::vector<Hypothesis> finished;
  int64_t attention_width = 0;
  for (int64_t step = 0; step < max_steps && !live.empty(); ++step) {
    std::vector<int64_t> tokens;
    std::vector<HypothesisState> states;
    for (const LiveHypothesis& hypothesis : live) {
      tokens.push_back(hypothesis.tokens.empty() ? decoder.start_token()
                                                 : hypothesis.tokens.back());
      states.push_back(hypothesis.state);
    }
    StepOutput output = decoder.step(tokens, states, step);
    check_step(output, live.size(), step);
    const int64_t V = output.log_probs.shape()[1];
    std::vector<real> attention;
    if (output.attention.defined()) {
      attention_width = output.attention.shape()[1];
      attention = output.attention.to_vector();
    }
    std::vector<LiveHypothesis> next;
    for (const Candidate& candidate : best_extensions(live, output.log_probs.to_vector(), V, K)) {
      LiveHypothesis extended{live[candidate.parent].tokens, candidate.log_probability,
                              output.states[candidate.parent], live[candidate.parent].attention};
      if (!attention.empty()) {
        const auto row =
            attention.begin() + static_cast<std::ptrdiff_t>(candidate.parent) * attention_width;
        extended.attention.insert(extended.attention.end(), row, row + attention_width);
      }
      if (candidate.token == end) {
        finished.push_back(finish(std::move(extended), true, attention_width, alpha));
      } else {
        extended.tokens.push_back(candidate.token);
        next.push_back(std::move(extended));
      }
    }
    live = std::move(next);
  }
  for (LiveHypothesis& hypothesis : live) {
    finished.push_back(finish(std::move(hypothesis), false, attention_width, alpha));
  }
  std::stable_sort(finished.begin(), finished.end(),
                   [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
  if (finished.size() > static_cast<size_t>(K)) finished.resize(static_cast<size_t>(K));
  return finished;
}

std::vector<ScoredWords> in_words(const std::vector<Hypothesis>& hypotheses,
                                  const text::Vocabulary& vocabulary) {
  std::vector<ScoredWords> scored;
  scored.reserve(hypotheses.size());
  for (const Hypothesis& hypothesis : hypotheses) {
    scored.push_back(
        {vocabulary.decode(hypothesis.tokens), hypothesis.score, hypothesis.log_probability});
  }
  return scored;
}

}  // namespace attograd::decoding
