// models/text/vocabulary.cpp — the word <-> index table, its two layouts and
// its text form for checkpoints.
#include "models/text/vocabulary.hpp"

#include <algorithm>
#include <charconv>
#include <utility>

#include "models/text/normalize.hpp"
#include "tensor/error.hpp"

namespace attograd::text {
namespace {

void check_word(std::string_view word) {
  check(!word.empty(), "Vocabulary: a word must not be empty");
  check(word.find_first_of(" \t\n\r") == std::string_view::npos,
        "Vocabulary: the word '{}' contains a space, tab or newline; split sentences into "
        "words first (split_words)",
        word);
}

constexpr std::string_view kMagic = "attograd-vocabulary 1";

// Reads the lines of serialize()'s text one at a time, remembering the line
// number for error messages.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : text_(text) {}

  std::string_view next() {
    check(position_ <= text_.size(), "vocabulary text line {}: unexpected end of text",
          line_number_ + 1);
    const std::size_t end = std::min(text_.find('\n', position_), text_.size());
    const std::string_view line = text_.substr(position_, end - position_);
    position_ = end + 1;
    ++line_number_;
    return line;
  }
  std::int64_t line_number() const { return line_number_; }

  std::int64_t parse_int(std::string_view digits) const {
    std::int64_t value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    check(error == std::errc() && end == digits.data() + digits.size() && value >= 0,
          "vocabulary text line {}: '{}' is not a non-negative integer", line_number_, digits);
    return value;
  }

  // Reads a line "<keyword> <integer>" and returns the integer.
  std::int64_t expect_field(std::string_view line, std::string_view keyword) const {
    check(line.starts_with(keyword) && line.size() > keyword.size() && line[keyword.size()] == ' ',
          "vocabulary text line {}: expected '{} <number>', found '{}'", line_number_, keyword,
          line);
    return parse_int(line.substr(keyword.size() + 1));
  }

 private:
  std::string_view text_;
  std::size_t position_ = 0;
  std::int64_t line_number_ = 0;
};

}  // namespace

Vocabulary::Vocabulary(std::vector<std::string> special_tokens,
                       std::optional<std::string> unknown_token) {
  for (std::string& token : special_tokens) {
    check_word(token);
    check(!contains(token), "Vocabulary: the special token '{}' is given twice", token);
    index_of_.emplace(token, size());
    words_.push_back(std::move(token));
    counts_.push_back(0);
  }
  num_special_ = size();
  if (unknown_token) {
    unknown_index_ = find(*unknown_token);
    check(unknown_index_.has_value(),
          "Vocabulary: the unknown token '{}' must be one of the special tokens", *unknown_token);
  }
}

std::int64_t Vocabulary::add_word(std::string_view word, std::int64_t occurrences) {
  check_word(word);
  check(occurrences >= 0,
        "Vocabulary::add_word: '{}' added {} times; the count must not be negative", word,
        occurrences);
  auto [position, inserted] = index_of_.try_emplace(std::string(word), size());
  if (inserted) {
    words_.emplace_back(word);
    counts_.push_back(0);
  }
  const std::int64_t index = position->second;
  if (index >= num_special_) counts_[static_cast<std::size_t>(index)] += occurrences;
  return index;
}

void Vocabulary::add_sentence(std::string_view sentence) {
  for (const std::string& word : split_words(sentence)) add_word(word);
}

std::optional<std::int64_t> Vocabulary::find(std::string_view word) const {
  const auto position = index_of_.find(word);
  if (position == index_of_.end()) return std::nullopt;
  return position->second;
}

std::int64_t Vocabulary::index(std::string_view word) const {
  const std::optional<std::int64_t> found = find(word);
  check(found.has_value(), "Vocabulary::index: '{}' is not in the vocabulary of {} words", word,
        size());
  return *found;
}

const std::string& Vocabulary::word(std::int64_t index) const {
  check(index >= 0 && index < size(), "Vocabulary::word: index {} is out of range [0, {})", index,
        size());
  return words_[static_cast<std::size_t>(index)];
}

std::int64_t Vocabulary::count(std::int64_t index) const {
  check(index >= 0 && index < size(), "Vocabulary::count: index {} is out of range [0, {})", index,
        size());
  return counts_[static_cast<std::size_t>(index)];
}

Encoded Vocabulary::encode(std::string_view sentence) const {
  return encode(split_words(sentence));
}

