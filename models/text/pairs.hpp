// models/text/pairs.hpp — reading, filtering and splitting English–French
// sentence pairs.
//
// The data file (data/eng-fra.tsv, from Tatoeba) has one pair a line:
//
//   english<TAB>french[<TAB>attribution...]
//
// The recipe of the PyTorch seq2seq tutorial is three calls:
//
//   PairSet set = read_pairs("data/eng-fra.tsv");                 // French -> English
//   std::vector<SentencePair> pairs = filter_pairs(set.pairs, set.direction);
//   DataSplit split = split_by_source(pairs, SplitOptions().seed(1));
//
// Reading never throws for a bad line: it skips the line and counts it by
// reason in the ReadReport, keeping the first few with file:line and why.
// Only a file that cannot be read throws: missing, not a regular file (a
// device such as /dev/zero, a FIFO, a socket, a folder: tensor/input_file.hpp)
// or larger than kMaxPairsFileBytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attograd::text {

// ---------------------------------------------------------------- reading

// Which language is the source. The tutorial translates French -> English.
enum class Direction { kFrenchToEnglish, kEnglishToFrench };

std::string_view to_string(Direction direction);

// Which normaliser read_pairs applies to both sentences (see normalize.hpp).
enum class Normalization {
  kTutorial,  // normalize_sentence: ASCII, lower case, "j ai gagne ."
  kD2l,       // preprocess_d2l: accents kept, "j’ai gagné ."
};

// One training example: the sentence to translate and its translation, both
// normalised, words separated by single spaces.
struct SentencePair {
  std::string source;
  std::string target;
  friend bool operator==(const SentencePair&, const SentencePair&) = default;
};

// Options of read_pairs, set by chaining: ReadOptions().reverse(true).
struct ReadOptions {
  // false (default): French -> English, the tutorial's direction.
  // true: English -> French, the file's own column order (d2l's direction).
  ReadOptions& reverse(bool value) {
    reverse_ = value;
    return *this;
  }
  bool reverse() const { return reverse_; }

  ReadOptions& normalization(Normalization value) {
    normalization_ = value;
    return *this;
  }
  Normalization normalization() const { return normalization_; }

  Direction direction() const {
    return reverse_ ? Direction::kEnglishToFrench : Direction::kFrenchToEnglish;
  }

 private:
  bool reverse_ = false;
  Normalization normalization_ = Normalization::kTutorial;
};

// Why a line of the file produced no pair.
enum class SkipReason {
  kEmptyLine,      // nothing on the line (or only "\r")
  kNoTab,          // no tab between the two sentences
  kInvalidUtf8,    // a sentence is not valid UTF-8
  kEmptySentence,  // a sentence is empty once normalised ("123", "—")
};

std::string_view to_string(SkipReason reason);

struct SkippedLine {
  std::int64_t line_number = 0;  // 1-based
  SkipReason reason = SkipReason::kEmptyLine;
  std::string message;  // "data/eng-fra.tsv:123: no tab between the two sentences"
};

// Skipped lines whose message a ReadReport keeps; the rest are only counted,
// so a file of a million bad lines costs a counter, not a million messages.
inline constexpr std::size_t kMaxSkippedExamples = 10;

// What read_pairs saw: every line is either kept as a pair or skipped with a
// reason, so lines_read == pairs_kept + lines_skipped().
struct ReadReport {
  std::string source_name;  // the path, or the name given to read_pairs_from_stream
  std::int64_t lines_read = 0;
  std::int64_t pairs_kept = 0;
  // Lines skipped for each reason, indexed by SkipReason.
  std::array<std::int64_t, 4> skipped_by_reason{};
  // The first kMaxSkippedExamples skipped lines, in file order.
  std::vector<SkippedLine> skipped_examples;

  std::int64_t lines_skipped() const;
  std::int64_t skipped_count(SkipReason reason) const;
  // One line for a log: "data/eng-fra.tsv: 75554 lines read, 75552 pairs
  // kept, 2 skipped (1 without a tab, 1 with invalid UTF-8)".
  std::string summary() const;
};

struct PairSet {
  std::vector<SentencePair> pairs;
  Direction direction = Direction::kFrenchToEnglish;
  ReadReport report;
};

