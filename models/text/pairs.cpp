// models/text/pairs.cpp — the TSV reader, the tutorial's filter and the
// split held out by source sentence.
#include "models/text/pairs.hpp"

#include <algorithm>
#include <cmath>
#include <istream>
#include <map>
#include <optional>
#include <random>

#include "models/text/normalize.hpp"
#include "models/text/shuffle.hpp"
#include "tensor/error.hpp"
#include "tensor/input_file.hpp"
#include "tensor/printable.hpp"

namespace attograd::text {

std::string_view to_string(Direction direction) {
  switch (direction) {
    case Direction::kFrenchToEnglish:
      return "French -> English";
    case Direction::kEnglishToFrench:
      return "English -> French";
  }
  return "unknown direction";
}

std::string_view to_string(SkipReason reason) {
  switch (reason) {
    case SkipReason::kEmptyLine:
      return "empty line";
    case SkipReason::kNoTab:
      return "without a tab";
    case SkipReason::kInvalidUtf8:
      return "with invalid UTF-8";
    case SkipReason::kEmptySentence:
      return "with an empty sentence";
  }
  return "unknown reason";
}

// skipped_by_reason has one counter per SkipReason, the last being kEmptySentence.
static_assert(std::tuple_size_v<decltype(ReadReport::skipped_by_reason)> ==
              static_cast<std::size_t>(SkipReason::kEmptySentence) + 1);

std::int64_t ReadReport::lines_skipped() const {
  std::int64_t count = 0;
  for (const std::int64_t each : skipped_by_reason) count += each;
  return count;
}

std::int64_t ReadReport::skipped_count(SkipReason reason) const {
  return skipped_by_reason[static_cast<std::size_t>(reason)];
}

std::string ReadReport::summary() const {
  std::string text =
      fmt::format("{}: {} lines read, {} pairs kept, {} skipped", printable(source_name, 300),
                  lines_read, pairs_kept, lines_skipped());
  std::string reasons;
  for (const SkipReason reason : {SkipReason::kEmptyLine, SkipReason::kNoTab,
                                  SkipReason::kInvalidUtf8, SkipReason::kEmptySentence}) {
    const std::int64_t count = skipped_count(reason);
    if (count == 0) continue;
    if (!reasons.empty()) reasons += ", ";
    reasons += fmt::format("{} {}", count, to_string(reason));
  }
  if (!reasons.empty()) text += fmt::format(" ({})", reasons);
  return text;
}

namespace {

std::optional<std::string> normalize_with(Normalization normalization, std::string_view text) {
  switch (normalization) {
    case Normalization::kTutorial:
      return normalize_sentence(text);
    case Normalization::kD2l:
      return preprocess_d2l(text);
  }
  return std::nullopt;
}

// Normalises one side of a line, or explains in `why` why it cannot be kept.
// `column` is the byte offset of the sentence within the line, so an invalid
// byte is reported at its place in the line.
std::optional<std::string> read_sentence(std::string_view sentence, std::size_t column,
                                         std::string_view language, Normalization normalization,
                                         SkipReason& reason, std::string& why) {
  if (const std::optional<std::size_t> bad = first_invalid_utf8(sentence)) {
    reason = SkipReason::kInvalidUtf8;
    why = fmt::format("invalid UTF-8 in the {} sentence (byte 0x{:02x} at byte {} of the line)",
                      language, static_cast<unsigned char>(sentence[*bad]), column + *bad + 1);
    return std::nullopt;
  }
  std::optional<std::string> normalized = normalize_with(normalization, sentence);
  if (!normalized || normalized->empty()) {
    reason = SkipReason::kEmptySentence;
    why = fmt::format("the {} sentence is empty once normalised", language);
    return std::nullopt;
  }
  return normalized;
}

}  // namespace

PairSet read_pairs_from_stream(std::istream& in, std::string_view source_name,
                               const ReadOptions& options) {
  PairSet set;
  set.direction = options.direction();
  ReadReport& report = set.report;
  report.source_name = std::string(source_name);
  const std::string shown_name = printable(source_name, 300);

  std::string line;
  while (std::getline(in, line)) {
    ++report.lines_read;
    const std::int64_t line_number = report.lines_read;
    const auto skip = [&](SkipReason reason, std::string_view why) {
      ++report.skipped_by_reason[static_cast<std::size_t>(reason)];
      if (report.skipped_examples.size() < kMaxSkippedExamples) {
        report.skipped_examples.push_back(
            {line_number, reason, fmt::format("{}:{}: {}", shown_name, line_number, why)});
      }
    };

    std::string_view view = line;
    if (line_number == 1 && view.starts_with("\xEF\xBB\xBF")) view.remove_prefix(3);  // BOM
    if (view.ends_with('\r')) view.remove_suffix(1);  // Windows line ending
    if (view.empty()) {
      skip(SkipReason::kEmptyLine, "empty line");
      continue;
    }
    const std::size_t tab = view.find('\t');
    if (tab == std::string_view::npos) {
      skip(SkipReason::kNoTab, "no tab between the two sentences");
      continue;
    }
    const std::size_t french_end = std::min(view.find('\t', tab + 1), view.size());
    const std::string_view english_raw = view.substr(0, tab);
    const std::string_view french_raw = view.substr(tab + 1, french_end - tab - 1);

    SkipReason reason = SkipReason::kEmptyLine;
    std::string why;
    std::optional<std::string> english =
        read_sentence(english_raw, 0, "English", options.normalization(), reason, why);
    std::optional<std::string> french;
    if (english) {
      french = read_sentence(french_raw, tab + 1, "French", options.normalization(), reason, why);
    }
    if (!english || !french) {
      skip(reason, why);
      continue;
    }
    if (set.direction == Direction::kFrenchToEnglish) {
      set.pairs.push_back({std::move(*french), std::move(*english)});
    } else {
      set.pairs.push_back({std::move(*english), std::move(*french)});
    }
  }
  check(!in.bad(), "{}: read error after line {}", shown_name, report.lines_read);
  report.pairs_kept = static_cast<std::int64_t>(set.pairs.size());
  return set;
}

PairSet read_pairs(const std::filesystem::path& path, const ReadOptions& options) {
  InputFile file(path, {"read_pairs",
                        "pass a UTF-8 text file of english<TAB>french lines; the pairs ship as "
                        "data/eng-fra.tsv in the repository",
                        kMaxPairsFileBytes});
  return read_pairs_from_stream(file.stream(), path.string(), options);
}

void require_pairs(const std::vector<SentencePair>& pairs, const ReadReport& report,
                   std::string_view stage) {
  check(!pairs.empty(),
        "{}: no sentence pairs left {} — {}. Check the path, the file's format "
        "(english<TAB>french per line) and the filter options.",
        printable(report.source_name, 300), stage, report.summary());
}

// ---------------------------------------------------------------- filtering

const std::vector<std::string>& tutorial_english_prefixes() {
  static const std::vector<std::string> prefixes = {"i am ",   "i m ",   "he is ",    "he s ",
                                                    "she is ", "she s ", "you are ",  "you re ",
                                                    "we are ", "we re ", "they are ", "they re "};
  return prefixes;
}

bool keep_pair(std::string_view english, std::string_view french, const FilterOptions& options) {
  const auto max_words = static_cast<std::size_t>(options.max_words());
  if (count_words(english) >= max_words || count_words(french) >= max_words) return false;
  if (options.english_prefixes().empty()) return true;
  for (const std::string& prefix : options.english_prefixes()) {
    if (english.starts_with(prefix)) return true;
  }
  return false;
}

const std::string& english_side(const SentencePair& pair, Direction direction) {
  return direction == Direction::kEnglishToFrench ? pair.source : pair.target;
}

const std::string& french_side(const SentencePair& pair, Direction direction) {
  return direction == Direction::kEnglishToFrench ? pair.target : pair.source;
}

std::vector<SentencePair> filter_pairs(const std::vector<SentencePair>& pairs, Direction direction,
                                       const FilterOptions& options) {
  check(options.max_words() > 0, "filter_pairs: max_words must be positive, got {}",
        options.max_words());
  std::vector<SentencePair> kept;
  for (const SentencePair& pair : pairs) {
    if (keep_pair(english_side(pair, direction), french_side(pair, direction), options)) {
      kept.push_back(pair);
    }
  }
  return kept;
}

// ---------------------------------------------------------------- splitting

DataSplit split_by_source(const std::vector<SentencePair>& pairs, const SplitOptions& options) {
  const double fraction = options.validation_fraction();
  check(fraction >= 0.0 && fraction < 1.0,
        "split_by_source: validation_fraction must be in [0, 1), got {}", fraction);

  // Group the pairs by source sentence; groups are numbered in order of first
  // appearance so the result depends only on the input and the seed.
  std::map<std::string_view, std::int64_t> group_of_source;
  std::vector<std::int64_t> group_of_pair;
  group_of_pair.reserve(pairs.size());
  for (const SentencePair& pair : pairs) {
    const auto next_group = static_cast<std::int64_t>(group_of_source.size());
    group_of_pair.push_back(group_of_source.try_emplace(pair.source, next_group).first->second);
  }
  const auto num_groups = static_cast<std::int64_t>(group_of_source.size());

  std::int64_t num_validation = std::llround(fraction * static_cast<double>(num_groups));
  if (fraction > 0.0 && num_groups >= 2) {
    num_validation = std::clamp<std::int64_t>(num_validation, 1, num_groups - 1);
  }

  // The first num_validation groups of a seeded permutation are held out.
  std::mt19937_64 rng(options.seed());
  const std::vector<std::int64_t> order = shuffled_indices(num_groups, rng);
  std::vector<bool> is_validation(static_cast<std::size_t>(num_groups), false);
  for (std::int64_t i = 0; i < num_validation; ++i) {
    is_validation[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = true;
  }

  DataSplit split;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    if (is_validation[static_cast<std::size_t>(group_of_pair[i])]) {
      split.validation.push_back(pairs[i]);
    } else {
      split.train.push_back(pairs[i]);
    }
  }
  return split;
}

}  // namespace attograd::text
