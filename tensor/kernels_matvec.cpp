// tensor/kernels_matvec.cpp — matrix–vector products: the scalar
// specification first, then the xsimd version that must agree with it.
#include "tensor/kernels_matvec.hpp"

#include <array>

#include "tensor/xsimd.hpp"

namespace attograd::kernels {

namespace scalar {

void matvec_nt(real* y, const real* x, const real* w, int64_t K, int64_t N) {
  for (int64_t j = 0; j < N; ++j) {
    real total = 0;
    for (int64_t k = 0; k < K; ++k) total += w[j * K + k] * x[k];
    y[j] = total;
  }
}

void vecmat(real* y, const real* x, const real* w, int64_t K, int64_t N) {
  for (int64_t j = 0; j < N; ++j) y[j] = 0;
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t j = 0; j < N; ++j) y[j] += x[k] * w[k * N + j];
  }
}

}  // namespace scalar

bool matvec_forward(real* c, const real* a, Layout a_layout, const real* b, Layout b_layout,
                    int64_t M, int64_t K, int64_t N) {
  if (M != 1 || a_layout != Layout::normal) return false;
  if (b_layout == Layout::transposed) {
    matvec_nt(c, a, b, K, N);  // b holds bᵀ, (N,K)
  } else {
    vecmat(c, a, b, K, N);
  }
  return true;
}

#if ATTOGRAD_USE_SIMD

namespace {

using Batch = xsimd::batch<real>;
constexpr int64_t W = static_cast<int64_t>(Batch::size);

Batch load(const real* p) { return Batch::load_unaligned(p); }

}  // namespace

// W rows of w per pass (8 floats with AVX2): W independent FMA chains share
// each load of x, and one haddp turns the W accumulators into W results.
// The k left over after the last full batch (K mod W) are added as scalars.
void matvec_nt(real* y, const real* x, const real* w, int64_t K, int64_t N) {
  const int64_t k_full = K - K % W;
  int64_t j = 0;
  for (; j + W <= N; j += W) {
    std::array<Batch, W> acc;
    acc.fill(Batch(real(0)));
    for (int64_t k = 0; k < k_full; k += W) {
      const Batch xv = load(x + k);
      for (int64_t r = 0; r < W; ++r) acc[r] = xsimd::fma(load(w + (j + r) * K + k), xv, acc[r]);
    }
    alignas(64) std::array<real, W> sums;
    xsimd::haddp(acc.data()).store_aligned(sums.data());
    for (int64_t r = 0; r < W; ++r) {
      real total = sums[r];
      for (int64_t k = k_full; k < K; ++k) total += w[(j + r) * K + k] * x[k];
      y[j + r] = total;
    }
  }
  for (; j < N; ++j) {  // rows left over: one at a time
    Batch acc(real(0));
    for (int64_t k = 0; k < k_full; k += W) acc = xsimd::fma(load(w + j * K + k), load(x + k), acc);
    real total = xsimd::hadd(acc);
    for (int64_t k = k_full; k < K; ++k) total += w[j * K + k] * x[k];
    y[j] = total;
  }
}

// Strips of 4W columns of y stay in registers over all k, with separate
// accumulators for even and odd k (eight chains in flight); narrower strips
// of W, then single columns, finish the row.
void vecmat(real* y, const real* x, const real* w, int64_t K, int64_t N) {
  if (N == 1) {  // w (K,1) is stored as a row (1,K): one dot product
    matvec_nt(y, x, w, K, 1);
    return;
  }
  constexpr int64_t V = 4;
  int64_t j = 0;
  for (; j + V * W <= N; j += V * W) {
    std::array<Batch, V> even, odd;
    even.fill(Batch(real(0)));
    odd.fill(Batch(real(0)));
    int64_t k = 0;
    for (; k + 2 <= K; k += 2) {
      const real* row0 = w + k * N + j;
      const real* row1 = row0 + N;
      const Batch s0(x[k]), s1(x[k + 1]);
      for (int64_t v = 0; v < V; ++v) {
        even[v] = xsimd::fma(s0, load(row0 + v * W), even[v]);
        odd[v] = xsimd::fma(s1, load(row1 + v * W), odd[v]);
      }
    }
    if (k < K) {
      const Batch s0(x[k]);
      for (int64_t v = 0; v < V; ++v)
        even[v] = xsimd::fma(s0, load(w + k * N + j + v * W), even[v]);
    }
    for (int64_t v = 0; v < V; ++v) (even[v] + odd[v]).store_unaligned(y + j + v * W);
  }
  for (; j + W <= N; j += W) {
    Batch even(real(0)), odd(real(0));
    int64_t k = 0;
    for (; k + 2 <= K; k += 2) {
      even = xsimd::fma(Batch(x[k]), load(w + k * N + j), even);
      odd = xsimd::fma(Batch(x[k + 1]), load(w + (k + 1) * N + j), odd);
    }
    if (k < K) even = xsimd::fma(Batch(x[k]), load(w + k * N + j), even);
    (even + odd).store_unaligned(y + j);
  }
  for (; j < N; ++j) {
    real total = 0;
    for (int64_t k = 0; k < K; ++k) total += x[k] * w[k * N + j];
    y[j] = total;
  }
}

#else  // ATTOGRAD_USE_SIMD off: the library runs the reference loops.

void matvec_nt(real* y, const real* x, const real* w, int64_t K, int64_t N) {
  scalar::matvec_nt(y, x, w, K, N);
}
void vecmat(real* y, const real* x, const real* w, int64_t K, int64_t N) {
  scalar::vecmat(y, x, w, K, N);
}

#endif

}  // namespace attograd::kernels
