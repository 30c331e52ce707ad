// fuzz/normalizer.cpp — libFuzzer target: any bytes as one sentence, through
// both normalisers and the word helpers. Invalid UTF-8 must come back as
// "no sentence" (std::nullopt), never as a crash; a normalised sentence must
// be valid UTF-8, and the tutorial's (single spaces, trimmed) must survive
// splitting and joining unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "models/text/normalize.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attograd::text;
  const std::string_view sentence(reinterpret_cast<const char*>(data), size);
  const bool valid = !first_invalid_utf8(sentence).has_value();
  const std::optional<std::string> tutorial = normalize_sentence(sentence);
  const std::optional<std::string> d2l = preprocess_d2l(sentence);
  for (const std::optional<std::string>& normalized : {tutorial, d2l}) {
    if (normalized.has_value() != valid) std::abort();
    if (!normalized) continue;
    if (first_invalid_utf8(*normalized)) std::abort();
    if (split_words(*normalized).size() != count_words(*normalized)) std::abort();
  }
  if (tutorial && join_words(split_words(*tutorial)) != *tutorial) std::abort();
  return 0;
}
