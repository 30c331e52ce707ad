// models/gpt/char_data.hpp — text as characters for the GPT: the
// vocabulary, nanoGPT's 90/10 split, random training windows and the
// validation loss over fixed windows.
//
//   const gpt::CharText text = gpt::read_char_text("input.txt");   // UTF-8
//   const gpt::Vocabulary vocabulary(text.characters);
//   const gpt::Split split = gpt::split_90_10(vocabulary.encode(text.characters));
//   const gpt::Batch batch = gpt::random_batch(split.train, 12, 64, 1234);
//
// A character is one Unicode code point, held as its UTF-8 bytes; the
// vocabulary is the distinct characters in code-point order, so a text and
// its id sequence go both ways.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::gpt {

// A text split into characters (each its UTF-8 bytes).
struct CharText {
  std::vector<std::string> characters;
};

// The file's text. Throws Error naming the file and the byte offset for a
// file that is missing, empty, binary (a NUL byte) or not UTF-8. A .tsv
// file of sentence pairs (data/eng-fra.tsv) gives the column `tsv_column`
// (0 the first) of its lines joined by newlines; -1 takes the file as it is.
CharText read_char_text(const std::filesystem::path& file, int tsv_column = -1);
// The same for text in memory; `where` names it in errors.
CharText char_text(std::string_view bytes, const std::string& where);

class Vocabulary {
 public:
  explicit Vocabulary(const std::vector<std::string>& characters);  // distinct, sorted
  int64_t size() const { return static_cast<int64_t>(characters_.size()); }
  // Throws Error naming the first character outside the vocabulary and its
  // position in `text`.
  std::vector<int64_t> encode(const std::vector<std::string>& text) const;
  std::string decode(const std::vector<int64_t>& ids) const;
  const std::vector<std::string>& characters() const { return characters_; }
  // The characters as one UTF-8 string (a checkpoint's metadata).
  std::string joined() const;

 private:
  std::vector<std::string> characters_;
};

struct Split {
  std::vector<int64_t> train;       // the first 90 % of the ids
  std::vector<int64_t> validation;  // the last 10 %
};
// nanoGPT's split: n = ⌊0.9 · size⌋ ids train, the rest validate.
Split split_90_10(const std::vector<int64_t>& ids);

struct Batch {
  std::vector<int64_t> inputs;   // B·T ids, row b the window at offset o_b
  std::vector<int64_t> targets;  // the same windows one id later
};
// The windows of T + 1 ids at `offsets`: row b the T ids from offsets[b], its
// targets the same T one id later.
Batch windows(const std::vector<int64_t>& ids, const std::vector<int64_t>& offsets, int64_t block);
// B windows of T + 1 ids at offsets drawn uniformly from [0, size − T),
// from a generator seeded by `seed` alone (so step i's batch is a function
// of (seed, i) and a resumed run draws the batches it would have drawn).
Batch random_batch(const std::vector<int64_t>& ids, int64_t batch, int64_t block, uint64_t seed);

// The validation windows: consecutive, non-overlapping, T inputs each (the
// window starting at j·T, while j·T + T + 1 ≤ size), so that the mean loss
// over them is the same number for any program that reads the split.
std::vector<int64_t> window_offsets(int64_t size, int64_t block);

}  // namespace attograd::gpt
