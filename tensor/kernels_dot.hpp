// tensor/kernels_dot.hpp — the order a one-row product sums in: dot_batches.
//
// matvec_nt, few_rows_nt (tensor/kernels_matvec.cpp) and the batched dot
// products of attention pooling (tensor/kernels_matmul.cpp) all sum each
// entry's whole batches through this one function, so a row gives the same
// bits whichever of them computes it (tests/tensor/test_kernels_matvec.cpp).
#pragma once

#include <cstdint>

#include "tensor/kernels_simd.hpp"

#if ATTOGRAD_USE_SIMD

namespace attograd::kernels::simd {

// sums[g] = Σ of w[k] · x[g·x_step + k] over k < k_full (a multiple of W),
// lane by lane, for G rows of x against one row of w: four FMA chains, chain
// c taking the batches k/W ≡ c (mod 4), added as (c0 + c1) + (c2 + c3). The
// order every one-row product sums in (matvec_nt, few_rows_nt and the
// batched dot products, tensor/kernels_matvec.cpp and kernels_matmul.cpp).
// Four chains because one waits an FMA's latency per batch: a (2297,256)
// float row of 32 AVX2 batches as one chain is bound by that latency rather
// than by memory (bench/bench_kernels, `matvec_nt (2297,256) @ (256)`).
inline constexpr int64_t kDotChains = 4;

template <int64_t G>
[[gnu::always_inline]] inline void dot_batches(const real* w, const real* x, int64_t x_step,
                                               int64_t k_full, Batch* sums) {
  Batch chain[kDotChains][G];
#pragma GCC unroll 16
  for (int64_t c = 0; c < kDotChains; ++c) {
#pragma GCC unroll 16
    for (int64_t g = 0; g < G; ++g) chain[c][g] = Batch(real(0));
  }
  int64_t k = 0;
  for (; k + kDotChains * W <= k_full; k += kDotChains * W) {
#pragma GCC unroll 16
    for (int64_t c = 0; c < kDotChains; ++c) {
      const Batch weights = load(w + k + c * W);
#pragma GCC unroll 16
      for (int64_t g = 0; g < G; ++g) {
        chain[c][g] = simd::fma(weights, load(x + g * x_step + k + c * W), chain[c][g]);
      }
    }
  }
  // The last k_full/W mod 4 batches, to chains 0, 1, 2 in turn.
#pragma GCC unroll 16
  for (int64_t c = 0; c + 1 < kDotChains; ++c) {
    if (k + c * W < k_full) {
      const Batch weights = load(w + k + c * W);
#pragma GCC unroll 16
      for (int64_t g = 0; g < G; ++g) {
        chain[c][g] = simd::fma(weights, load(x + g * x_step + k + c * W), chain[c][g]);
      }
    }
  }
#pragma GCC unroll 16
  for (int64_t g = 0; g < G; ++g) {
    sums[g] = (chain[0][g] + chain[1][g]) + (chain[2][g] + chain[3][g]);
  }
}

}  // namespace attograd::kernels::simd

#endif  // ATTOGRAD_USE_SIMD
