// models/seq2seq/corpus.cpp — the tutorial's data recipe, translation of
// text (greedy or beam search), and BLEU over a set of pairs.
#include "models/seq2seq/corpus.hpp"

#include <algorithm>
#include <map>

#include "models/text/normalize.hpp"
#include "tensor/error.hpp"

namespace attograd::seq2seq {

Corpus load_corpus(const CorpusOptions& options) {
  check(options.max_length() >= 2,
        "load_corpus: max_length {} must be at least 2 (one word and EOS)", options.max_length());
  Corpus corpus;
  text::PairSet set =
      text::read_pairs(options.path(), text::ReadOptions().reverse(options.reverse()));
  corpus.report = std::move(set.report);
  corpus.direction = set.direction;
  corpus.pairs = text::filter_pairs(set.pairs, set.direction,
                                    text::FilterOptions().max_words(options.max_length()));
  text::require_pairs(corpus.pairs, corpus.report,
                      fmt::format("after the tutorial's filter (fewer than {} words a sentence, "
                                  "English starting with \"i am\", \"he is\", …)",
                                  options.max_length()));
  corpus.split =
      text::split_by_source(corpus.pairs, text::SplitOptions()
                                              .validation_fraction(options.validation_fraction())
                                              .seed(options.split_seed()));
  text::require_pairs(corpus.split.train, corpus.report, "for training after the split");
  // The tutorial's Lang.addSentence: words in order of first appearance.
  for (const text::SentencePair& pair : corpus.split.train) {
    corpus.source_vocabulary.add_sentence(pair.source);
    corpus.target_vocabulary.add_sentence(pair.target);
  }
  return corpus;
}

EncodedSentence encode_sentence(const text::Vocabulary& vocabulary, std::string_view sentence) {
  EncodedSentence encoded;
  for (const std::string& word : text::split_words(sentence)) {
    if (const std::optional<int64_t> id = vocabulary.find(word)) {
      encoded.ids.push_back(*id);
    } else {
      encoded.ids.push_back(kUnknown);
      encoded.unknown_words.push_back(word);
    }
  }
  encoded.ids.push_back(kEos);
  return encoded;
}

std::vector<EncodedPair> encode_pairs(const std::vector<text::SentencePair>& pairs,
                                      const text::Vocabulary& source_vocabulary,
                                      const text::Vocabulary& target_vocabulary) {
  std::vector<EncodedPair> encoded;
  encoded.reserve(pairs.size());
  for (const text::SentencePair& pair : pairs) {
    encoded.push_back(EncodedPair{encode_sentence(source_vocabulary, pair.source).ids,
                                  encode_sentence(target_vocabulary, pair.target).ids});
  }
  return encoded;
}

// ---------------------------------------------------------------- using a model

SentenceTranslation translate_sentence(Seq2Seq& model, const text::Vocabulary& source_vocabulary,
                                       const text::Vocabulary& target_vocabulary,
                                       std::string_view normalized_sentence,
                                       const decoding::BeamSearchOptions& beam) {
  const int64_t L = model.options().max_length();
  SentenceTranslation result;
  result.source_words = text::split_words(normalized_sentence);
  const auto kept = static_cast<int64_t>(result.source_words.size());
  if (kept > L - 1) {
    result.dropped_words = kept - (L - 1);
    result.source_words.resize(static_cast<size_t>(L - 1));
  }
  EncodedSentence encoded =
      encode_sentence(source_vocabulary, text::join_words(result.source_words));
  result.unknown_words = std::move(encoded.unknown_words);
  std::vector<decoding::Hypothesis> hypotheses;
  if (beam.beam_size() == 1) {
    decoding::check_options(beam);
    hypotheses.push_back(to_hypothesis(model.translate(encoded.ids), beam.length_penalty()));
  } else {
    hypotheses = beam_translate(model, encoded.ids, beam);
  }
  result.best = hypotheses.front();
  result.output_words = target_vocabulary.decode(result.best.tokens);
  result.nbest = decoding::in_words(hypotheses, target_vocabulary);
  return result;
}

Evaluation evaluate(Seq2Seq& model, const text::Vocabulary& source_vocabulary,
                    const text::Vocabulary& target_vocabulary,
                    const std::vector<text::SentencePair>& pairs,
                    const decoding::BeamSearchOptions& beam) {
  return translation::evaluate_translations(pairs, [&](const std::string& source) {
    return translate_sentence(model, source_vocabulary, target_vocabulary, source, beam);
  });
}

}  // namespace attograd::seq2seq
