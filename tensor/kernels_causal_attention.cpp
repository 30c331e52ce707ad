// tensor/kernels_causal_attention.cpp — causal (decoder) attention of many
// heads in one kernel, forward and backward, never forming an L × L matrix.
// The scalar specification first, then the xsimd version tested against it
// (tests/tensor/test_kernels_causal_attention.cpp). docs/attention_kernel.md
// derives the maths and gives the measured figures.
//
// Legend: N heads (B·H, every head independent), L positions, d the size of
// one head's query, key and value; i a query's position, j a key's. Query i
// sees keys 0 … i.
//
// Forward, one query row at a time, keys in tiles of kKeyTile = 16 (the
// online softmax): with q' = scale·q (rounded once),
//   s_j = q'_i · k_j                              one FMA chain over d, in order
//   m' = max(m, max_j s_j)                        the running maximum
//   α = e^(m − m'),  l ← fma(l, α, Σ_j e^(s_j − m')),  acc ← acc·α + Σ_j e^(s_j − m') v_j
// then y_i = acc / l and lse_i = m + log l. Only y (L·d) and lse (L) are kept.
//
// Backward, from the saved lse (P_ij = e^(s_ij − lse_i) recomputed, never stored):
//   D_i = dy_i · y_i,  dP_ij = dy_i · v_j,  dS_ij = P_ij (dP_ij − D_i)
//   dv_j = Σ_i P_ij dy_i,  dk_j = Σ_i dS_ij q'_i,  dq_i = scale · Σ_j dS_ij k_j
//
// Summation order, the same in both versions: every dot product (s, dP, D)
// is one FMA chain over d in order; every output (acc, dq_i, dk_j, dv_j) one
// FMA chain over the keys (or queries) in increasing order; a tile's Σ e^(s −
// m') added key by key. Every product that meets a sum meets it in an
// explicit fma, so the compiler's contraction (GCC's default) cannot round
// the two versions differently. So the one difference is e^x: std::exp here,
// the SIMD polynomial there (within 1 ulp in float, tensor/kernels_simd.hpp;
// xsimd::exp in double), which the test states as its tolerance. The SIMD
// version also flushes subnormal results to 0 (FlushSubnormals).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "tensor/kernels.hpp"
#include "tensor/kernels_simd.hpp"
#include "tensor/parallel.hpp"

