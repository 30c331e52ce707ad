// tensor/kernels_matvec.cpp — matrix–vector products: the scalar
// specification first, then the xsimd version that must agree with it.
#include "tensor/kernels_matvec.hpp"

#include <array>

#include "tensor/kernels_dot.hpp"
#include "tensor/kernels_simd.hpp"

namespace attograd::kernels {

namespace scalar {

void matvec_nt(real* y, const real* x, const real* w, int64_t K, int64_t N, int64_t ldw) {
  for (int64_t j = 0; j < N; ++j) {
    real total = 0;
    for (int64_t k = 0; k < K; ++k) total += w[j * ldw + k] * x[k];
    y[j] = total;
  }
}

void few_rows_nt(real* y, const real* x, const real* w, int64_t M, int64_t K, int64_t N,
                 int64_t ldw) {
  for (int64_t m = 0; m < M; ++m) matvec_nt(y + m * N, x + m * K, w, K, N, ldw);
}

void vecmat(real* y, const real* x, const real* w, int64_t K, int64_t N, int64_t ldw) {
  for (int64_t j = 0; j < N; ++j) y[j] = 0;
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t j = 0; j < N; ++j) y[j] += x[k] * w[k * ldw + j];
  }
}

}  // namespace scalar

bool matvec_forward(real* c, const real* a, Layout a_layout, const real* b, Layout b_layout,
                    int64_t M, int64_t K, int64_t N) {
  if (a_layout != Layout::normal || M < 1 || M > kFewRows) return false;
  if (M > 1) {
    if (b_layout != Layout::transposed) return false;
    few_rows_nt(c, a, b, M, K, N);  // b holds bᵀ, (N,K)
    return true;
  }
  if (b_layout == Layout::transposed) {
    matvec_nt(c, a, b, K, N);  // b holds bᵀ, (N,K)
  } else {
    vecmat(c, a, b, K, N);
  }
  return true;
}

#if ATTOGRAD_USE_SIMD

using namespace simd;

// Every y[m][j] is dot_batches' four FMA chains over the full batches of k
// (tensor/kernels_dot.hpp), their lanes summed as reduce_sum's pairwise
// tree, then the k past the last full batch (K mod W) added one at a time:
// one order for every entry, however the rows are grouped below, so a row of
// x gives the same bits alone (matvec_nt) or among others.
//
// The W chains of one pass fill the W accumulators horizontal_sums reduces
// together: R rows of w against G rows of x (R·G = W; G = 1 for one row of
// x). Per batch of k, R loads of w and G of x feed W FMAs. The passes walk w
// front to back in blocks of R rows, which stay in L1 while every group of x
// passes over them, so w streams in once however many rows x has; x stays
// in L1 throughout. (Walking the R rows of a block one after another rather
// than side by side makes one stream instead of R a row apart: 59 against
// 72 GB/s for a (2297,256) float matrix streaming from L3, AMD EPYC Zen 5,
// one row of x.)
namespace {

// y[m][j0 + r] for m < G, r < R: the block's W = R·G sums. (The loops over
// r and g are unrolled by request: GCC leaves such short loops rolled, and
// the chains then live in memory instead of registers.)
template <int64_t R, int64_t G>
void nt_block(real* y, int64_t ldy, const real* x, const real* w, int64_t ldw, int64_t K,
              int64_t j0) {
  static_assert(R * G == W);
  const int64_t k_full = K - K % W;
  std::array<Batch, W> acc;
#pragma GCC unroll 16
  for (int64_t r = 0; r < R; ++r) {
    const real* row = w + (j0 + r) * ldw;
    Batch total[G];
    dot_batches<G>(row, x, K, k_full, total);
#pragma GCC unroll 16
    for (int64_t g = 0; g < G; ++g) acc[g * R + r] = total[g];
  }
  std::array<real, W> sums;
  horizontal_sums(acc, sums.data());
  for (int64_t g = 0; g < G; ++g) {
    for (int64_t r = 0; r < R; ++r) {
      real total = sums[g * R + r];
      for (int64_t k = k_full; k < K; ++k) total += w[(j0 + r) * ldw + k] * x[g * K + k];
      y[g * ldy + j0 + r] = total;
    }
  }
}

// y[0][j] = Σ_k w[j][k] · x[0][k] alone: a row of w left over after the blocks.
void nt_single(real* y, const real* x, const real* w, int64_t ldw, int64_t K, int64_t j) {
  const real* row = w + j * ldw;
  const int64_t k_full = K - K % W;
  Batch sum;
  dot_batches<1>(row, x, K, k_full, &sum);
  real total = reduce_sum(sum);
  for (int64_t k = k_full; k < K; ++k) total += row[k] * x[k];
  y[j] = total;
}

// Two rows of x per pass where W allows it (R = W/2 ≥ 4 rows of w, enough
// independent chains), one otherwise.
constexpr int64_t kPairRows = W / 2;
constexpr bool kPairs = kPairRows >= 4;

}  // namespace

