// examples/translate/size_limits.hpp — the largest model sizes `translate`
// accepts, from a flag or from a checkpoint's metadata.
//
// Each bounds an allocation: H = 4096 already makes one GRU weight 3·H·H
// floats (200 MB), and a batch of 4096 sentences of 512 steps at H = 4096
// would need terabytes of activations. A value beyond them is refused with a
// message naming the flag or the file, instead of allocating until the
// machine gives up.
#pragma once

#include <cstdint>
#include <string>

#include "nn/safetensors_messages.hpp"
#include "tensor/error.hpp"

namespace attograd {

inline constexpr int64_t kMaxHidden = 4096;         // --hidden, --embed, hidden_size, embed_size
inline constexpr int64_t kMaxLayers = 16;           // --layers, num_layers
inline constexpr int64_t kMaxBatch = 4096;          // --batch
inline constexpr int64_t kMaxSteps = 512;           // --num-steps, num_steps, max_length
inline constexpr int64_t kMaxVocabulary = 1 << 22;  // words of one vocabulary

// Refuses a size read from checkpoint `path` (metadata key `key`) outside
// [low, high].
inline void check_checkpoint_size(const std::string& path, const char* key, int64_t value,
                                  int64_t low, int64_t high) {
  check(low <= value && value <= high,
        "{}: the checkpoint's {} is {}, outside [{}, {}] (the file is damaged or was edited; "
        "retrain to get a checkpoint that fits)",
        nn::printable(path, 300), key, value, low, high);
}

// The same for a dropout probability, which must lie in [0, 1).
inline void check_checkpoint_dropout(const std::string& path, double dropout) {
  check(dropout >= 0 && dropout < 1,
        "{}: the checkpoint's dropout is {}, outside [0, 1) (the file is damaged or was edited)",
        nn::printable(path, 300), dropout);
}

}  // namespace attograd
