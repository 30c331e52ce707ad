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

// The counts that size work or output rather than one allocation. Each is
// far above any real use and bounds what a mistyped or hostile value costs;
// --help names every limit and a refusal names the flag and the limit.
//
// --beam: K hypotheses per sentence, each scoring every target word per step
// and keeping its attention rows. `--beam 1000000000` took 2–3 GB in 15 s and
// the tutorial's --beam 4096 on two sentences ran past 30 s. The usual beam
// is 4–10; at 64 the default tutorial model (H = 256, 2,800 English words)
// takes about a tenth of a second and 1 MB more per sentence than greedy.
inline constexpr int64_t kMaxBeam = 64;
// --examples: translations printed. eval draws them without replacement, so
// it never prints more than the pairs it scored, whatever the flag says.
inline constexpr int64_t kMaxExamples = 100000;
// --iters (tutorial): 133 times the tutorial's 75,000, a few days at the
// tutorial's speed; the loss curve keeps one value per --plot-every.
inline constexpr int64_t kMaxIterations = 10000000;
// --epochs (batched, Transformer): 400 times d2l's 250.
inline constexpr int64_t kMaxEpochs = 100000;
// --threads: a thread per core is all that helps, and machines have far
// fewer than this; parallel::set_num_threads accepts up to 1024.
inline constexpr int64_t kMaxThreads = 256;

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
