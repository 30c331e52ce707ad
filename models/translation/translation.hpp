// models/translation/translation.hpp — what every translator of models/
// returns for a sentence and for an evaluation set, and the evaluation loop
// they share: the tutorial's GRU seq2seq (models/seq2seq/), d2l's batched
// GRU seq2seq (models/batched_seq2seq/) and the Transformer
// (models/transformer/) all fill these same types.
//
//   Evaluation evaluation = evaluate_translations(pairs, [&](const std::string& source) {
//     return translate_sentence(model, …, source);  // one recipe's translate_sentence
//   });
//   evaluation.corpus.score;        // corpus BLEU-4
//   evaluation.pairs[0].output;     // the first source's translation
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/text/bleu.hpp"
#include "models/text/pairs.hpp"
#include "models/translation/beam_search.hpp"

namespace attograd::translation {

// What a recipe's translate_sentence did with one sentence.
struct SentenceTranslation {
  std::vector<std::string> source_words;   // the words the encoder read, cut to fit its length
  std::vector<std::string> output_words;   // the translation, the end token not included
  std::vector<std::string> unknown_words;  // source words that became <unk>, in order
  int64_t dropped_words = 0;  // source words beyond the encoder's length, cut off and not read
  // The best output: its ids (tokens), whether it reached the end token, and
  // its attention, one row of attention_width weights per decoder step
  // (length rows, the end token's step included).
  decoding::Hypothesis best;
  std::vector<decoding::ScoredWords> nbest;  // the K best, best first (greedy: the one)
};

// One distinct source sentence of an evaluation set with all its references.
struct EvaluatedPair {
  std::string source;
  std::vector<std::string> references;
  std::string output;
  double sentence_bleu = 0;  // d2l_sentence_bleu, k = 2, against the reference it fits best
  std::vector<decoding::ScoredWords> nbest;  // the K best, best first (output is the first)
};

struct Evaluation {
  std::vector<EvaluatedPair> pairs;  // one per distinct source sentence, first-seen order
  text::BleuDetails corpus;          // BLEU-4 with every reference of each source
  double mean_sentence_bleu = 0;     // mean of the k = 2 scores
  int64_t unknown_words = 0;         // source words encoded as <unk>
  int64_t dropped_words = 0;         // source words cut off to fit the encoder
};

// Translates every distinct source sentence of `pairs` once with `translate`
// and scores the outputs: corpus BLEU-4, each output against all the targets
// its source has in `pairs`, and d2l's sentence BLEU (k = 2) against the
// reference it fits best.
Evaluation evaluate_translations(
    const std::vector<text::SentencePair>& pairs,
    const std::function<SentenceTranslation(const std::string& source)>& translate);

}  // namespace attograd::translation