namespace attograd::kernels {

namespace {

// Keys per tile of the online softmax: the maximum is updated and the
// accumulator rescaled once per tile. A constant of the algorithm, not of the
// lane count, so every build rescales at the same keys.
constexpr int64_t kKeyTile = 16;

constexpr real kMinusInfinity = -std::numeric_limits<real>::infinity();

}  // namespace

namespace scalar {

// y, q, k, v: (N,L,d); lse: (N,L)
void causal_attention_forward(real* y, real* lse, const real* q, const real* k, const real* v,
                              real scale, int64_t N, int64_t L, int64_t d) {
  std::vector<real> q_scaled(static_cast<size_t>(d)), acc(static_cast<size_t>(d));
  std::array<real, kKeyTile> s{};
  for (int64_t n = 0; n < N; ++n) {
    const real* qh = q + n * L * d;
    const real* kh = k + n * L * d;
    const real* vh = v + n * L * d;
    for (int64_t i = 0; i < L; ++i) {
      for (int64_t c = 0; c < d; ++c) q_scaled[c] = qh[i * d + c] * scale;
      std::fill(acc.begin(), acc.end(), real(0));
      real m = kMinusInfinity, l = 0;
      for (int64_t j0 = 0; j0 <= i; j0 += kKeyTile) {
        const int64_t j1 = std::min(j0 + kKeyTile, i + 1);
        real tile_max = kMinusInfinity;
        for (int64_t j = j0; j < j1; ++j) {
          real dot = 0;
          for (int64_t c = 0; c < d; ++c) dot = std::fma(q_scaled[c], kh[j * d + c], dot);
          s[j - j0] = dot;
          tile_max = std::max(tile_max, dot);
        }
        const real m_new = std::max(m, tile_max);
        const real alpha = std::exp(m - m_new);  // 0 for the first tile (m = −∞)
        for (int64_t c = 0; c < d; ++c) acc[c] *= alpha;
        real tile_sum = 0;
        for (int64_t j = j0; j < j1; ++j) {
          const real p = std::exp(s[j - j0] - m_new);
          tile_sum += p;
          for (int64_t c = 0; c < d; ++c) acc[c] = std::fma(p, vh[j * d + c], acc[c]);
        }
        l = std::fma(l, alpha, tile_sum);
        m = m_new;
      }
      for (int64_t c = 0; c < d; ++c) y[(n * L + i) * d + c] = acc[c] / l;
      lse[n * L + i] = m + std::log(l);
    }
  }
}

// dq, dk, dv, dy, q, k, v, y: (N,L,d); lse: (N,L)
void causal_attention_backward(real* dq, real* dk, real* dv, const real* dy, const real* q,
                               const real* k, const real* v, const real* y, const real* lse,
                               real scale, int64_t N, int64_t L, int64_t d) {
  std::fill(dq, dq + N * L * d, real(0));
  std::fill(dk, dk + N * L * d, real(0));
  std::fill(dv, dv + N * L * d, real(0));
  std::vector<real> q_scaled(static_cast<size_t>(d));
  for (int64_t n = 0; n < N; ++n) {
    const int64_t head = n * L * d;
    for (int64_t i = 0; i < L; ++i) {
      const real* g = dy + head + i * d;
      for (int64_t c = 0; c < d; ++c) q_scaled[c] = q[head + i * d + c] * scale;
      real D = 0;  // Σ_j P_ij dP_ij, formed as dy_i · y_i
      for (int64_t c = 0; c < d; ++c) D = std::fma(g[c], y[head + i * d + c], D);
      real* dq_i = dq + head + i * d;
      for (int64_t j = 0; j <= i; ++j) {
        const real* k_j = k + head + j * d;
        const real* v_j = v + head + j * d;
        real s = 0, dp = 0;
        for (int64_t c = 0; c < d; ++c) s = std::fma(q_scaled[c], k_j[c], s);
        for (int64_t c = 0; c < d; ++c) dp = std::fma(g[c], v_j[c], dp);
        const real p = std::exp(s - lse[n * L + i]);
        const real ds = p * (dp - D);
        real* dk_j = dk + head + j * d;
        real* dv_j = dv + head + j * d;
        for (int64_t c = 0; c < d; ++c) {
          dv_j[c] = std::fma(p, g[c], dv_j[c]);
          dk_j[c] = std::fma(ds, q_scaled[c], dk_j[c]);
          dq_i[c] = std::fma(ds, k_j[c], dq_i[c]);
        }
      }
      for (int64_t c = 0; c < d; ++c) dq_i[c] *= scale;
    }
  }
}

}  // namespace scalar

#if ATTOGRAD_USE_SIMD

using namespace simd;

namespace {

// Batches per key tile: 16 keys are 1 batch of 16 floats (AVX-512), 2 of 8
// (AVX2), 4 of 4 (NEON).
constexpr int64_t kTileBatches = kKeyTile / W;
static_assert(kKeyTile % W == 0, "a key tile is whole batches");

// Query rows per block: the rows of a block share every load of a key tile
// and of a value row. Four rows keep 4·kTileBatches FMA chains of the scores
// going at once.
constexpr int64_t kRows = 4;

// One head's operands: row i of q at q + i·d, and so on.
struct Head {
  const real* q;
  const real* k;
  const real* v;
  int64_t L, d;
  int64_t chunks;  // batches per row of d values: ⌈d / W⌉
  LastBatch last;  // the last of them, d − (chunks − 1)·W values
};

// A head's keys (or values) in tiles of kKeyTile columns: tile t holds, for
// each c < d, the c-th entries of keys 16t … 16t + 15 side by side (zero past
// L), so that a query's scores against a tile are d FMAs of one broadcast
// entry of the query with one row of the tile, vectorised over the keys.
void pack_tiles(real* packed, const real* x, int64_t L, int64_t d) {
  const int64_t tiles = (L + kKeyTile - 1) / kKeyTile;
  std::fill(packed, packed + tiles * d * kKeyTile, real(0));
  for (int64_t j = 0; j < L; ++j) {
    real* tile = packed + (j / kKeyTile) * d * kKeyTile + j % kKeyTile;
    for (int64_t c = 0; c < d; ++c) tile[c * kKeyTile] = x[j * d + c];
  }
}

// acc[r] = Σ_c broadcast(a[r][c]) · tile row c, one FMA chain per row and
// batch: the R rows' products with a packed tile, over its 16 keys.
template <int64_t R>
[[gnu::always_inline]] inline void tile_products(
    std::array<std::array<Batch, kTileBatches>, R>& acc, const real* a, int64_t a_stride,
    const real* tile, int64_t d) {
#pragma GCC unroll 8
  for (int64_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int64_t b = 0; b < kTileBatches; ++b) acc[r][b] = Batch(real(0));
  }
  for (int64_t c = 0; c < d; ++c) {
    std::array<Batch, kTileBatches> row;
#pragma GCC unroll 8
    for (int64_t b = 0; b < kTileBatches; ++b) row[b] = load(tile + c * kKeyTile + b * W);
#pragma GCC unroll 8
    for (int64_t r = 0; r < R; ++r) {
      const Batch entry(a[r * a_stride + c]);
#pragma GCC unroll 8
      for (int64_t b = 0; b < kTileBatches; ++b) acc[r][b] = simd::fma(entry, row[b], acc[r][b]);
    }
  }
}

// Sets to −∞ the scores of keys after the row's query: key j0 + lane > i.
template <int64_t R>
[[gnu::always_inline]] inline void mask_future(std::array<std::array<Batch, kTileBatches>, R>& s,
                                               int64_t j0, int64_t i0) {
  const Batch lanes = load(kLaneIndex.data());
#pragma GCC unroll 8
  for (int64_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int64_t b = 0; b < kTileBatches; ++b) {
      const Batch key = lanes + Batch(real(j0 + b * W));
      s[r][b] = xsimd::select(key > Batch(real(i0 + r)), Batch(kMinusInfinity), s[r][b]);
    }
  }
}

