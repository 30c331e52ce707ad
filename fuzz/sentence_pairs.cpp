// fuzz/sentence_pairs.cpp — libFuzzer target: any bytes as a tab-separated
// file of sentence pairs, read with both normalisers and both directions.
// Bad lines are skipped and counted; nothing else may happen.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "fuzz/fuzz_checks.hpp"
#include "models/text/pairs.hpp"
#include "tensor/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attograd::text;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const bool reverse = size > 0 && (data[0] & 1) != 0;
  for (Normalization normalization : {Normalization::kTutorial, Normalization::kD2l}) {
    std::istringstream in(text);
    try {
      const PairSet set = read_pairs_from_stream(
          in, "fuzz.tsv", ReadOptions().reverse(reverse).normalization(normalization));
      for (const auto& skipped : set.report.skipped_examples) {
        attograd::fuzz::check_refusal(skipped.message);
      }
      // Every line is counted once, kept or skipped.
      if (set.report.lines_read != set.report.pairs_kept + set.report.lines_skipped()) std::abort();
    } catch (const attograd::Error& error) {
      attograd::fuzz::check_refusal(error.what());
    }
  }
  return 0;
}
