// models/seq2seq/corpus.hpp — the tutorial's sentence pairs made ready
// for Seq2Seq, and translation (greedy or beam search) and BLEU on top of a
// trained model.
//
// The data recipe of the PyTorch seq2seq tutorial, in one call:
//
//   Corpus corpus = load_corpus(CorpusOptions().path("data/eng-fra.tsv"));
//   corpus.pairs.size();               // ~8,500 French -> English pairs after the filter
//   corpus.split.train / .validation;  // 95 / 5, held out by source sentence
//   corpus.source_vocabulary;          // SOS, EOS, <unk>, then the training words
//
// Vocabularies are built from the training split only, so a validation
// sentence can hold a word the model never saw; it is encoded as <unk> and
// counted, never a crash. Every encoded sentence ends in EOS, as in the
// tutorial's tensorFromSentence.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "models/seq2seq/seq2seq.hpp"
#include "models/text/bleu.hpp"
#include "models/text/pairs.hpp"
#include "models/text/vocabulary.hpp"
#include "models/translation/beam_search.hpp"
#include "models/translation/translation.hpp"

namespace attograd::seq2seq {

using translation::Evaluation;
using translation::SentenceTranslation;

struct CorpusOptions {
  // The Tatoeba file: english<TAB>french[<TAB>attribution] per line.
  CorpusOptions& path(std::filesystem::path value) {
    path_ = std::move(value);
    return *this;
  }
  // false: French -> English (the tutorial); true: English -> French.
  CorpusOptions& reverse(bool value) {
    reverse_ = value;
    return *this;
  }
  // MAX_LENGTH: both sentences must have fewer words than this, so a source
  // plus its EOS fits the encoder's L slots.
  CorpusOptions& max_length(int64_t value) {
    max_length_ = value;
    return *this;
  }
  // The share of distinct source sentences held out for validation.
  CorpusOptions& validation_fraction(double value) {
    validation_fraction_ = value;
    return *this;
  }
  CorpusOptions& split_seed(uint64_t value) {
    split_seed_ = value;
    return *this;
  }

  const std::filesystem::path& path() const { return path_; }
  bool reverse() const { return reverse_; }
  int64_t max_length() const { return max_length_; }
  double validation_fraction() const { return validation_fraction_; }
  uint64_t split_seed() const { return split_seed_; }

 private:
  std::filesystem::path path_ = "data/eng-fra.tsv";
  bool reverse_ = false;
  int64_t max_length_ = 10;
  double validation_fraction_ = 0.05;
  uint64_t split_seed_ = 1;
};

struct Corpus {
  text::ReadReport report;  // lines read, kept and skipped (with file:line reasons)
  text::Direction direction = text::Direction::kFrenchToEnglish;
  std::vector<text::SentencePair> pairs;  // after the tutorial's filter
  text::DataSplit split;
  text::Vocabulary source_vocabulary = text::make_tutorial_vocabulary();  // training split
  text::Vocabulary target_vocabulary = text::make_tutorial_vocabulary();  // training split
};

// Reads, normalises and filters the file, splits it and builds the
// vocabularies. Throws attograd::Error naming the file when it cannot be
// read or when no pair survives the filter (or none is left for training).
Corpus load_corpus(const CorpusOptions& options);

// A sentence's ids, EOS appended, with the words the vocabulary lacked.
struct EncodedSentence {
  std::vector<int64_t> ids;                // the words, then EOS
  std::vector<std::string> unknown_words;  // each became <unk>, in order
};

// Normalised words -> ids + EOS; unseen words become <unk> and are listed.
EncodedSentence encode_sentence(const text::Vocabulary& vocabulary, std::string_view sentence);

struct EncodedPair {
  std::vector<int64_t> source;  // ends in EOS
  std::vector<int64_t> target;  // ends in EOS
};

// The training split encoded. Its words built the vocabularies, so no word
// is unknown.
std::vector<EncodedPair> encode_pairs(const std::vector<text::SentencePair>& pairs,
                                      const text::Vocabulary& source_vocabulary,
                                      const text::Vocabulary& target_vocabulary);

// ---------------------------------------------------------------- using a model

// Translation of a normalised sentence: encode (unknown words -> <unk>), keep
// the first L − 1 words so that the sentence and its EOS fit the encoder,
// decode — greedily (Seq2Seq::translate) when the beam size is 1, else by
// beam search (beam_translate) — and turn the ids back into words. An empty
// sentence is just EOS.
SentenceTranslation translate_sentence(Seq2Seq& model, const text::Vocabulary& source_vocabulary,
                                       const text::Vocabulary& target_vocabulary,
                                       std::string_view normalized_sentence,
                                       const decoding::BeamSearchOptions& beam = {});

// Translates every distinct source sentence of `pairs` (greedily, or by beam
// search when beam.beam_size() > 1) and scores the outputs
// (translation::evaluate_translations), each against all the targets its
// source has in `pairs` (the split keeps a source's translations together).
Evaluation evaluate(Seq2Seq& model, const text::Vocabulary& source_vocabulary,
                    const text::Vocabulary& target_vocabulary,
                    const std::vector<text::SentencePair>& pairs,
                    const decoding::BeamSearchOptions& beam = {});

}  // namespace attograd::seq2seq