// The accumulators of R rows, NC batches each: registers when NC is known
// at compile time, memory for a head too wide for them (NC = 0).
template <int64_t R, int64_t NC>
struct RowAccumulators {
  std::array<Batch, R * NC> v;
  explicit RowAccumulators(int64_t) {}
  Batch& operator()(int64_t r, int64_t c) { return v[r * NC + c]; }
};

template <int64_t R>
struct RowAccumulators<R, 0> {
  std::vector<Batch> v;
  int64_t chunks;
  explicit RowAccumulators(int64_t chunks_in)
      : v(static_cast<size_t>(R * chunks_in)), chunks(chunks_in) {}
  Batch& operator()(int64_t r, int64_t c) { return v[r * chunks + c]; }
};

// Chunk c of the d values at row: a whole batch, or the last, padded with 0.
[[gnu::always_inline]] inline Batch chunk(const real* row, int64_t c, const Head& h) {
  return c + 1 < h.chunks ? load(row + c * W) : h.last.read(row + c * W, 0);
}

// Rows i0 … i0 + R − 1 of one head's forward (the scalar loop's order, R
// rows side by side). q_scaled holds those rows of scale·q, packed_k the
// head's keys in tiles.
template <int64_t R, int64_t NC>
void forward_rows(real* y, real* lse, const real* q_scaled, const real* packed_k, const Head& h,
                  int64_t i0) {
  const int64_t d = h.d;
  const int64_t chunks = NC > 0 ? NC : h.chunks;
  RowAccumulators<R, NC> acc(chunks);
#pragma GCC unroll 8
  for (int64_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int64_t c = 0; c < chunks; ++c) acc(r, c) = Batch(real(0));
  }
  std::array<real, R> m, l;
  m.fill(kMinusInfinity);
  l.fill(real(0));
  alignas(64) std::array<std::array<real, kKeyTile>, R> p;
  const int64_t last_key = std::min(i0 + R, h.L);  // keys [0, last_key) are seen by some row
  for (int64_t j0 = 0; j0 < last_key; j0 += kKeyTile) {
    std::array<std::array<Batch, kTileBatches>, R> s;
    tile_products<R>(s, q_scaled, d, packed_k + j0 * d, d);
    if (j0 + kKeyTile - 1 > i0) mask_future<R>(s, j0, i0);
    std::array<real, R> alpha;
#pragma GCC unroll 8
    for (int64_t r = 0; r < R; ++r) {
      Batch largest = s[r][0];
#pragma GCC unroll 8
      for (int64_t b = 1; b < kTileBatches; ++b) largest = xsimd::max(largest, s[r][b]);
      const real m_new = std::max(m[r], reduce_max(largest));
      alpha[r] = exp_nonpositive<real>(Batch(m[r] - m_new)).get(0);
      m[r] = m_new;
#pragma GCC unroll 8
      for (int64_t b = 0; b < kTileBatches; ++b) {
        exp_nonpositive<real>(s[r][b] - Batch(m_new)).store_aligned(p[r].data() + b * W);
      }
#pragma GCC unroll 8
      for (int64_t c = 0; c < chunks; ++c) acc(r, c) *= Batch(alpha[r]);
    }
    const int64_t j1 = std::min(j0 + kKeyTile, last_key);
    for (int64_t j = j0; j < j1; ++j) {
      const real* v_j = h.v + j * d;
#pragma GCC unroll 8
      for (int64_t c = 0; c < chunks; ++c) {
        const Batch value = chunk(v_j, c, h);
#pragma GCC unroll 8
        for (int64_t r = 0; r < R; ++r)
          acc(r, c) = simd::fma(Batch(p[r][j - j0]), value, acc(r, c));
      }
    }
#pragma GCC unroll 8
    for (int64_t r = 0; r < R; ++r) {
      real tile_sum = 0;  // key by key, as the scalar loop (the keys past i add 0)
      for (int64_t j = j0; j < j1; ++j) tile_sum += p[r][j - j0];
      l[r] = std::fma(l[r], alpha[r], tile_sum);
    }
  }
