// models/text/normalize.cpp — the tutorial and d2l sentence normalisers.
//
// All Unicode knowledge (decoding UTF-8, canonical decompositions, general
// categories, case mappings) comes from utf8proc; this file only applies the
// rules stated in normalize.hpp.
#include "models/text/normalize.hpp"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

namespace attograd::text {
namespace {

// Decodes one codepoint at `text[offset]`. Returns the number of bytes it
// used and stores the codepoint, or returns a negative number when the bytes
// there are not valid UTF-8.
std::ptrdiff_t decode_codepoint(std::string_view text, std::size_t offset,
                                utf8proc_int32_t& codepoint) {
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data()) + offset;
  const auto remaining = static_cast<utf8proc_ssize_t>(text.size() - offset);
  return utf8proc_iterate(bytes, remaining, &codepoint);
}

void append_codepoint(std::string& out, utf8proc_int32_t codepoint) {
  std::array<utf8proc_uint8_t, 4> buffer{};
  const utf8proc_ssize_t length = utf8proc_encode_char(codepoint, buffer.data());
  out.append(reinterpret_cast<const char*>(buffer.data()), static_cast<std::size_t>(length));
}

// Builds the tutorial's output one character at a time. Letters are written
// directly; a run of separators only sets `pending_space`, which becomes one
// space before the next word, so spaces are collapsed and trimmed for free.
class TutorialWriter {
 public:
  void letter(char c) {
    if (pending_space_ && !out_.empty()) out_ += ' ';
    pending_space_ = false;
    out_ += c;
  }
  // '.', '!' or '?': always a space before it, none forced after it.
  void punctuation(char c) {
    if (!out_.empty()) out_ += ' ';
    pending_space_ = false;
    out_ += c;
  }
  void separator() { pending_space_ = true; }

  // Routes one codepoint that survived the mark stripping.
  void codepoint(utf8proc_int32_t codepoint) {
    if (codepoint >= 'a' && codepoint <= 'z') {
      letter(static_cast<char>(codepoint));
    } else if (codepoint >= 'A' && codepoint <= 'Z') {
      letter(static_cast<char>(codepoint - 'A' + 'a'));
    } else if (codepoint == '.' || codepoint == '!' || codepoint == '?') {
      punctuation(static_cast<char>(codepoint));
    } else {
      separator();
    }
  }

  std::string take() { return std::move(out_); }

 private:
  std::string out_;
  bool pending_space_ = false;
};

}  // namespace

std::optional<std::size_t> first_invalid_utf8(std::string_view text) {
  std::size_t offset = 0;
  while (offset < text.size()) {
    utf8proc_int32_t codepoint = 0;
    const std::ptrdiff_t used = decode_codepoint(text, offset, codepoint);
    if (used <= 0) return offset;
    offset += static_cast<std::size_t>(used);
  }
  return std::nullopt;
}

std::optional<std::string> normalize_sentence(std::string_view sentence) {
  TutorialWriter writer;
  // A canonical decomposition is at most 4 codepoints long (Hangul syllables
  // give 3, stacked accents up to 4); the loop below copes with longer ones.
  std::vector<utf8proc_int32_t> decomposed(8);
  std::size_t offset = 0;
  while (offset < sentence.size()) {
    utf8proc_int32_t codepoint = 0;
    const std::ptrdiff_t used = decode_codepoint(sentence, offset, codepoint);
    if (used <= 0) return std::nullopt;
    offset += static_cast<std::size_t>(used);

    // NFD of this one character. Canonical reordering of marks across
    // characters does not matter here: every mark is dropped or becomes a
    // separator.
    utf8proc_ssize_t count = 0;
    while (true) {
      count = utf8proc_decompose_char(codepoint, decomposed.data(),
                                      static_cast<utf8proc_ssize_t>(decomposed.size()),
                                      UTF8PROC_DECOMPOSE, nullptr);
      if (count < 0) return std::nullopt;  // Only for invalid codepoints.
      if (static_cast<std::size_t>(count) <= decomposed.size()) break;
      decomposed.resize(static_cast<std::size_t>(count));
    }
    for (utf8proc_ssize_t i = 0; i < count; ++i) {
      const utf8proc_int32_t part = decomposed[static_cast<std::size_t>(i)];
      if (utf8proc_category(part) == UTF8PROC_CATEGORY_MN) continue;  // Rule 1.
      writer.codepoint(part);
    }
  }
  return writer.take();
}

std::optional<std::string> preprocess_d2l(std::string_view sentence) {
  std::string out;
  out.reserve(sentence.size() + 8);
  utf8proc_int32_t previous = -1;  // No character before the first one.
  std::size_t offset = 0;
  while (offset < sentence.size()) {
    utf8proc_int32_t codepoint = 0;
    const std::ptrdiff_t used = decode_codepoint(sentence, offset, codepoint);
    if (used <= 0) return std::nullopt;
    offset += static_cast<std::size_t>(used);

    if (codepoint == 0x202F || codepoint == 0x00A0) codepoint = ' ';  // No-break spaces.
    codepoint = utf8proc_tolower(codepoint);
    const bool is_punctuation =
        codepoint == ',' || codepoint == '.' || codepoint == '!' || codepoint == '?';
    if (is_punctuation && previous != -1 && previous != ' ') out += ' ';
    append_codepoint(out, codepoint);
    previous = codepoint;
  }
  return out;
}

std::vector<std::string> split_words(std::string_view sentence) {
  std::vector<std::string> words;
  std::size_t start = 0;
  while (start < sentence.size()) {
    const std::size_t end = std::min(sentence.find(' ', start), sentence.size());
    if (end > start) words.emplace_back(sentence.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

std::string join_words(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += ' ';
    out += words[i];
  }
  return out;
}

std::size_t count_words(std::string_view sentence) {
  std::size_t count = 0;
  bool in_word = false;
  for (const char c : sentence) {
    if (c == ' ') {
      in_word = false;
    } else if (!in_word) {
      in_word = true;
      ++count;
    }
  }
  return count;
}

}  // namespace attograd::text
