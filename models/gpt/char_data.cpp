// models/gpt/char_data.cpp — see char_data.hpp.
#include "models/gpt/char_data.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "models/text/normalize.hpp"
#include "tensor/error.hpp"
#include "tensor/input_file.hpp"
#include "tensor/printable.hpp"
#include "tensor/random.hpp"

namespace attograd::gpt {

namespace {

constexpr std::uint64_t kMaxTextBytes = uint64_t(256) << 20;

// The length of the UTF-8 sequence that starts with `lead` (valid text).
size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

std::string column_of(std::string_view bytes, int column) {
  std::string text;
  size_t start = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string_view::npos) end = bytes.size();
    std::string_view line = bytes.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t field_start = 0;
    for (int i = 0; i < column && field_start != std::string_view::npos; ++i) {
      field_start = line.find('\t', field_start);
      if (field_start != std::string_view::npos) ++field_start;
    }
    if (field_start != std::string_view::npos && !line.empty()) {
      const size_t field_end = line.find('\t', field_start);
      text.append(line.substr(field_start, field_end == std::string_view::npos
                                               ? std::string_view::npos
                                               : field_end - field_start));
      text += '\n';
    }
    start = end + 1;
  }
  return text;
}

}  // namespace

CharText char_text(std::string_view bytes, const std::string& where) {
  check(!bytes.empty(), "read_char_text: {} is empty; give a UTF-8 text file to train on", where);
  const size_t nul = bytes.find('\0');
  check(nul == std::string_view::npos,
        "read_char_text: {} holds a NUL byte at byte {}: a binary file, not text; give a UTF-8 "
        "text file",
        where, nul);
  if (const auto bad = text::first_invalid_utf8(bytes)) {
    fail(
        "read_char_text: {} is not UTF-8 at byte {}; convert it (iconv -t UTF-8) or give "
        "another file",
        where, *bad);
  }
  CharText text;
  for (size_t at = 0; at < bytes.size();) {
    const size_t length = sequence_length(static_cast<unsigned char>(bytes[at]));
    text.characters.emplace_back(bytes.substr(at, length));
    at += length;
  }
  return text;
}

CharText read_char_text(const std::filesystem::path& file, int tsv_column) {
  InputFile input(file, {"read_char_text", "pass a UTF-8 text file", kMaxTextBytes});
  std::string bytes(input.size(), '\0');
  input.read_at(0, bytes.data(), bytes.size());
  const std::string where = fmt::format("'{}'", input.shown_path());
  if (tsv_column < 0) return char_text(bytes, where);
  if (const auto bad = text::first_invalid_utf8(bytes)) {
    fail(
        "read_char_text: {} is not UTF-8 at byte {}; convert it (iconv -t UTF-8) or give "
        "another file",
        where, *bad);
  }
  return char_text(column_of(bytes, tsv_column),
                   fmt::format("column {} of {}", tsv_column + 1, where));
}

Vocabulary::Vocabulary(const std::vector<std::string>& characters) {
  const std::set<std::string> distinct(characters.begin(), characters.end());
  characters_.assign(distinct.begin(), distinct.end());  // bytewise = code-point order in UTF-8
}

std::vector<int64_t> Vocabulary::encode(const std::vector<std::string>& text) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto found = std::lower_bound(characters_.begin(), characters_.end(), text[i]);
    check(found != characters_.end() && *found == text[i],
          "Vocabulary: character {} '{}' is not in the model's vocabulary of {} characters; "
          "use only characters of the training text",
          i + 1, printable(text[i]), characters_.size());
    ids.push_back(found - characters_.begin());
  }
  return ids;
}

std::string Vocabulary::decode(const std::vector<int64_t>& ids) const {
  std::string text;
  for (int64_t id : ids) text += characters_.at(static_cast<size_t>(id));
  return text;
}

std::string Vocabulary::joined() const {
  std::string text;
  for (const std::string& c : characters_) text += c;
  return text;
}

Split split_90_10(const std::vector<int64_t>& ids) {
  const auto n = static_cast<std::ptrdiff_t>(0.9 * double(ids.size()));
  return {{ids.begin(), ids.begin() + n}, {ids.begin() + n, ids.end()}};
}

Batch windows(const std::vector<int64_t>& ids, const std::vector<int64_t>& offsets, int64_t block) {
  Batch out;
  out.inputs.reserve(offsets.size() * size_t(block));
  out.targets.reserve(offsets.size() * size_t(block));
  for (const int64_t offset : offsets) {
    check(offset >= 0 && offset + block < int64_t(ids.size()),
          "windows: a window of {} + 1 ids at {} does not fit in {} ids", block, offset,
          ids.size());
    const auto at = ids.begin() + offset;
    out.inputs.insert(out.inputs.end(), at, at + block);
    out.targets.insert(out.targets.end(), at + 1, at + block + 1);
  }
  return out;
}

Batch random_batch(const std::vector<int64_t>& ids, int64_t batch, int64_t block, uint64_t seed) {
  const auto size = static_cast<int64_t>(ids.size());
  check(size > block, "random_batch: {} ids cannot hold a window of {} + 1", size, block);
  Generator generator(seed);
  std::vector<int64_t> offsets(static_cast<size_t>(batch));
  for (int64_t& offset : offsets) {
    offset = static_cast<int64_t>(generator.uniform() * double(size - block));
  }
  return windows(ids, offsets, block);
}

std::vector<int64_t> window_offsets(int64_t size, int64_t block) {
  std::vector<int64_t> offsets;
  for (int64_t start = 0; start + block + 1 <= size; start += block) offsets.push_back(start);
  return offsets;
}

}  // namespace attograd::gpt