#pragma GCC unroll 8
  for (int64_t r = 0; r < R; ++r) {
    const Batch total(l[r]);
    real* y_i = y + (i0 + r) * d;
#pragma GCC unroll 8
    for (int64_t c = 0; c + 1 < chunks; ++c)
      simd::div(acc(r, c), total).store_unaligned(y_i + c * W);
    h.last.write(y_i + (chunks - 1) * W, simd::div(acc(r, chunks - 1), total));
    lse[i0 + r] = m[r] + std::log(l[r]);
  }
}

template <int64_t NC>
void forward_head(real* y, real* lse, const real* q_scaled, const real* packed_k, const Head& h) {
  int64_t i = 0;
  for (; i + kRows <= h.L; i += kRows) {
    forward_rows<kRows, NC>(y, lse, q_scaled + i * h.d, packed_k, h, i);
  }
  for (; i < h.L; ++i) forward_rows<1, NC>(y, lse, q_scaled + i * h.d, packed_k, h, i);
}

// Rows i0 … i0 + R − 1 (all ≥ j0) of one head's backward against the key
// tile starting at j0: their shares of dv_j and dk_j for the tile's keys, and
// of dq_i (scale not yet applied).
template <int64_t R, int64_t NC>
void backward_rows(real* dq, real* dk, real* dv, const real* dy, const real* q_scaled,
                   const real* lse, const real* D, const real* packed_k, const real* packed_v,
                   const Head& h, int64_t j0, int64_t i0) {
  const int64_t d = h.d;
  const int64_t chunks = NC > 0 ? NC : h.chunks;
  std::array<std::array<Batch, kTileBatches>, R> s, dp;
  tile_products<R>(s, q_scaled + i0 * d, d, packed_k + j0 * d, d);
  tile_products<R>(dp, dy + i0 * d, d, packed_v + j0 * d, d);
  if (j0 + kKeyTile - 1 > i0) mask_future<R>(s, j0, i0);
  alignas(64) std::array<std::array<real, kKeyTile>, R> p, ds;
#pragma GCC unroll 8
  for (int64_t r = 0; r < R; ++r) {
    const Batch row_lse(lse[i0 + r]), row_D(D[i0 + r]);
#pragma GCC unroll 8
    for (int64_t b = 0; b < kTileBatches; ++b) {
      const Batch weight = exp_nonpositive<real>(s[r][b] - row_lse);
      weight.store_aligned(p[r].data() + b * W);
      (weight * (dp[r][b] - row_D)).store_aligned(ds[r].data() + b * W);
    }
  }
  const int64_t j1 = std::min(j0 + kKeyTile, h.L);
  RowAccumulators<R, NC> dq_rows(chunks);
#pragma GCC unroll 8
  for (int64_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int64_t c = 0; c < chunks; ++c) dq_rows(r, c) = chunk(dq + (i0 + r) * d, c, h);
  }
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t jj = j - j0;
    real* dk_j = dk + j * d;
    real* dv_j = dv + j * d;
    const real* k_j = h.k + j * d;
