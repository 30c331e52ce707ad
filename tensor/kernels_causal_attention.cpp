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
// Forward, one query row at a time, keys in tiles of kKeyTile = 32 (the
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
constexpr int64_t kKeyTile = 32;

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

// Batches per key tile: 32 keys are 2 batches of 16 floats (AVX-512), 4 of 8
// (AVX2), 8 of 4 (NEON).
constexpr int64_t kTileBatches = kKeyTile / W;
static_assert(kKeyTile % W == 0, "a key tile is whole batches");

// Query rows per block: the rows of a block share every load of a key tile
// and of a value row, and a block's scores are kRows·kTileBatches
// independent FMA chains — 8, enough to hide an FMA's latency — so 4 rows
// with AVX-512 floats, 2 with AVX2, 1 with NEON. (The grouping of rows
// changes no number: each row's sums are its own.)
constexpr int64_t kRows = std::clamp<int64_t>(8 / kTileBatches, 1, 4);
static_assert(kRows <= W, "one batch holds a block's e^(m − m') factors");

// One head's operands, each row padded with zeros to `stride` = ⌈d / W⌉·W
// numbers, so that every batch of a row is a whole one: the zeros add 0 to
// the sums over d and are never stored.
struct Head {
  int64_t L, d;
  int64_t chunks;  // batches per padded row, ⌈d / W⌉
  int64_t stride;  // chunks·W
};

Head head_shape(int64_t L, int64_t d) {
  const int64_t chunks = (d + W - 1) / W;
  return {L, d, chunks, chunks * W};
}

// rows (L, stride) = x (L, d)·factor, zero past d.
void pad_rows(real* rows, const real* x, real factor, const Head& h) {
  for (int64_t i = 0; i < h.L; ++i) {
    for (int64_t c = 0; c < h.d; ++c) rows[i * h.stride + c] = x[i * h.d + c] * factor;
    std::fill(rows + i * h.stride + h.d, rows + (i + 1) * h.stride, real(0));
  }
}

// x (L, d) = rows (L, stride)·factor, the padding dropped.
void unpad_rows(real* x, const real* rows, real factor, const Head& h) {
  for (int64_t i = 0; i < h.L; ++i) {
    for (int64_t c = 0; c < h.d; ++c) x[i * h.d + c] = rows[i * h.stride + c] * factor;
  }
}

// A head's keys (or values) in tiles of kKeyTile columns: tile t holds, for
// each c < d, the c-th entries of keys 32t … 32t + 31 side by side (zero past
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

using TileScores = std::array<Batch, kTileBatches>;

// Keeps x in a register: without it GCC 12 folds the load of a tile row (or
// of a value's batch) into each of the R FMAs that use it, loading it R
// times, and the loop is bound by loads rather than FMAs.
[[gnu::always_inline]] inline void in_register(Batch& x) {
  auto& reg = reinterpret_cast<typename Batch::register_type&>(x);
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  asm("" : "+v"(reg));  // any SSE/AVX register
#elif defined(__GNUC__) && defined(__aarch64__)
  asm("" : "+w"(reg));  // any NEON register
#else
  (void)reg;
#endif
}

// For each of the R rows of a (stride apart) and of b: acc_a[r] = Σ_c
// a[r][c]·tile_a row c, and the same for b with tile_b (b null: none) — one
// FMA chain per row and batch, in order over c, the two products' chains
// side by side.
template <int64_t R, bool Two>
[[gnu::always_inline]] inline void tile_products(std::array<TileScores, R>& acc_a,
                                                 std::array<TileScores, R>& acc_b, const real* a,
                                                 const real* tile_a, const real* b,
                                                 const real* tile_b, int64_t stride, int64_t d) {
#pragma GCC unroll 16
  for (int64_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int64_t t = 0; t < kTileBatches; ++t) {
      acc_a[r][t] = Batch(real(0));
      if constexpr (Two) acc_b[r][t] = Batch(real(0));
    }
  }
  for (int64_t c = 0; c < d; ++c) {
    TileScores row_a, row_b;
#pragma GCC unroll 16
    for (int64_t t = 0; t < kTileBatches; ++t) {
      row_a[t] = load(tile_a + c * kKeyTile + t * W);
      in_register(row_a[t]);
      if constexpr (Two) {
        row_b[t] = load(tile_b + c * kKeyTile + t * W);
        in_register(row_b[t]);
      }
    }
#pragma GCC unroll 16
    for (int64_t r = 0; r < R; ++r) {
      const Batch entry_a(a[r * stride + c]);
#pragma GCC unroll 16
      for (int64_t t = 0; t < kTileBatches; ++t) {
        acc_a[r][t] = simd::fma(entry_a, row_a[t], acc_a[r][t]);
      }
      if constexpr (Two) {
        const Batch entry_b(b[r * stride + c]);
#pragma GCC unroll 16
        for (int64_t t = 0; t < kTileBatches; ++t) {
          acc_b[r][t] = simd::fma(entry_b, row_b[t], acc_b[r][t]);
        }
      }
    }
  }
}