Encoded Vocabulary::encode(const std::vector<std::string>& words) const {
  Encoded encoded;
  encoded.ids.reserve(words.size());
  for (const std::string& word : words) {
    if (const std::optional<std::int64_t> found = find(word)) {
      encoded.ids.push_back(*found);
      continue;
    }
    check(unknown_index_.has_value(),
          "Vocabulary::encode: '{}' is not in the vocabulary, which has no unknown token; "
          "construct it with an unknown token (e.g. make_tutorial_vocabulary()) to encode "
          "unseen words",
          word);
    encoded.ids.push_back(*unknown_index_);
    ++encoded.unknown_count;
  }
  return encoded;
}

std::vector<std::string> Vocabulary::decode(std::span<const std::int64_t> ids) const {
  std::vector<std::string> words;
  words.reserve(ids.size());
  for (const std::int64_t id : ids) words.push_back(word(id));
  return words;
}

std::string Vocabulary::serialize() const {
  std::string text(kMagic);
  text += fmt::format("\nspecial {} unknown ", num_special_);
  text += unknown_index_ ? std::to_string(*unknown_index_) : "none";
  text += fmt::format("\nwords {}\n", size());
  for (std::size_t i = 0; i < words_.size(); ++i) {
    text += fmt::format("{}\t{}\n", words_[i], counts_[i]);
  }
  return text;
}

Vocabulary Vocabulary::deserialize(std::string_view text) {
  LineReader reader(text);
  const std::string_view magic = reader.next();
  check(magic == kMagic, "vocabulary text line 1: expected '{}', found '{}'", kMagic, magic);

  // "special N unknown K" or "special N unknown none".
  const std::string_view layout = reader.next();
  const std::size_t unknown_at = layout.find(" unknown ");
  check(unknown_at != std::string_view::npos,
        "vocabulary text line 2: expected 'special <number> unknown <number or none>', found "
        "'{}'",
        layout);
  const std::int64_t num_special = reader.expect_field(layout.substr(0, unknown_at), "special");
  const std::string_view unknown_text = layout.substr(unknown_at + 9);
  std::optional<std::int64_t> unknown;
  if (unknown_text != "none") unknown = reader.parse_int(unknown_text);

  const std::int64_t num_words = reader.expect_field(reader.next(), "words");
  check(num_special <= num_words, "vocabulary text: {} special tokens but only {} words",
        num_special, num_words);
  check(!unknown || *unknown < num_special,
        "vocabulary text: the unknown index {} is not one of the {} special tokens",
        unknown.value_or(0), num_special);

  std::vector<std::string> words;
  std::vector<std::int64_t> counts;
  for (std::int64_t i = 0; i < num_words; ++i) {
    const std::string_view line = reader.next();
    const std::size_t tab = line.rfind('\t');
    check(tab != std::string_view::npos,
          "vocabulary text line {}: expected 'word<TAB>count', found '{}'", reader.line_number(),
          line);
    words.emplace_back(line.substr(0, tab));
    counts.push_back(reader.parse_int(line.substr(tab + 1)));
  }

  std::vector<std::string> specials(words.begin(), words.begin() + num_special);
  std::optional<std::string> unknown_token;
  if (unknown) unknown_token = specials[static_cast<std::size_t>(*unknown)];
  Vocabulary vocabulary(std::move(specials), std::move(unknown_token));
  for (std::int64_t i = num_special; i < num_words; ++i) {
    const auto at = static_cast<std::size_t>(i);
    const std::int64_t index = vocabulary.add_word(words[at], counts[at]);
    check(index == i, "vocabulary text: the word '{}' appears twice (indices {} and {})", words[at],
          index, i);
  }
  return vocabulary;
}

bool operator==(const Vocabulary& a, const Vocabulary& b) {
  return a.words_ == b.words_ && a.num_special_ == b.num_special_ &&
         a.unknown_index_ == b.unknown_index_;
}

std::vector<std::string> special_words(SpecialLayout layout) {
  std::vector<std::string> words;
  for (const SpecialToken& token : layout) words.emplace_back(token.word);
  return words;
}

std::optional<std::string> unknown_word(SpecialLayout layout) {
  for (const SpecialToken& token : layout) {
    if (token.role == TokenRole::unknown) return std::string(token.word);
  }
  return std::nullopt;
}

Vocabulary make_vocabulary(SpecialLayout layout) {
  return Vocabulary(special_words(layout), unknown_word(layout));
}

Vocabulary make_tutorial_vocabulary() { return make_vocabulary(kTutorialLayout); }