#pragma GCC unroll 8
    for (int64_t c = 0; c < chunks; ++c) {
      Batch dv_c = chunk(dv_j, c, h), dk_c = chunk(dk_j, c, h);
      const Batch key = chunk(k_j, c, h);
#pragma GCC unroll 8
      for (int64_t r = 0; r < R; ++r) {
        const Batch weight(p[r][jj]), dscore(ds[r][jj]);
        dv_c = simd::fma(weight, chunk(dy + (i0 + r) * d, c, h), dv_c);
        dk_c = simd::fma(dscore, chunk(q_scaled + (i0 + r) * d, c, h), dk_c);
        dq_rows(r, c) = simd::fma(dscore, key, dq_rows(r, c));
      }
      if (c + 1 < chunks) {
        dv_c.store_unaligned(dv_j + c * W);
        dk_c.store_unaligned(dk_j + c * W);
      } else {
        h.last.write(dv_j + c * W, dv_c);
        h.last.write(dk_j + c * W, dk_c);
      }
    }
  }
#pragma GCC unroll 8
  for (int64_t r = 0; r < R; ++r) {
    real* dq_i = dq + (i0 + r) * d;
#pragma GCC unroll 8
    for (int64_t c = 0; c + 1 < chunks; ++c) dq_rows(r, c).store_unaligned(dq_i + c * W);
    h.last.write(dq_i + (chunks - 1) * W, dq_rows(r, chunks - 1));
  }
}

template <int64_t NC>
void backward_head(real* dq, real* dk, real* dv, const real* dy, const real* q_scaled,
                   const real* lse, const real* D, const real* packed_k, const real* packed_v,
                   const Head& h) {
  for (int64_t j0 = 0; j0 < h.L; j0 += kKeyTile) {
    int64_t i = j0;
    for (; i + kRows <= h.L; i += kRows) {
      backward_rows<kRows, NC>(dq, dk, dv, dy, q_scaled, lse, D, packed_k, packed_v, h, j0, i);
    }
    for (; i < h.L; ++i) {
      backward_rows<1, NC>(dq, dk, dv, dy, q_scaled, lse, D, packed_k, packed_v, h, j0, i);
    }
  }
}

// Calls f(std::integral_constant<int64_t, NC>{}) with NC = ⌈d / W⌉ when that
// is at most 8 (d ≤ 128 floats with AVX-512, 64 with AVX2), else NC = 0.
template <int64_t NC = 1, typename F>
void with_chunk_count(int64_t chunks, F&& f) {
  if constexpr (NC > 8) {
    f(std::integral_constant<int64_t, 0>{});
  } else {
    if (chunks == NC) {
      f(std::integral_constant<int64_t, NC>{});
    } else {
      with_chunk_count<NC + 1>(chunks, std::forward<F>(f));
    }
  }
}