// Sets to −∞ the scores of keys after the row's query: key j0 + lane > i.
template <int64_t R>
[[gnu::always_inline]] inline void mask_future(std::array<TileScores, R>& s, int64_t j0,
                                               int64_t i0) {
  const Batch lanes = load(kLaneIndex.data());
#pragma GCC unroll 16
  for (int64_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int64_t t = 0; t < kTileBatches; ++t) {
      const Batch key = lanes + Batch(real(j0 + t * W));
      s[r][t] = xsimd::select(key > Batch(real(i0 + r)), Batch(kMinusInfinity), s[r][t]);
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

// Rows i0 … i0 + R − 1 of one head's forward, the scalar loop's sums for R
// rows side by side. q_rows: the head's scale·q, padded; v_rows: its values,
// padded; packed_k: its keys in tiles. y_rows receives the padded outputs.
template <int64_t R, int64_t NC>
void forward_rows(real* y_rows, real* lse, const real* q_rows, const real* v_rows,
                  const real* packed_k, const Head& h, int64_t i0) {
  const int64_t chunks = NC > 0 ? NC : h.chunks, stride = h.stride;
  RowAccumulators<R, NC> acc(chunks);
#pragma GCC unroll 16
  for (int64_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int64_t c = 0; c < chunks; ++c) acc(r, c) = Batch(real(0));
  }
  std::array<real, R> m, l;
  m.fill(kMinusInfinity);
  l.fill(real(0));
  alignas(64) std::array<std::array<real, kKeyTile>, R> p;
  alignas(64) std::array<real, W> shift{};         // m − m' of each row, for one e^x of them all
  const int64_t last_key = std::min(i0 + R, h.L);  // keys [0, last_key) are seen by some row
  for (int64_t j0 = 0; j0 < last_key; j0 += kKeyTile) {
    std::array<TileScores, R> s;
    tile_products<R, false>(s, s, q_rows + i0 * stride, packed_k + j0 * h.d, nullptr, nullptr,
                            stride, h.d);
    if (j0 + kKeyTile - 1 > i0) mask_future<R>(s, j0, i0);
#pragma GCC unroll 16
    for (int64_t r = 0; r < R; ++r) {
      Batch largest = s[r][0];
#pragma GCC unroll 16
      for (int64_t t = 1; t < kTileBatches; ++t) largest = xsimd::max(largest, s[r][t]);
      const real m_new = std::max(m[r], reduce_max(largest));
      shift[r] = m[r] - m_new;
      m[r] = m_new;
#pragma GCC unroll 16
      for (int64_t t = 0; t < kTileBatches; ++t) {
        exp_nonpositive<real>(s[r][t] - Batch(m_new)).store_aligned(p[r].data() + t * W);
      }
    }
    alignas(64) std::array<real, W> alpha;  // e^(m − m'): 0 at the first tile (m = −∞)
    exp_nonpositive<real>(Batch::load_aligned(shift.data())).store_aligned(alpha.data());
#pragma GCC unroll 16
    for (int64_t r = 0; r < R; ++r) {
      const Batch factor(alpha[r]);
#pragma GCC unroll 16
      for (int64_t c = 0; c < chunks; ++c) acc(r, c) *= factor;
    }
    const int64_t j1 = std::min(j0 + kKeyTile, last_key);
    for (int64_t j = j0; j < j1; ++j) {
      const real* v_j = v_rows + j * stride;
#pragma GCC unroll 16
      for (int64_t c = 0; c < chunks; ++c) {
        Batch value = load(v_j + c * W);
        in_register(value);
#pragma GCC unroll 16
        for (int64_t r = 0; r < R; ++r) {
          acc(r, c) = simd::fma(Batch(p[r][j - j0]), value, acc(r, c));
        }
      }
    }
#pragma GCC unroll 16
    for (int64_t r = 0; r < R; ++r) {
      real tile_sum = 0;  // key by key, as the scalar loop (the keys past i add 0)
      for (int64_t j = j0; j < j1; ++j) tile_sum += p[r][j - j0];
      l[r] = std::fma(l[r], alpha[r], tile_sum);
    }
  }
#pragma GCC unroll 16
  for (int64_t r = 0; r < R; ++r) {
    const Batch total(l[r]);
    real* y_i = y_rows + (i0 + r) * stride;
#pragma GCC unroll 16
    for (int64_t c = 0; c < chunks; ++c) simd::div(acc(r, c), total).store_unaligned(y_i + c * W);
    lse[i0 + r] = m[r] + std::log(l[r]);
  }
}

template <int64_t NC>
void forward_head(real* y_rows, real* lse, const real* q_rows, const real* v_rows,
                  const real* packed_k, const Head& h) {
  int64_t i = 0;
  for (; i + kRows <= h.L; i += kRows) {
    forward_rows<kRows, NC>(y_rows, lse, q_rows, v_rows, packed_k, h, i);
  }
  for (; i < h.L; ++i) forward_rows<1, NC>(y_rows, lse, q_rows, v_rows, packed_k, h, i);
}

// The padded rows and tiles one head's backward reads, and the padded
// gradients it accumulates.
struct BackwardRows {
  const real* q;         // scale·q
  const real* dy;        // the output gradient
  const real* k;         // the keys
  const real* packed_k;  // the keys in tiles
  const real* packed_v;  // the values in tiles
  const real* lse;       // (L), from the forward
  const real* D;         // (L), dy_i · y_i
  real* dq;              // Σ_j dS_ij k_j, not yet scaled
  real* dk;
  real* dv;
};

// Rows i0 … i0 + R − 1 (all ≥ j0) of one head's backward against the key
// tile starting at j0: their shares of dv_j and dk_j for the tile's keys, and
// of dq_i.
template <int64_t R>
void backward_rows(const BackwardRows& b, const Head& h, int64_t j0, int64_t i0) {
  const int64_t chunks = h.chunks, stride = h.stride;
  std::array<TileScores, R> s, dp;
  tile_products<R, true>(s, dp, b.q + i0 * stride, b.packed_k + j0 * h.d, b.dy + i0 * stride,
                         b.packed_v + j0 * h.d, stride, h.d);
  if (j0 + kKeyTile - 1 > i0) mask_future<R>(s, j0, i0);
  alignas(64) std::array<std::array<real, kKeyTile>, R> p, ds;
#pragma GCC unroll 16
  for (int64_t r = 0; r < R; ++r) {
    const Batch row_lse(b.lse[i0 + r]), row_D(b.D[i0 + r]);
#pragma GCC unroll 16
    for (int64_t t = 0; t < kTileBatches; ++t) {
      const Batch weight = exp_nonpositive<real>(s[r][t] - row_lse);
      weight.store_aligned(p[r].data() + t * W);
      (weight * (dp[r][t] - row_D)).store_aligned(ds[r].data() + t * W);
    }
  }
  // Batch c of the d numbers at a time, the tile's keys inside: the rows'
  // batches of dy, scale·q and dq stay in registers across the keys, and
  // each key's dv_j, dk_j are read and written once per batch for all R
  // rows. (Every sum's order is the scalar loop's: dv_j, dk_j over the
  // rows i in order, dq_i over the keys j in order.)
  const int64_t j1 = std::min(j0 + kKeyTile, h.L);
  for (int64_t c = 0; c < chunks; ++c) {
    std::array<Batch, R> g, q, dq;
#pragma GCC unroll 16
    for (int64_t r = 0; r < R; ++r) {
      g[r] = load(b.dy + (i0 + r) * stride + c * W);
      q[r] = load(b.q + (i0 + r) * stride + c * W);
      dq[r] = load(b.dq + (i0 + r) * stride + c * W);
    }
    real* dk_j = b.dk + j0 * stride + c * W;
    real* dv_j = b.dv + j0 * stride + c * W;
    const real* k_j = b.k + j0 * stride + c * W;
    for (int64_t jj = 0; jj < j1 - j0; ++jj, dk_j += stride, dv_j += stride, k_j += stride) {
      Batch dv_c = load(dv_j), dk_c = load(dk_j), key = load(k_j);
      in_register(key);
#pragma GCC unroll 16
      for (int64_t r = 0; r < R; ++r) {
        const Batch weight(p[r][jj]), dscore(ds[r][jj]);
        dv_c = simd::fma(weight, g[r], dv_c);
        dk_c = simd::fma(dscore, q[r], dk_c);
        dq[r] = simd::fma(dscore, key, dq[r]);
      }
      dv_c.store_unaligned(dv_j);
      dk_c.store_unaligned(dk_j);
    }
#pragma GCC unroll 16
    for (int64_t r = 0; r < R; ++r) dq[r].store_unaligned(b.dq + (i0 + r) * stride + c * W);
  }
}

void backward_head(const BackwardRows& b, const Head& h) {
  for (int64_t j0 = 0; j0 < h.L; j0 += kKeyTile) {
    int64_t i = j0;
    for (; i + kRows <= h.L; i += kRows) backward_rows<kRows>(b, h, j0, i);
    for (; i < h.L; ++i) backward_rows<1>(b, h, j0, i);
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
  parallel::parallel_for(N, N * L * L * d / 2, [&](int64_t begin, int64_t end) {
    const FlushSubnormals flush;  // per thread: weights far below a row's largest are 0
    for (int64_t n = begin; n < end; ++n) per_head(n);
  });
}

std::vector<real> buffer(int64_t n) { return std::vector<real>(static_cast<size_t>(n)); }

}  // namespace

void causal_attention_forward(real* y, real* lse, const real* q, const real* k, const real* v,
                              real scale, int64_t N, int64_t L, int64_t d) {
  if (d == 0) return scalar::causal_attention_forward(y, lse, q, k, v, scale, N, L, d);
  const Head h = head_shape(L, d);
  const int64_t tiles = (L + kKeyTile - 1) / kKeyTile;
  for_each_head(N, L, d, [&](int64_t n) {
    const int64_t head = n * L * d;
    std::vector<real> q_rows = buffer(L * h.stride), v_rows = buffer(L * h.stride);
    std::vector<real> y_rows = buffer(L * h.stride), packed_k = buffer(tiles * kKeyTile * d);
    pad_rows(q_rows.data(), q + head, scale, h);
    pad_rows(v_rows.data(), v + head, real(1), h);
    pack_tiles(packed_k.data(), k + head, L, d);
    with_chunk_count(h.chunks, [&](auto nc) {
      forward_head<decltype(nc)::value>(y_rows.data(), lse + n * L, q_rows.data(), v_rows.data(),
                                        packed_k.data(), h);
    });
    unpad_rows(y + head, y_rows.data(), real(1), h);
  });
}

void causal_attention_backward(real* dq, real* dk, real* dv, const real* dy, const real* q,
                               const real* k, const real* v, const real* y, const real* lse,
                               real scale, int64_t N, int64_t L, int64_t d) {
  if (d == 0) {
    return scalar::causal_attention_backward(dq, dk, dv, dy, q, k, v, y, lse, scale, N, L, d);
  }
  const Head h = head_shape(L, d);
  const int64_t tiles = (L + kKeyTile - 1) / kKeyTile;
  for_each_head(N, L, d, [&](int64_t n) {
    const int64_t head = n * L * d, padded = L * h.stride;
    std::vector<real> q_rows = buffer(padded), dy_rows = buffer(padded), k_rows = buffer(padded);
    std::vector<real> packed_k = buffer(tiles * kKeyTile * d);
    std::vector<real> packed_v = buffer(tiles * kKeyTile * d), D = buffer(L);
    std::vector<real> dq_rows = buffer(padded), dk_rows = buffer(padded), dv_rows = buffer(padded);
    pad_rows(q_rows.data(), q + head, scale, h);
    pad_rows(dy_rows.data(), dy + head, real(1), h);
    pad_rows(k_rows.data(), k + head, real(1), h);
    pack_tiles(packed_k.data(), k + head, L, d);
    pack_tiles(packed_v.data(), v + head, L, d);
    for (int64_t i = 0; i < L; ++i) {  // D_i = dy_i · y_i, the scalar loop's chain
      real total = 0;
      for (int64_t c = 0; c < d; ++c)
        total = std::fma(dy[head + i * d + c], y[head + i * d + c], total);
      D[i] = total;
    }
    const BackwardRows rows{q_rows.data(),   dy_rows.data(), k_rows.data(), packed_k.data(),
                            packed_v.data(), lse + n * L,    D.data(),      dq_rows.data(),
                            dk_rows.data(),  dv_rows.data()};
    backward_head(rows, h);
    unpad_rows(dq + head, dq_rows.data(), scale, h);
    unpad_rows(dk + head, dk_rows.data(), real(1), h);
    unpad_rows(dv + head, dv_rows.data(), real(1), h);
  });
}

#endif  // ATTOGRAD_USE_SIMD; without it kernels::f is scalar::f (tensor/kernels.hpp)

}  // namespace attograd::kernels