std::map<std::string, std::int64_t> count_tokens(
    const std::vector<std::vector<std::string>>& sentences) {
  std::map<std::string, std::int64_t> counts;
  for (const std::vector<std::string>& sentence : sentences) {
    for (const std::string& word : sentence) ++counts[word];
  }
  return counts;
}

Vocabulary vocabulary_from_counts(const std::map<std::string, std::int64_t>& counts,
                                  std::vector<std::string> special_tokens,
                                  std::optional<std::string> unknown_token,
                                  std::int64_t min_frequency) {
  std::vector<std::pair<std::string, std::int64_t>> frequent;
  for (const auto& [word, count] : counts) {
    if (count >= min_frequency) frequent.emplace_back(word, count);
  }
  // Descending count; equal counts in byte order, so the layout never
  // depends on hash order or on the order sentences were read.
  std::sort(frequent.begin(), frequent.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });

  Vocabulary vocabulary(std::move(special_tokens), std::move(unknown_token));
  for (const auto& [word, count] : frequent) {
    if (vocabulary.contains(word)) continue;  // A special token written in the text.
    vocabulary.add_word(word, count);
  }
  return vocabulary;
}

Vocabulary make_batched_vocabulary(const std::vector<std::vector<std::string>>& sentences,
                                   std::int64_t min_frequency) {
  check(min_frequency >= 1, "make_batched_vocabulary: min_frequency must be at least 1, got {}",
        min_frequency);
  return vocabulary_from_counts(count_tokens(sentences), special_words(kBatchedLayout),
                                unknown_word(kBatchedLayout), min_frequency);
}

std::optional<std::string> vocabulary_difference(const Vocabulary& expected,
                                                 const Vocabulary& actual) {
  if (expected.num_special() != actual.num_special()) {
    return fmt::format("{} special tokens expected, {} found", expected.num_special(),
                       actual.num_special());
  }
  if (expected.unknown_index() != actual.unknown_index()) {
    const auto show = [](std::optional<std::int64_t> index) {
      return index ? std::to_string(*index) : std::string("none");
    };
    return fmt::format("unknown token at index {} expected, {} found",
                       show(expected.unknown_index()), show(actual.unknown_index()));
  }
  const std::int64_t common = std::min(expected.size(), actual.size());
  for (std::int64_t i = 0; i < common; ++i) {
    if (expected.word(i) != actual.word(i)) {
      return fmt::format("{} words expected, {} found; index {} is '{}' expected, '{}' found",
                         expected.size(), actual.size(), i, expected.word(i), actual.word(i));
    }
  }
  if (expected.size() != actual.size()) {
    return fmt::format("{} words expected, {} found (the first {} agree)", expected.size(),
                       actual.size(), common);
  }
  return std::nullopt;
}

std::optional<std::string> layout_difference(const Vocabulary& vocabulary, SpecialLayout layout) {
  std::string expected;
  for (const SpecialToken& token : layout) {
    if (!expected.empty()) expected += ' ';
    expected.append(token.word);
  }
  const auto layout_size = static_cast<std::int64_t>(layout.size());
  if (vocabulary.num_special() != layout_size) {
    return fmt::format("it has {} special tokens where the layout has {} ({})",
                       vocabulary.num_special(), layout_size, expected);
  }
  for (std::int64_t id = 0; id < layout_size; ++id) {
    const std::string_view word = layout[static_cast<std::size_t>(id)].word;
    if (vocabulary.word(id) != word) {
      return fmt::format("its id {} is '{}' where the layout has '{}' ({})", id,
                         vocabulary.word(id), word, expected);
    }
  }
  const std::optional<std::string> unknown = unknown_word(layout);
  const std::optional<std::int64_t> unknown_id =
      unknown ? vocabulary.find(*unknown) : std::optional<std::int64_t>();
  if (vocabulary.unknown_index() != unknown_id) {
    return fmt::format("its unknown token is {} where the layout's is {}",
                       vocabulary.unknown_index()
                           ? fmt::format("'{}'", vocabulary.word(*vocabulary.unknown_index()))
                           : std::string("none"),
                       unknown ? fmt::format("'{}'", *unknown) : std::string("none"));
  }
  return std::nullopt;
}

void check_same_vocabulary(const Vocabulary& expected, const Vocabulary& actual,
                           std::string_view what) {
  if (const std::optional<std::string> difference = vocabulary_difference(expected, actual)) {
    fail("{} does not match: {}", what, *difference);
  }
}

}  // namespace attograd::text
