// models/text/vocabulary.hpp — words <-> indices.
//
// A Vocabulary maps each word to a row of an embedding table and back. The
// first indices are reserved for special tokens given at construction; words
// follow in the order they were added. Each recipe reserves the special
// tokens it uses in a layout of its own; both layouts are defined below, and
// the recipes take their token ids from them:
//
//   tutorial (kTutorialLayout, make_tutorial_vocabulary)   0 SOS   1 EOS   2 <unk>
//     Words are added in order of first appearance in the training pairs.
//     <unk> is never seen in training; at evaluation an unseen word is
//     encoded as <unk> and counted, instead of crashing the lookup.
//
//   batched, d2l (kBatchedLayout, make_batched_vocabulary)   0 <pad>  1 <bos>  2 <eos>  3 <unk>
//     Words seen at least min_frequency times, by descending count, ties in
//     byte order of the word. Rarer words become <unk>. d2l puts <unk> at 0;
//     we put <pad> at 0 so that a zero-filled id array is all padding and
//     "id != 0" is the mask of real tokens.
//
// A vocabulary is part of a trained model: a checkpoint stores
// serialize()'s text and the loader checks it with check_same_vocabulary. So
// a layout, and with it every special token's id, never changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::text {

// ---------------------------------------------------------------- special tokens

// What a special token stands for; a layout lists the ones its recipe uses.
enum class TokenRole {
  pad,      // fills a row up to num_steps
  start,    // the decoder's first input (SOS, <bos>)
  end,      // ends every sentence (EOS, <eos>)
  unknown,  // a word the vocabulary lacks (<unk>)
};

struct SpecialToken {
  TokenRole role;
  std::string_view word;  // its spelling in the vocabulary
};

// A layout: the special tokens of one recipe in id order (the first has id 0).
using SpecialLayout = std::span<const SpecialToken>;

inline constexpr SpecialToken kTutorialLayout[] = {
    {TokenRole::start, "SOS"}, {TokenRole::end, "EOS"}, {TokenRole::unknown, "<unk>"}};
inline constexpr SpecialToken kBatchedLayout[] = {{TokenRole::pad, "<pad>"},
                                                  {TokenRole::start, "<bos>"},
                                                  {TokenRole::end, "<eos>"},
                                                  {TokenRole::unknown, "<unk>"}};

// The id of the token playing `role` in `layout`, at compile time. Asking a
// layout for a role it does not use (the tutorial's has no pad) does not compile.
consteval std::int64_t special_id(SpecialLayout layout, TokenRole role) {
  for (std::size_t i = 0; i < layout.size(); ++i) {
    if (layout[i].role == role) return static_cast<std::int64_t>(i);
  }
  throw "special_id: the layout has no token for this role";
}

// The spellings of `layout`'s tokens in id order, and the one unseen words
// become (std::nullopt if the layout has no unknown token).
std::vector<std::string> special_words(SpecialLayout layout);
std::optional<std::string> unknown_word(SpecialLayout layout);

// The result of encoding a sentence: its ids, and how many of its words were
// not in the vocabulary and became the unknown token.
struct Encoded {
  std::vector<std::int64_t> ids;
  std::int64_t unknown_count = 0;
};

class Vocabulary {
 public:
  // `special_tokens` take indices 0, 1, ... in order. `unknown_token`, if
  // given, must be one of them; it is what encode() maps unseen words to.
  explicit Vocabulary(std::vector<std::string> special_tokens,
                      std::optional<std::string> unknown_token = std::nullopt);

  // Adds `occurrences` occurrences of `word` and returns its index. A new
  // word gets the next index. Words must be non-empty and contain no space,
  // tab or newline (so serialize() can write one per line). Occurrences of a
  // special token are not counted: they are markers, not data.
  std::int64_t add_word(std::string_view word, std::int64_t occurrences = 1);
  // add_word for each space-separated word of `sentence`.
  void add_sentence(std::string_view sentence);

