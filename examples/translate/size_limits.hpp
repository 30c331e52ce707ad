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

inline constexpr int64_t kMaxHidden = 4096;         // --hidden, --embed, --heads
inline constexpr int64_t kMaxFfn = 4 * kMaxHidden;  // --ffn
inline constexpr int64_t kMaxLayers = 16;           // --layers, --blocks
inline constexpr int64_t kMaxBatch = 4096;          // --batch
inline constexpr int64_t kMaxReplicas = 64;         // --replicas
inline constexpr int64_t kMaxSteps = 512;           // --num-steps, --max-length, and checkpoints'

// Refuses a size read from checkpoint `path` (metadata key `key`) outside
// [low, high]: for the sizes no weight shape shows (num_steps, max_length);
// the others are checked against the weights (checkpoint_sizes.hpp).
inline void check_checkpoint_size(const std::string& path, const char* key, int64_t value,
                                  int64_t low, int64_t high) {
  check(low <= value && value <= high,
        "{}: the checkpoint's {} is {}, outside [{}, {}] (the file is damaged or was edited; "
        "retrain to get a checkpoint that fits)",
        nn::printable(path, 300), key, value, low, high);
}

}  // namespace attograd
