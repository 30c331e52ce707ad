// models/translation/translation.cpp — the evaluation loop every translator shares.
#include "models/translation/translation.hpp"

#include <algorithm>
#include <map>

#include "models/text/normalize.hpp"

namespace attograd::translation {

Evaluation evaluate_translations(
    const std::vector<text::SentencePair>& pairs,
    const std::function<SentenceTranslation(const std::string& source)>& translate) {
  // Group the references by source, keeping the sources' first-seen order.
  Evaluation evaluation;
  std::map<std::string, size_t, std::less<>> index_of;  // source -> its entry in evaluation.pairs
  for (const text::SentencePair& pair : pairs) {
    const auto [position, inserted] = index_of.try_emplace(pair.source, evaluation.pairs.size());
    if (inserted) evaluation.pairs.push_back({pair.source, {}, "", 0, {}});
    evaluation.pairs[position->second].references.push_back(pair.target);
  }
  std::vector<std::vector<text::Words>> references;
  std::vector<text::Words> hypotheses;
  double bleu_sum = 0;
  for (EvaluatedPair& pair : evaluation.pairs) {
    const SentenceTranslation translation = translate(pair.source);
    pair.output = text::join_words(translation.output_words);
    pair.nbest = translation.nbest;
    for (const std::string& reference : pair.references) {
      pair.sentence_bleu =
          std::max(pair.sentence_bleu, text::d2l_sentence_bleu(pair.output, reference, 2));
    }
    bleu_sum += pair.sentence_bleu;
    evaluation.unknown_words += static_cast<int64_t>(translation.unknown_words.size());
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

}  // namespace attograd::translation
