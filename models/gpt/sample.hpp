// models/gpt/sample.hpp — continuing a prompt with the GPT, one character
// at a time, with or without the KV cache.
//
//   const std::vector<int64_t> out = gpt::sample(model, prompt_ids,
//       {.tokens = 500, .temperature = 0.8, .top_k = 200, .seed = 1, .kv_cache = true});
//
// Each new character is drawn from softmax(logits / temperature) over the
// top_k most likely (all with top_k = 0), by one uniform draw per character
// from a generator seeded by `seed`.
//
// The context a character is predicted from is the characters since the
// last window start, at most block_size. When it is full, the window
// restarts at its last ⌊block_size/2⌋ characters (which, for the cache,
// are read again into a new cache in one batched pass, GPT::prefill) — so with the cache each
// character costs one position through the model, and without it (kv_cache = false) the whole
// context is recomputed: the same contexts either way, so the same seed gives the same characters
// (a test proves it).
#pragma once

#include <cstdint>
#include <vector>

#include "models/gpt/gpt.hpp"

namespace attograd::gpt {

struct SampleOptions {
  int64_t tokens = 500;      // characters to add
  double temperature = 1.0;  // > 0
  int64_t top_k = 0;         // 0: every character
  uint64_t seed = 0;
  bool kv_cache = true;
};

// prompt: at least one id -> the `tokens` ids that follow it.
std::vector<int64_t> sample(GPT& model, const std::vector<int64_t>& prompt,
                            const SampleOptions& options);

// The id drawn from `logits` (V) with `uniform` in [0, 1): softmax(logits /
// temperature) over the top_k largest, inverted at `uniform`.
int64_t draw(const Tensor& logits, double temperature, int64_t top_k, double uniform);

}  // namespace attograd::gpt
