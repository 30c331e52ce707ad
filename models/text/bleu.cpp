// models/text/bleu.cpp — n-gram counting, clipping and the two BLEU scores.
#include "models/text/bleu.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "models/text/normalize.hpp"
#include "tensor/error.hpp"

namespace attograd::text {
namespace {

// An n-gram is its n words; std::map keeps the counting simple and ordered.
using NgramCounts = std::map<Words, std::int64_t>;

NgramCounts count_ngrams(const Words& words, std::size_t n) {
  NgramCounts counts;
  for (std::size_t start = 0; start + n <= words.size(); ++start) {
    ++counts[Words(words.begin() + static_cast<std::ptrdiff_t>(start),
                   words.begin() + static_cast<std::ptrdiff_t>(start + n))];
  }
  return counts;
}

// The number of n-grams of a sentence of `length` words: length - n + 1, or
// 0 when it is shorter than n.
std::int64_t num_ngrams(std::size_t length, std::size_t n) {
  return length >= n ? static_cast<std::int64_t>(length - n + 1) : 0;
}

// Σ_g min(count_hyp(g), max over references of count_ref(g)).
std::int64_t clipped_matches(const Words& hypothesis, const std::vector<Words>& references,
                             std::size_t n) {
  NgramCounts max_reference_counts;
  for (const Words& reference : references) {
    for (const auto& [ngram, count] : count_ngrams(reference, n)) {
      std::int64_t& best = max_reference_counts[ngram];
      best = std::max(best, count);
    }
  }
  std::int64_t matches = 0;
  for (const auto& [ngram, count] : count_ngrams(hypothesis, n)) {
    const auto found = max_reference_counts.find(ngram);
    if (found != max_reference_counts.end()) matches += std::min(count, found->second);
  }
  return matches;
}

// The reference length closest to `hypothesis_length`; a tie goes to the
// shorter reference.
std::int64_t closest_reference_length(std::size_t hypothesis_length,
                                      const std::vector<Words>& references) {
  const auto c = static_cast<std::int64_t>(hypothesis_length);
  std::int64_t best = static_cast<std::int64_t>(references.front().size());
  for (const Words& reference : references) {
    const auto r = static_cast<std::int64_t>(reference.size());
    const std::int64_t distance = std::abs(r - c);
    const std::int64_t best_distance = std::abs(best - c);
    if (distance < best_distance || (distance == best_distance && r < best)) best = r;
  }
  return best;
}

}  // namespace

BleuDetails corpus_bleu_details(const std::vector<std::vector<Words>>& references,
                                const std::vector<Words>& hypotheses) {
  check(references.size() == hypotheses.size(),
        "corpus_bleu: {} hypotheses but {} reference lists; give one list of references per "
        "hypothesis",
        hypotheses.size(), references.size());
  BleuDetails details;
  for (std::size_t i = 0; i < hypotheses.size(); ++i) {
    check(!references[i].empty(), "corpus_bleu: hypothesis {} has no reference", i);
    const Words& hypothesis = hypotheses[i];
    details.hypothesis_length += static_cast<std::int64_t>(hypothesis.size());
    details.reference_length += closest_reference_length(hypothesis.size(), references[i]);
    for (std::size_t n = 1; n <= 4; ++n) {
      details.matches[n - 1] += clipped_matches(hypothesis, references[i], n);
      details.totals[n - 1] += num_ngrams(hypothesis.size(), n);
    }
  }

  double log_precision_sum = 0.0;
  bool any_zero = false;
  for (std::size_t n = 0; n < 4; ++n) {
    const double total = static_cast<double>(details.totals[n]);
    details.precisions[n] = total > 0 ? static_cast<double>(details.matches[n]) / total : 0.0;
    if (details.precisions[n] == 0.0) {
      any_zero = true;
    } else {
      log_precision_sum += std::log(details.precisions[n]);
    }
  }
  if (details.hypothesis_length == 0) return details;  // Nothing translated: BLEU 0.

  const double c = static_cast<double>(details.hypothesis_length);
  const double r = static_cast<double>(details.reference_length);
  details.brevity_penalty = c > r ? 1.0 : std::exp(1.0 - r / c);
  details.score = any_zero ? 0.0 : details.brevity_penalty * std::exp(log_precision_sum / 4.0);
  return details;
}

double corpus_bleu(const std::vector<std::vector<Words>>& references,
                   const std::vector<Words>& hypotheses) {
  return corpus_bleu_details(references, hypotheses).score;
}

double d2l_sentence_bleu(const Words& prediction, const Words& label, int k) {
  check(k >= 1, "d2l_sentence_bleu: k must be at least 1, got {}", k);
  const auto length = static_cast<std::size_t>(k);
  if (prediction.size() < length) return 0.0;  // Also covers an empty prediction.
  const double len_pred = static_cast<double>(prediction.size());
  const double len_label = static_cast<double>(label.size());
  double score = std::exp(std::min(0.0, 1.0 - len_label / len_pred));
  for (std::size_t n = 1; n <= length; ++n) {
    const std::int64_t matches = clipped_matches(prediction, {label}, n);
    if (matches == 0) return 0.0;
    const double precision =
        static_cast<double>(matches) / static_cast<double>(num_ngrams(prediction.size(), n));
    score *= std::pow(precision, std::pow(0.5, static_cast<double>(n)));
  }
  return score;
}

double d2l_sentence_bleu(std::string_view prediction, std::string_view label, int k) {
  return d2l_sentence_bleu(split_words(prediction), split_words(label), k);
}

}  // namespace attograd::text
