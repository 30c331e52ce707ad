// fuzz/fuzz_checks.hpp — what every fuzz target asserts about a refusal.
//
// Refusing hostile input is the expected outcome; a refusal that is long,
// unprintable or not an attograd::Error is a bug, and so is any crash, hang,
// leak or sanitizer report. A broken promise ends the run with abort(), which
// libFuzzer records as a crash together with the input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace attograd::fuzz {

// The longest refusal a hostile input may produce (library messages; the
// programs cut theirs to 4000 bytes).
inline constexpr std::size_t kMaxMessageBytes = 8000;

// Aborts unless `message` is short and holds no control characters but the
// newlines between listed problems.
inline void check_refusal(std::string_view message) {
  bool printable = true;
  for (char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && byte != '\n') || byte == 0x7f) printable = false;
  }
  if (message.size() > kMaxMessageBytes || !printable) {
    std::fprintf(stderr, "fuzz: a refusal of %zu bytes%s\n", message.size(),
                 printable ? "" : " with control characters");
    std::abort();
  }
}

}  // namespace attograd::fuzz
