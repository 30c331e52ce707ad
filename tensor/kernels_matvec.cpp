// tensor/kernels_matvec.cpp — matrix–vector products: the scalar
// specification first, then the xsimd version that must agree with it.
#include "tensor/kernels_matvec.hpp"

#include <array>

#include "tensor/kernels_simd.hpp"

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

using namespace simd;

// W rows of w per pass (16 floats with AVX-512): one FMA chain per row over
// its whole length, the rows one after another, so w is read front to back
// as one stream (x stays in L1); the chains of neighbouring rows are
// independent and overlap. horizontal_sums turns the W accumulators into W
// results, and the k left over after the last full batch (K mod W) are added
// as scalars. (Reading the W rows side by side instead, a batch of each in
// turn, makes W streams a row apart: 59 against 72 GB/s for a (2297,256)
// float matrix streaming from L3, AMD EPYC Zen 5.)
void matvec_nt(real* y, const real* x, const real* w, int64_t K, int64_t N) {
  const int64_t k_full = K - K % W;
  int64_t j = 0;
  for (; j + W <= N; j += W) {
    std::array<Batch, W> acc;
    for (int64_t r = 0; r < W; ++r) {
      const real* row = w + (j + r) * K;
      Batch total(real(0));
      for (int64_t k = 0; k < k_full; k += W) total = simd::fma(load(row + k), load(x + k), total);
      acc[r] = total;
    }
    std::array<real, W> sums;
    horizontal_sums(acc, sums.data());
    for (int64_t r = 0; r < W; ++r) {
      real total = sums[r];
      for (int64_t k = k_full; k < K; ++k) total += w[(j + r) * K + k] * x[k];
      y[j + r] = total;
    }
  }
  for (; j < N; ++j) {  // rows left over: one at a time
    Batch acc(real(0));
    for (int64_t k = 0; k < k_full; k += W) acc = simd::fma(load(w + j * K + k), load(x + k), acc);
    real total = reduce_sum(acc);
    for (int64_t k = k_full; k < K; ++k) total += w[j * K + k] * x[k];
    y[j] = total;
  }
}

namespace {

// y[j] (+)= Σ_{i<R} x[i] · w[i][j] for all N columns: R consecutive rows of w
// (row stride N) read left to right, y loaded and stored once per 2W columns.
// `first` starts from zero instead of reading y. Each y[j] gets its R terms in
// row order, one FMA at a time.
template <int64_t R>
void add_rows(real* y, const real* x, const real* w, int64_t N, bool first) {
  std::array<Batch, R> scale;
  for (int64_t i = 0; i < R; ++i) scale[i] = Batch(x[i]);
  int64_t j = 0;
  for (; j + 2 * W <= N; j += 2 * W) {
    Batch lo = first ? Batch(real(0)) : load(y + j);
    Batch hi = first ? Batch(real(0)) : load(y + j + W);
    for (int64_t i = 0; i < R; ++i) {
      lo = simd::fma(scale[i], load(w + i * N + j), lo);
      hi = simd::fma(scale[i], load(w + i * N + j + W), hi);
    }
    lo.store_unaligned(y + j);
    hi.store_unaligned(y + j + W);
  }
  for (; j + W <= N; j += W) {
    Batch acc = first ? Batch(real(0)) : load(y + j);
    for (int64_t i = 0; i < R; ++i) acc = simd::fma(scale[i], load(w + i * N + j), acc);
    acc.store_unaligned(y + j);
  }
  for (; j < N; ++j) {
    real total = first ? real(0) : y[j];
    for (int64_t i = 0; i < R; ++i) total += x[i] * w[i * N + j];
    y[j] = total;
  }
}

// add_rows for each group size vecmat uses, indexed by the number of rows.
constexpr int64_t kMaxRows = 8;
using AddRows = void (*)(real*, const real*, const real*, int64_t, bool);
constexpr std::array<AddRows, kMaxRows + 1> kAddRows = {nullptr,     add_rows<1>, add_rows<2>,
                                                        add_rows<3>, add_rows<4>, add_rows<5>,
                                                        add_rows<6>, add_rows<7>, add_rows<8>};

}  // namespace

// w is larger than L2 in the models this serves, so vecmat runs at the speed
// w streams in from L3, and that is fastest read row by row, front to back.
// (Strips of columns walked down all K rows read each row in short pieces a
// row apart, which the prefetchers follow poorly: ~28 GB/s against ~44 for
// the row order on 768×256 floats, Zen 1.) So y (a few KB) stays in L1 and
// takes up to 8 rows of w per pass, each row scaled by its broadcast x[k]:
// per 2W columns of y one load and one store for up to 16 loads of w. The K
// rows are split into groups as even as possible (K = 10 is 5 + 5, not 8 + 2):
// a group of one or two rows would spend more on y's loads and stores than on
// w. Every y[j] adds its K terms in the order k = 0, 1, …, as the scalar loop.
void vecmat(real* y, const real* x, const real* w, int64_t K, int64_t N) {
  if (N == 1) {  // w (K,1) is stored as a row (1,K): one dot product
    matvec_nt(y, x, w, K, 1);
    return;
  }
  if (K == 0) {
    for (int64_t j = 0; j < N; ++j) y[j] = 0;
    return;
  }
  const int64_t groups = (K + kMaxRows - 1) / kMaxRows;
  const int64_t base = K / groups, larger = K % groups;  // `larger` groups get base + 1 rows
  int64_t k = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t rows = base + (g < larger ? 1 : 0);
    kAddRows[rows](y, x + k, w + k * N, N, k == 0);
    k += rows;
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