void few_rows_nt(real* y, const real* x, const real* w, int64_t M, int64_t K, int64_t N,
                 int64_t ldw) {
  int64_t j = 0;
  if constexpr (kPairs) {
    for (; j + kPairRows <= N; j += kPairRows) {
      int64_t m = 0;
      for (; m + 2 <= M; m += 2) nt_block<kPairRows, 2>(y + m * N, N, x + m * K, w, ldw, K, j);
      // A last single row of x: the same block of w, one row at a time.
      for (; m < M; ++m) {
        for (int64_t r = 0; r < kPairRows; ++r) nt_single(y + m * N, x + m * K, w, ldw, K, j + r);
      }
    }
  } else {
    for (; j + W <= N; j += W) {
      for (int64_t m = 0; m < M; ++m) nt_block<W, 1>(y + m * N, N, x + m * K, w, ldw, K, j);
    }
  }
  for (; j < N; ++j) {  // rows of w left over: one at a time
    for (int64_t m = 0; m < M; ++m) nt_single(y + m * N, x + m * K, w, ldw, K, j);
  }
}

void matvec_nt(real* y, const real* x, const real* w, int64_t K, int64_t N, int64_t ldw) {
  int64_t j = 0;
  for (; j + W <= N; j += W) nt_block<W, 1>(y, N, x, w, ldw, K, j);
  for (; j < N; ++j) nt_single(y, x, w, ldw, K, j);
}

namespace {

// y[j] (+)= Σ_{i<R} x[i] · w[i][j] for all N columns: R consecutive rows of w
// (row stride ldw) read left to right, y loaded and stored once per 2W columns.
// `first` starts from zero instead of reading y. Each y[j] gets its R terms in
// row order, one FMA at a time.
template <int64_t R>
void add_rows(real* y, const real* x, const real* w, int64_t ldw, int64_t N, bool first) {
  std::array<Batch, R> scale;
  for (int64_t i = 0; i < R; ++i) scale[i] = Batch(x[i]);
  int64_t j = 0;
  for (; j + 2 * W <= N; j += 2 * W) {
    Batch lo = first ? Batch(real(0)) : load(y + j);
    Batch hi = first ? Batch(real(0)) : load(y + j + W);
    for (int64_t i = 0; i < R; ++i) {
      lo = simd::fma(scale[i], load(w + i * ldw + j), lo);
      hi = simd::fma(scale[i], load(w + i * ldw + j + W), hi);
    }
    lo.store_unaligned(y + j);
    hi.store_unaligned(y + j + W);
  }
  for (; j + W <= N; j += W) {
    Batch acc = first ? Batch(real(0)) : load(y + j);
    for (int64_t i = 0; i < R; ++i) acc = simd::fma(scale[i], load(w + i * ldw + j), acc);
    acc.store_unaligned(y + j);
  }
  for (; j < N; ++j) {
    real total = first ? real(0) : y[j];
    for (int64_t i = 0; i < R; ++i) total += x[i] * w[i * ldw + j];
    y[j] = total;
  }
}

// add_rows for each group size vecmat uses, indexed by the number of rows.
constexpr int64_t kMaxRows = 8;
using AddRows = void (*)(real*, const real*, const real*, int64_t, int64_t, bool);
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
void vecmat(real* y, const real* x, const real* w, int64_t K, int64_t N, int64_t ldw) {
  if (N == 1 && ldw == 1) {  // w (K,1) stored contiguously is a row (1,K): one dot product
    matvec_nt(y, x, w, K, 1, K);
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
    kAddRows[rows](y, x + k, w + k * ldw, ldw, N, k == 0);
    k += rows;
  }
}

#endif  // ATTOGRAD_USE_SIMD; without it kernels::f is scalar::f (tensor/kernels.hpp)

}  // namespace attograd::kernels
