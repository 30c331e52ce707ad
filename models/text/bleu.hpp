// models/text/bleu.hpp — BLEU, the n-gram overlap score of machine
// translation, in two flavours.
//
// corpus_bleu: BLEU-4 as defined by Papineni et al. (2002), the score papers
// report. For n = 1..4, over the whole corpus,
//
//   p_n = Σ_sentences Σ_{n-grams g of the hypothesis} min(count_hyp(g), max_ref count_ref(g))
//         ----------------------------------------------------------------------------------
//                      Σ_sentences (number of n-grams of the hypothesis)
//
// i.e. each hypothesis n-gram is credited at most as often as it occurs in
// the one reference (of that sentence) where it occurs most: "clipping", so
// "the the the the" is not rewarded for the single "the" of a reference.
//
//   BLEU = BP · exp(Σ_n ¼ log p_n)          (0 if any p_n is 0)
//   BP   = 1 if c > r, else exp(1 − r / c)
//
// c is the total hypothesis length, r the sum over sentences of the
// reference length closest to the hypothesis length (a tie goes to the
// shorter reference). The brevity penalty BP stands in for recall: without
// it, a one-word hypothesis that is right would score 1.
//
// d2l_sentence_bleu: d2l.ai's per-sentence score with one label and a
// parameter k,
//
//   exp(min(0, 1 − len_label / len_pred)) · Π_{n=1..k} p_n^(1/2)^n
//
// where p_n is the clipped n-gram match ratio of this one sentence. The
// weights (1/2)^n count long n-grams for less; it is the score d2l prints
// next to its example translations ("go . => va !, bleu 1.000").
//
// Sentences are lists of words (use split_words on normalised text).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::text {

using Words = std::vector<std::string>;

// Everything that goes into a corpus BLEU-4 score, for logging and tests.
struct BleuDetails {
  double score = 0.0;
  double brevity_penalty = 0.0;
  std::array<std::int64_t, 4> matches{};  // clipped n-gram matches, n = 1..4
  std::array<std::int64_t, 4> totals{};   // hypothesis n-grams, n = 1..4
  std::array<double, 4> precisions{};     // matches / totals (0 when totals is 0)
  std::int64_t hypothesis_length = 0;     // c
  std::int64_t reference_length = 0;      // r
};

// Corpus BLEU-4. references[i] holds one or more references for
// hypotheses[i]. Returns 0 for an empty corpus or empty hypotheses.
BleuDetails corpus_bleu_details(const std::vector<std::vector<Words>>& references,
                                const std::vector<Words>& hypotheses);
double corpus_bleu(const std::vector<std::vector<Words>>& references,
                   const std::vector<Words>& hypotheses);

// d2l's sentence BLEU with n-grams up to `k` (k >= 1). Returns 0 when the
// prediction is empty, when it has fewer than k words (it has no k-grams to
// match), or when any p_n is 0.
double d2l_sentence_bleu(const Words& prediction, const Words& label, int k);
// The same on space-separated sentences.
double d2l_sentence_bleu(std::string_view prediction, std::string_view label, int k);

}  // namespace attograd::text
