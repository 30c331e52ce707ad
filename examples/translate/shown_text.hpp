// examples/translate/shown_text.hpp — sentences from a data file (or words
// from a checkpoint's vocabulary) as `translate eval` prints them.
//
// A data line may hold escape sequences or be megabytes long; eval prints it
// escaped and cut (tensor/printable.hpp), so what reaches the terminal is
// shown, never obeyed: "> tom a vu \x1b[2J." for a line holding an ESC.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "tensor/printable.hpp"

namespace attograd::translate_text {

// Bytes of one sentence shown by eval; longer ones end in "…".
inline constexpr std::size_t kMaxShownSentenceBytes = 1000;

inline std::string shown_sentence(std::string_view sentence) {
  return printable(sentence, kMaxShownSentenceBytes);
}

}  // namespace attograd::translate_text