// The largest file read_pairs reads: 256 MiB, 64 times the shipped
// data/eng-fra.tsv (4 MB). The pairs are held in memory, a few times the
// file's size.
inline constexpr std::uint64_t kMaxPairsFileBytes = std::uint64_t(256) << 20;

// Reads `path` (UTF-8, one pair a line, columns after the second ignored, a
// trailing "\r" and a leading byte-order mark tolerated) and normalises both
// sentences. Throws attograd::Error naming the path when the file does not
// exist, is not a regular file or is larger than kMaxPairsFileBytes.
PairSet read_pairs(const std::filesystem::path& path, const ReadOptions& options = {});

// The same from an open stream; `source_name` is used in the messages.
PairSet read_pairs_from_stream(std::istream& in, std::string_view source_name,
                               const ReadOptions& options = {});

// Throws attograd::Error when `pairs` is empty, naming the file, the stage
// ("after filtering") and what the report counted — the error to raise
// before training on nothing.
void require_pairs(const std::vector<SentencePair>& pairs, const ReadReport& report,
                   std::string_view stage);

// ---------------------------------------------------------------- filtering

// The tutorial's English prefixes: "i am ", "i m ", "he is ", "he s ",
// "she is ", "she s ", "you are ", "you re ", "we are ", "we re ",
// "they are ", "they re " (normalised text, so "I'm" is "i m").
const std::vector<std::string>& tutorial_english_prefixes();

struct FilterOptions {
  // Both sentences must have fewer than this many words (the tutorial's
  // MAX_LENGTH = 10; "." counts as a word).
  FilterOptions& max_words(std::int64_t value) {
    max_words_ = value;
    return *this;
  }
  std::int64_t max_words() const { return max_words_; }

  // The English sentence must start with one of these. Empty: no condition.
  FilterOptions& english_prefixes(std::vector<std::string> value) {
    english_prefixes_ = std::move(value);
    return *this;
  }
  const std::vector<std::string>& english_prefixes() const { return english_prefixes_; }

 private:
  std::int64_t max_words_ = 10;
  std::vector<std::string> english_prefixes_ = tutorial_english_prefixes();
};

// Whether a pair passes the tutorial's filter: both sides shorter than
// max_words words and the English side starting with an allowed prefix. The
// default prefixes are written in the tutorial's normalisation ("i m "), so
// they match text read with Normalization::kTutorial.
bool keep_pair(std::string_view english, std::string_view french,
               const FilterOptions& options = {});

// The English / French sentence of a pair read in `direction`.
const std::string& english_side(const SentencePair& pair, Direction direction);
const std::string& french_side(const SentencePair& pair, Direction direction);

// The pairs that pass keep_pair, in their original order. The English side is
// found through `direction`, so the filter means the same in both directions.
std::vector<SentencePair> filter_pairs(const std::vector<SentencePair>& pairs, Direction direction,
                                       const FilterOptions& options = {});

// ---------------------------------------------------------------- splitting

struct SplitOptions {
  // The share of distinct source sentences held out, in [0, 1).
  SplitOptions& validation_fraction(double value) {
    validation_fraction_ = value;
    return *this;
  }
  double validation_fraction() const { return validation_fraction_; }

  SplitOptions& seed(std::uint64_t value) {
    seed_ = value;
    return *this;
  }
  std::uint64_t seed() const { return seed_; }

 private:
  double validation_fraction_ = 0.05;
  std::uint64_t seed_ = 0;
};

struct DataSplit {
  std::vector<SentencePair> train;
  std::vector<SentencePair> validation;
};

// A seeded train/validation split held out BY SOURCE SENTENCE: the distinct
// source sentences are shuffled (Fisher–Yates on std::mt19937_64, identical
// on every platform), the first round(fraction × distinct) of them go to
// validation with all their pairs, the rest to training. A sentence with
// several translations is therefore never on both sides, and no validation
// source is seen in training. When the fraction is positive and there are at
// least two distinct sources, each side gets at least one. Both sides keep
// the input order.
DataSplit split_by_source(const std::vector<SentencePair>& pairs, const SplitOptions& options = {});

}  // namespace attograd::text
