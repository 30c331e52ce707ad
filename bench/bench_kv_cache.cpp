// bench/bench_kv_cache.cpp — what the GPT's KV cache saves when sampling:
// 500 characters with the cache and with the context recomputed for each
// (gpt::sample's two paths, models/gpt/sample.hpp), at block 64 and 256,
// on the CPU recipe's model (4 blocks, 4 heads, 128 channels, 103
// characters, random weights: the work does not depend on them).
//
//   build/bench/bench_kv_cache [--tokens 500] [--rounds 3]
//
// One thread, pinned; thread CPU time (bench/timing.hpp); the median of the
// rounds, each path alternating with the other. Both paths emit the same
// characters (tests/models/test_gpt.cpp), which the benchmark checks too.
#include <fmt/core.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/timing.hpp"
#include "models/gpt/gpt.hpp"
#include "models/gpt/sample.hpp"
#include "tensor/kernels.hpp"
#include "tensor/parallel.hpp"

using namespace attograd;

int main(int argc, char** argv) {
  int64_t tokens = 500;
  int rounds = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--tokens" && i + 1 < argc) {
      tokens = std::max<int64_t>(1, std::atoll(argv[++i]));
    } else if (arg == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else {
      fmt::print(stderr, "usage: bench_kv_cache [--tokens N] [--rounds N]\n");
      return 2;
    }
  }
  parallel::set_num_threads(1);
  const bench::PinnedToOneCpu pinned;
  fmt::print("GPT sampling, {} characters after a 1-character prompt ({}, {}; medians of {})\n\n",
             tokens, kernels::simd_description(), pinned.describe(), rounds);
  fmt::print("{:>6} {:>14} {:>16} {:>8}\n", "block", "cache ms", "recompute ms", "speed");
  for (const int64_t block : {64, 256}) {
    Generator generator(1);
    gpt::GPT model(gpt::GPTOptions(103).block_size(block).n_layer(4).n_head(4).n_embd(128),
                   generator);
    std::vector<double> cached, recomputed;
    std::vector<int64_t> first, second;
    for (int round = 0; round < rounds; ++round) {
      for (const bool cache : {true, false}) {
        const double start = bench::thread_seconds();
        const std::vector<int64_t> out = gpt::sample(
            model, {0},
            {.tokens = tokens, .temperature = 1.0, .top_k = 0, .seed = 5, .kv_cache = cache});
        (cache ? cached : recomputed).push_back(1e3 * (bench::thread_seconds() - start));
        (cache ? first : second) = out;
      }
    }
    const double a = bench::median(cached), b = bench::median(recomputed);
    fmt::print("{:>6} {:>14.1f} {:>16.1f} {:>7.1f}x{}\n", block, a, b, b / a,
               first == second ? "" : "  (the two paths drew different characters!)");
  }
  fmt::print("\nspeed = recompute's time / the cache's.\n");
  return 0;
}
