// tensor/printable.hpp — text from outside (a file, stdin, a command line)
// made safe to quote in a message.
//
// A file or a command line can hold anything: escape sequences that would
// drive the terminal, names a megabyte long. Every message or warning that
// quotes such text — a word, a data line, a path — passes it through
// printable(), so it is shown, never obeyed, and stays short:
//
//   printable("conv\x1b[2J")       ->  conv\x1b[2J   (the ESC shown, not obeyed)
//   printable(ten_megabyte_word)   ->  its first 80 bytes, then "…"
//
// nn/safetensors_messages.hpp adds the list of problems a refusal shows.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace attograd {

// Bytes of a name (or other text taken from outside) quoted in a message.
inline constexpr size_t kMaxQuotedChars = 80;

namespace printable_detail {

// The length of the valid UTF-8 sequence starting at text[i], or 0.
inline size_t utf8_sequence_length(std::string_view text, size_t i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  const size_t length = lead >= 0xf0 && lead <= 0xf4 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc2 ? 2 : 0;
  if (length == 0 || i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) return 0;
  }
  return length;
}

}  // namespace printable_detail

// `text` as it may be shown on a terminal: control characters (C0, DEL and
// the C1 range, which terminals obey as escapes) and bytes that are not UTF-8
// become \xNN or \u00NN, and anything past `max_chars` bytes is cut, ending
// in "…".
inline std::string printable(std::string_view text, size_t max_chars = kMaxQuotedChars) {
  std::string out;
  size_t i = 0;
  while (i < text.size() && out.size() < max_chars) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7f) {
      out += text[i++];
      continue;
    }
    const size_t length = byte >= 0x80 ? printable_detail::utf8_sequence_length(text, i) : 0;
    const auto second = length > 0 ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (length == 0) {  // a control character or a byte that is not UTF-8
      out += fmt::format("\\x{:02x}", byte);
      ++i;
    } else if (byte == 0xc2 && second <= 0x9f) {  // U+0080..U+009F, the C1 controls
      out += fmt::format("\\u00{:02x}", second);
      i += 2;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  if (i < text.size()) out += "…";
  return out;
}

}  // namespace attograd