// The heads in chunks shared between threads: each head is one thread's
// from start to end, so no sum is split and every thread count gives the
// same bits.
template <typename F>
void for_each_head(int64_t N, int64_t L, int64_t d, F&& per_head) {
  parallel::parallel_for(N, N * L * L * std::max<int64_t>(d, 1) / 2,
                         [&](int64_t begin, int64_t end) {
                           const FlushSubnormals flush;  // per thread: weights far below the
                                                         // row's largest are 0, not subnormal
                           for (int64_t n = begin; n < end; ++n) per_head(n);
                         });
}

Head head_of(const real* q, const real* k, const real* v, int64_t n, int64_t L, int64_t d) {
  const int64_t chunks = (d + W - 1) / W;
  return Head{
      q + n * L * d, k + n * L * d, v + n * L * d, L, d, chunks, LastBatch(d - (chunks - 1) * W)};
}

}  // namespace

void causal_attention_forward(real* y, real* lse, const real* q, const real* k, const real* v,
                              real scale, int64_t N, int64_t L, int64_t d) {
  if (d == 0) return scalar::causal_attention_forward(y, lse, q, k, v, scale, N, L, d);
  if (N == 0 || L == 0) return;
  const int64_t tiles = (L + kKeyTile - 1) / kKeyTile;
  for_each_head(N, L, d, [&](int64_t n) {
    const Head h = head_of(q, k, v, n, L, d);
    std::vector<real> q_scaled(static_cast<size_t>(L * d));
    std::vector<real> packed_k(static_cast<size_t>(tiles * kKeyTile * d));
    for (int64_t e = 0; e < L * d; ++e) q_scaled[e] = h.q[e] * scale;
    pack_tiles(packed_k.data(), h.k, L, d);
    with_chunk_count(h.chunks, [&](auto nc) {
      forward_head<decltype(nc)::value>(y + n * L * d, lse + n * L, q_scaled.data(),
                                        packed_k.data(), h);
    });
  });
}

void causal_attention_backward(real* dq, real* dk, real* dv, const real* dy, const real* q,
                               const real* k, const real* v, const real* y, const real* lse,
                               real scale, int64_t N, int64_t L, int64_t d) {
  if (d == 0 || N == 0 || L == 0) {
    return scalar::causal_attention_backward(dq, dk, dv, dy, q, k, v, y, lse, scale, N, L, d);
  }
  const int64_t tiles = (L + kKeyTile - 1) / kKeyTile;
  for_each_head(N, L, d, [&](int64_t n) {
    const Head h = head_of(q, k, v, n, L, d);
    const int64_t head = n * L * d;
    std::vector<real> q_scaled(static_cast<size_t>(L * d)), D(static_cast<size_t>(L));
    std::vector<real> packed_k(static_cast<size_t>(tiles * kKeyTile * d));
    std::vector<real> packed_v(static_cast<size_t>(tiles * kKeyTile * d));
    for (int64_t e = 0; e < L * d; ++e) q_scaled[e] = h.q[e] * scale;
    for (int64_t i = 0; i < L; ++i) {  // D_i = dy_i · y_i, the scalar loop's chain
      real total = 0;
      for (int64_t c = 0; c < d; ++c)
        total = std::fma(dy[head + i * d + c], y[head + i * d + c], total);
      D[i] = total;
    }
    pack_tiles(packed_k.data(), h.k, L, d);
    pack_tiles(packed_v.data(), h.v, L, d);
    std::fill(dq + head, dq + head + L * d, real(0));
    std::fill(dk + head, dk + head + L * d, real(0));
    std::fill(dv + head, dv + head + L * d, real(0));
    with_chunk_count(h.chunks, [&](auto nc) {
      backward_head<decltype(nc)::value>(dq + head, dk + head, dv + head, dy + head,
                                         q_scaled.data(), lse + n * L, D.data(), packed_k.data(),
                                         packed_v.data(), h);
    });
    for (int64_t e = 0; e < L * d; ++e) dq[head + e] *= scale;
  });
}

#endif  // ATTOGRAD_USE_SIMD; without it kernels::f is scalar::f (tensor/kernels.hpp)

}  // namespace attograd::kernels