  std::int64_t size() const { return static_cast<std::int64_t>(words_.size()); }
  std::int64_t num_special() const { return num_special_; }
  std::optional<std::int64_t> unknown_index() const { return unknown_index_; }

  bool contains(std::string_view word) const { return find(word).has_value(); }
  std::optional<std::int64_t> find(std::string_view word) const;
  // The index of `word`; throws if it is not in the vocabulary.
  std::int64_t index(std::string_view word) const;
  // The word at `index`; throws if the index is out of range.
  const std::string& word(std::int64_t index) const;
  // How many times add_word saw the word at `index` (0 for special tokens).
  std::int64_t count(std::int64_t index) const;

  // Words -> ids. A word not in the vocabulary becomes the unknown token and
  // is counted; without an unknown token it is an error. No SOS/EOS is added.
  Encoded encode(std::string_view sentence) const;
  Encoded encode(const std::vector<std::string>& words) const;
  // Ids -> words; throws on an id out of range.
  std::vector<std::string> decode(std::span<const std::int64_t> ids) const;

  // A line-based text form, readable and diffable:
  //   attograd-vocabulary 1
  //   special 3 unknown 2        ("unknown none" without one)
  //   words 7
  //   SOS<TAB>0                  (one "word<TAB>count" line per index)
  //   ...
  std::string serialize() const;
  // Parses serialize()'s text; throws with the line number on bad input.
  static Vocabulary deserialize(std::string_view text);

  // Same words at the same indices, same special tokens and unknown token.
  // Counts are statistics of the data and are not compared.
  friend bool operator==(const Vocabulary& a, const Vocabulary& b);

 private:
  std::vector<std::string> words_;
  std::vector<std::int64_t> counts_;
  std::map<std::string, std::int64_t, std::less<>> index_of_;
  std::int64_t num_special_ = 0;
  std::optional<std::int64_t> unknown_index_;
};

// An empty vocabulary holding `layout`'s special tokens.
Vocabulary make_vocabulary(SpecialLayout layout);
// An empty vocabulary in the tutorial layout: SOS, EOS, <unk>.
Vocabulary make_tutorial_vocabulary();

// How often each word occurs in `sentences` (each a list of words).
std::map<std::string, std::int64_t> count_tokens(
    const std::vector<std::vector<std::string>>& sentences);

// A vocabulary from word counts: the special tokens, then every word with
// count >= min_frequency by descending count, ties in byte order of the
// word. Words equal to a special token are not added twice.
Vocabulary vocabulary_from_counts(const std::map<std::string, std::int64_t>& counts,
                                  std::vector<std::string> special_tokens,
                                  std::optional<std::string> unknown_token,
                                  std::int64_t min_frequency);

// The batched (d2l) vocabulary of tokenised sentences: <pad>, <bos>, <eos>,
// <unk>, then the words seen at least min_frequency times.
Vocabulary make_batched_vocabulary(const std::vector<std::vector<std::string>>& sentences,
                                   std::int64_t min_frequency = 2);

// A description of the first difference between two vocabularies ("index
// 57 is 'chat' in the first, 'chien' in the second"), or std::nullopt when
// they are equal.
std::optional<std::string> vocabulary_difference(const Vocabulary& expected,
                                                 const Vocabulary& actual);

// How `vocabulary`'s special tokens differ from `layout`'s ("id 0 is '<PAD>'
// where the layout has '<pad>'"), or std::nullopt when it holds exactly the
// layout's tokens at the layout's ids, with the layout's unknown token. A
// checkpoint's vocabulary is checked with it: the recipes take their token
// ids from the layout, not from the file.
std::optional<std::string> layout_difference(const Vocabulary& vocabulary, SpecialLayout layout);

// Throws attograd::Error "<what> does not match: <difference>" unless the two
// are equal; e.g. check_same_vocabulary(saved, rebuilt, "checkpoint source
// vocabulary").
void check_same_vocabulary(const Vocabulary& expected, const Vocabulary& actual,
                           std::string_view what);

}  // namespace attograd::text
