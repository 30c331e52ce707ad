// tensor/kernels_simd.hpp — the helpers every xsimd kernel is written with.
//
// Each SIMD loop works on W lanes at a time (W = 16 floats with AVX-512, 8
// with AVX2, …, fixed when the library is compiled) and finishes the last
// n % W elements with the same batch code, on the full batch that ends at n
// (or on a padded copy when n < W; "Ragged tails" below), so the tail needs no
// second scalar implementation. The kernel files include this header and
// nothing else of xsimd's:
//
//   kernels_elementwise.cpp  unary, pow, binary, exp_nonpositive, accumulate
//   kernels_reductions.cpp   sum_axis, column_dots, max_axis
//   kernels_softmax.cpp      softmax and log_softmax, forward and backward
//   kernels_matmul.cpp       matmul (NN, NT, TN), add_scaled_product_tn, bmm
//   kernels_matvec.cpp       products with one row: matvec_nt, vecmat
//   kernels_gru.cpp          the fused GRU gates
//   kernels_norm.cpp         layer_norm, forward and backward
//   kernels_optim.cpp        Adam's step, Σ x² in double
//   kernels_random.cpp       dropout masks
//
// each with its scalar specification (`kernels::scalar::`) at the top and its
// xsimd versions inside `#if ATTOGRAD_USE_SIMD` (without SIMD, kernels::f is
// scalar::f: tensor/kernels.hpp). The unary functions' formulas are in
// kernels_unary.hpp.
//
// Two pitfalls of xsimd 8.1 on AVX-512 live here, each beside its helper:
// `fma` is not fused there (simd::fma below), and the 16-float `haddp` mixes
// up rows (horizontal_sums below).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "tensor/shape.hpp"
#include "tensor/xsimd.hpp"

namespace attograd::kernels::simd {

// x · y + z rounded once, on every instruction set. xsimd 8.1's fma has
// fused versions for SSE and AVX (FMA3) but none for AVX-512, where it falls
// back to x * y + z: two roundings, unless the compiler happens to contract
// them (it did at -O3, not in the -O2 sanitizer build). The kernels rely on a
// single rounding — exp_nonpositive's range reduction, and bmm and the
// weight-gradient kernels adding exactly what matmul adds — so on AVX-512
// this calls the fused instruction itself.
template <typename T, typename A>
xsimd::batch<T, A> fma(const xsimd::batch<T, A>& x, const xsimd::batch<T, A>& y,
                       const xsimd::batch<T, A>& z) {
#if defined(__AVX512F__)
  if constexpr (std::is_base_of_v<xsimd::avx512f, A>) {
    if constexpr (std::is_same_v<T, float>) {
      return _mm512_fmadd_ps(x, y, z);
    } else {
      return _mm512_fmadd_pd(x, y, z);
    }
  } else {
    return xsimd::fma(x, y, z);
  }
#else
  return xsimd::fma(x, y, z);
#endif
}

// While alive, this thread's arithmetic treats subnormal numbers (below
// 1.2e-38 in float) as 0, read or written: x86's flush-to-zero and
// denormals-are-zero bits of MXCSR, restored when it ends; nothing on other
// processors. A kernel whose weights can sink that low takes it: there, a
// subnormal operand makes an AVX-512 multiply or FMA take a microcoded slow
// path (NW's attention pooling with its learned w spent about a tenth of its
// training there on the AMD EPYC Zen 5 of docs/performance.md). What it
// changes is below 1.2e-38, invisible next to a softmax row's largest weight
// of at least 1/Tk.
class FlushSubnormals {
 public:
#if defined(__SSE__) || defined(_M_X64)
  static constexpr unsigned kFlushBits = 0x8040;  // FTZ (bit 15) and DAZ (bit 6)
  FlushSubnormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFlushBits); }
  ~FlushSubnormals() { _mm_setcsr(saved_); }

 private:
  unsigned saved_;

 public:
#else
  FlushSubnormals() {}
#endif
  FlushSubnormals(const FlushSubnormals&) = delete;
  FlushSubnormals& operator=(const FlushSubnormals&) = delete;
};

#if ATTOGRAD_USE_SIMD

using Batch = xsimd::batch<real>;
inline constexpr int64_t W = static_cast<int64_t>(Batch::size);

inline Batch load(const real* p) { return Batch::load_unaligned(p); }

// ---- Sums in double -----------------------------------------------------------
// Kernels that sum in double whatever real is (layer_norm's row statistics,
// clip_grad_norm's Σ g²) read reals WD at a time as doubles and write doubles
// back rounded to real. In a float build the widening goes through a buffer,
// which the compiler turns into conversions.
using Double = xsimd::batch<double>;
inline constexpr int64_t WD = static_cast<int64_t>(Double::size);

// The WD values at p as doubles.
inline Double wide(const real* p) {
  if constexpr (std::is_same_v<real, double>) {
    return Double::load_unaligned(p);
  } else {
    alignas(64) double values[WD];
    for (int64_t i = 0; i < WD; ++i) values[i] = double(p[i]);
    return Double::load_aligned(values);
  }
}

// WD doubles rounded to real, stored at p.
inline void store_narrow(real* p, Double values) {
  if constexpr (std::is_same_v<real, double>) {
    values.store_unaligned(p);
  } else {
    alignas(64) double buffer[WD];
    values.store_aligned(buffer);
    for (int64_t i = 0; i < WD; ++i) p[i] = static_cast<real>(buffer[i]);
  }
}

inline Batch sigmoid(Batch x) { return simd::div(Batch(real(1)), Batch(real(1)) + xsimd::exp(-x)); }

// ---- Ragged tails ---------------------------------------------------------
// The last n % W values of a row fill only part of a batch. Rows are often
// short (attention over 49 keys is 6 batches and 1 value), so the tail is a
// large share of the work and must cost no more than a full batch. Measured
// on Zen 1, per row of 49 floats, for out = a ⊙ b: the 6 full batches take
// 9 ns; the tail adds 20 ns through a stack buffer (the vector load of values
// just stored one by one stalls on store forwarding), 13 ns with AVX2 masked
// moves (vmaskmov is microcoded there) and 1 ns as one more full batch that
// overlaps the last one. So when the row holds at least W values the tail is
// read as the full batch [n − W, n):
//   - elementwise loops (map) compute that batch before the main loop and
//     store it after it, which rewrites the overlapped lanes with the same
//     values and stays right when out is one of the inputs;
//   - reductions (sum, dot, maximum) replace the overlapped lanes by a neutral
//     value (tail_batch below).
// Rows shorter than W are read and written with masked moves where the
// instruction set has them (AVX-512's are one cheap instruction; Zen 1's
// microcoded AVX2 ones still beat the buffer), else through a buffer.

// The lane numbers 0 … W − 1, for masks of the first n lanes.
// (A constant array, not a static Batch, so that each use is one load and one
// compare, with no check that a static is set up.)
inline constexpr auto kLaneIndex = [] {
  std::array<real, W> index{};
  for (int64_t i = 0; i < W; ++i) index[i] = real(i);
  return index;
}();

// Masked moves of the first lanes: overloads by element type, so that a
// build compiles only those of its own.
#if defined(__AVX512F__)
using LaneMask = std::conditional_t<W == 16, __mmask16, __mmask8>;
inline LaneMask first_lanes_mask(int64_t count) { return LaneMask((1u << count) - 1); }
inline __m512 masked_load(__m512 pad, __mmask16 mask, const float* p) {
  return _mm512_mask_loadu_ps(pad, mask, p);
}
inline __m512d masked_load(__m512d pad, __mmask8 mask, const double* p) {
  return _mm512_mask_loadu_pd(pad, mask, p);
}
inline void masked_store(float* p, __mmask16 mask, __m512 v) { _mm512_mask_storeu_ps(p, mask, v); }
inline void masked_store(double* p, __mmask8 mask, __m512d v) { _mm512_mask_storeu_pd(p, mask, v); }
#define ATTOGRAD_MASKED_MOVES 1
#elif defined(__AVX2__)
using LaneMask = __m256i;
inline __m256i lane_bits(__m256 lanes) { return _mm256_castps_si256(lanes); }
inline __m256i lane_bits(__m256d lanes) { return _mm256_castpd_si256(lanes); }
inline LaneMask first_lanes_mask(int64_t count) {
  const xsimd::batch_bool<real> lanes =
      Batch::load_unaligned(kLaneIndex.data()) < Batch(real(count));
  return lane_bits(lanes);
}
inline __m256 masked_load(__m256 pad, __m256i mask, const float* p) {
  return _mm256_blendv_ps(pad, _mm256_maskload_ps(p, mask), _mm256_castsi256_ps(mask));
}
inline __m256d masked_load(__m256d pad, __m256i mask, const double* p) {
  return _mm256_blendv_pd(pad, _mm256_maskload_pd(p, mask), _mm256_castsi256_pd(mask));
}
inline void masked_store(float* p, __m256i mask, __m256 v) { _mm256_maskstore_ps(p, mask, v); }
inline void masked_store(double* p, __m256i mask, __m256d v) { _mm256_maskstore_pd(p, mask, v); }
#define ATTOGRAD_MASKED_MOVES 1
#else
#define ATTOGRAD_MASKED_MOVES 0
#endif

// The first `count` (0 ≤ count < W) lanes of a batch at p, read (the other
// lanes `pad`) or written (the memory after them untouched). Masked moves
// neither read nor write the lanes they leave out, so p + count may be the
// end of an allocation. FirstLanes makes the mask once, for loops over many
// rows with the same ragged end (the last columns of c, or of b read in
// place, in the matrix product).
class FirstLanes {
 public:
  explicit FirstLanes(int64_t count) : count_(count) {
#if ATTOGRAD_MASKED_MOVES
    mask_ = first_lanes_mask(count);
#endif
  }

  Batch read(const real* p, real pad = 0) const {
#if ATTOGRAD_MASKED_MOVES
    return Batch(masked_load(Batch(pad), mask_, p));
#else
    alignas(64) std::array<real, W> buffer;
    for (int64_t i = 0; i < W; ++i) buffer[i] = i < count_ ? p[i] : pad;
    return Batch::load_aligned(buffer.data());
#endif
  }

  void write(real* p, Batch value) const {
#if ATTOGRAD_MASKED_MOVES
    masked_store(p, mask_, value);
#else
    alignas(64) std::array<real, W> buffer;
    value.store_aligned(buffer.data());
    for (int64_t i = 0; i < W; ++i) {
      if (i < count_) p[i] = buffer[i];
    }
#endif
  }

 private:
#if ATTOGRAD_MASKED_MOVES
  LaneMask mask_;
#endif
  [[maybe_unused]] int64_t count_;  // the buffered moves' (without masked moves)
};

// The `count` (< W) values at p in the first lanes of a batch, the others `pad`.
inline Batch load_partial(const real* p, int64_t count, real pad) {
  return FirstLanes(count).read(p, pad);
}

// Writes the first `count` (< W) lanes of value to p, and nothing after them.
inline void store_partial(real* p, Batch value, int64_t count) {
  FirstLanes(count).write(p, value);
}

// The batch that ends a row: its last `count` values (1 … W), moved with a
// plain load or store when they fill it, else with masked moves (the other
// lanes read as `pad`, and not written).
class LastBatch {
 public:
  explicit LastBatch(int64_t count) : full_(count == W), lanes_(full_ ? 0 : count) {}
  Batch read(const real* p, real pad) const { return full_ ? load(p) : lanes_.read(p, pad); }
  void write(real* p, Batch value) const {
    if (full_) {
      value.store_unaligned(p);
    } else {
      lanes_.write(p, value);
    }
  }

 private:
  bool full_;
  FirstLanes lanes_;
};

// Kernels over short rows (softmax's backward, attention pooling) hold a
// whole row of up to kRegisterBatches batches in registers: loaded once,
// stored once.
inline constexpr int64_t kRegisterBatches = 4;

// A row of N batches in registers: the full batches at p, then the row's
// last batch through `last`, its lanes past the row's end read as `pad`.
template <int64_t N>
struct RegisterRow {
  std::array<Batch, N> v;

  explicit RegisterRow(real fill = 0) { v.fill(Batch(fill)); }
  RegisterRow(const real* p, const LastBatch& last, real pad = 0) {
    for (int64_t i = 0; i + 1 < N; ++i) v[i] = load(p + i * W);
    v[N - 1] = last.read(p + (N - 1) * W, pad);
  }

  void store(real* p, const LastBatch& last) const {
    for (int64_t i = 0; i + 1 < N; ++i) v[i].store_unaligned(p + i * W);
    last.write(p + (N - 1) * W, v[N - 1]);
  }

  // The batches added lane by lane, first to last.
  Batch total() const {
    Batch t = v[0];
    for (int64_t i = 1; i < N; ++i) t += v[i];
    return t;
  }
};

// For a row of n values that fills N ≤ kRegisterBatches batches, calls
// f(std::integral_constant<int64_t, N>{}) and returns true; returns false
// (and calls nothing) for a longer row.
template <int64_t N = 1, typename F>
bool with_register_batches(int64_t n, F&& f) {
  if (n <= N * W) {
    f(std::integral_constant<int64_t, N>{});
    return true;
  }
  if constexpr (N < kRegisterBatches) {
    return with_register_batches<N + 1>(n, std::forward<F>(f));
  } else {
    return false;
  }
}

// The lanes of the batch [n − W, n) that the full batches before it did not
// cover: the last n % W (n ≥ W, n % W ≠ 0).
inline xsimd::batch_bool<real> tail_lanes(int64_t n) {
  return load(kLaneIndex.data()) >= Batch(real(W - n % W));
}

// The last n % W values of the row [row, row + n) (n % W ≠ 0) in one batch,
// every other lane `pad`: the overlapping batch at n − W with the lanes the
// full batches already covered masked, or, for a row shorter than W, the row
// itself in the first lanes. Either way a function of n alone, so every
// kernel that sums a row through it (dot, nt_rows) sums it in the same order.
[[gnu::always_inline]] inline Batch tail_batch(const real* row, int64_t n, real pad) {
  if (n < W) return load_partial(row, n, pad);
  return xsimd::select(tail_lanes(n), load(row + n - W), Batch(pad));
}

// out[i] = f(a[i], b[i], c[i]) over n elements; absent inputs are nullptr.
// Tail lanes of a short row are padded with 1 so that log/division stay
// finite in lanes that are thrown away.
template <typename F>
void map(real* out, int64_t n, F&& f, const real* a, const real* b = nullptr,
         const real* c = nullptr) {
  auto at = [](const real* p, int64_t i) { return p ? load(p + i) : Batch(real(0)); };
  if (n < W) {
    if (n == 0) return;
    auto partial = [&](const real* p) { return p ? load_partial(p, n, 1) : Batch(real(0)); };
    store_partial(out, f(partial(a), partial(b), partial(c)), n);
    return;
  }
  const Batch last = f(at(a, n - W), at(b, n - W), at(c, n - W));  // before out is written
  for (int64_t i = 0; i + W <= n; i += W) f(at(a, i), at(b, i), at(c, i)).store_unaligned(out + i);
  last.store_unaligned(out + n - W);
}

// Σ x[i] for i < n with four independent accumulators (to hide FMA latency).
[[gnu::always_inline]] inline real sum(const real* x, int64_t n) {
  Batch acc0(real(0)), acc1(real(0)), acc2(real(0)), acc3(real(0));
  int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    acc0 += load(x + i);
    acc1 += load(x + i + W);
    acc2 += load(x + i + 2 * W);
    acc3 += load(x + i + 3 * W);
  }
  for (; i + W <= n; i += W) acc0 += load(x + i);
  real total = xsimd::hadd((acc0 + acc1) + (acc2 + acc3));
  // The last n % W values one by one: cheaper than padding a batch through
  // memory when this is called once per short row (a softmax over 49 keys).
  for (; i < n; ++i) total += x[i];
  return total;
}

// Σ a[i] · b[i] for i < n.
[[gnu::always_inline]] inline real dot(const real* a, const real* b, int64_t n) {
  Batch acc0(real(0)), acc1(real(0));
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    acc0 = simd::fma(load(a + i), load(b + i), acc0);
    acc1 = simd::fma(load(a + i + W), load(b + i + W), acc1);
  }
  for (; i + W <= n; i += W) acc0 = simd::fma(load(a + i), load(b + i), acc0);
  if (i < n) acc1 = simd::fma(tail_batch(a, n, 0), tail_batch(b, n, 0), acc1);
  return xsimd::hadd(acc0 + acc1);
}

// e^x for x ≤ 0, the only arguments softmax gives exp (x − max of a row).
// exp is most of the cost of a softmax, and xsimd::exp also handles overflow
// and subnormal results, which softmax does not need. In float:
//   x = n·ln2 + r,  n = round(x·log2 e),  |r| ≤ ln2/2;   e^x = 2^n · e^r.
// n is rounded by adding 1.5·2^23 (+127, the exponent bias) in one FMA, which
// leaves n + 127 in the low bits of the sum; shifted left by 23 those bits are
// 2^n. r = x − n·ln2 in two FMAs, with ln2 split into a float and the rest,
// so the rounding of ln2 does not reach r. e^r is the degree-6 polynomial that
// interpolates e^r at the 7 Chebyshev nodes of [−ln2/2, ln2/2]: relative
// error 2.5e-9 (0.02 ulp) before rounding. Measured against std::exp on every
// float in [−110, 0]: at most 1 ulp (tests/tensor/test_kernels.cpp checks a
// sweep). Below ln(smallest normal) = −87.34 the result is 0 rather than a
// subnormal (< 1.2e-38, invisible next to a row maximum's e^0 = 1); e^−∞ = 0
// and NaN stays NaN. 1.07 ns per value here against 1.30 for xsimd::exp
// (Zen 1, AVX2). Double builds, which are for gradient checks, use xsimd::exp.
template <typename T>
xsimd::batch<T> exp_nonpositive(xsimd::batch<T> x) {
  if constexpr (!std::is_same_v<T, float>) {
    return xsimd::exp(x);
  } else {
    using Float = xsimd::batch<float>;
    using Int = xsimd::batch<int32_t>;
    const Float shifter(12583039.0f);  // 1.5·2^23 + 127
    const Float shifted = simd::fma(x, Float(1.44269504f), shifter);
    const Float n = shifted - shifter;
    Float r = simd::fma(n, Float(-0.693147182f), x);  // ln2 rounded to float …
    r = simd::fma(n, Float(1.90465430e-09f), r);      // … and what the rounding left out
    Float series(0.00139411085f);
    for (float coefficient : {0.00837512594f, 0.0416663513f, 0.166664153f, 0.5f, 1.0f, 1.0f}) {
      series = simd::fma(series, r, Float(coefficient));
    }
    const Float two_to_n = xsimd::bitwise_cast<Float>(xsimd::bitwise_cast<Int>(shifted) << 23);
    return xsimd::select(x < Float(-87.3365447f), Float(0.0f), series * two_to_n);
  }
}

// ---- Transposing W × W blocks ------------------------------------------------
// rows[i] holds row i of a W × W block; afterwards rows[j] holds column j.
// xsimd 8.1 has no full-width interleave (its AVX-512 zip_lo/zip_hi work
// within each 128-bit lane), so this uses the compiler's generic vector
// shuffle on the batches' registers, which GCC and Clang lower to the
// instruction set's permutes. One round interleaves rows i and i + W/2 into
// rows 2i and 2i + 1; an element's position (row bits, then column bits)
// rotates left by one bit per round, so log2(W) rounds transpose the block.
// Packing the transposed operand of a matrix product (tensor/kernels_gemm.cpp)
// uses it; a build where the registers are no GCC vectors copies one value at
// a time instead (kHaveTranspose is false).
#if defined(__GNUC__) && (defined(__clang__) || __GNUC__ >= 12)
inline constexpr bool kHaveTranspose = W >= 2 && (W & (W - 1)) == 0;

template <size_t... I>
Batch interleave(Batch a, Batch b, bool upper, std::index_sequence<I...>) {
  using Register = typename Batch::register_type;
  const Register x = a, y = b;
  if (upper) return Register(__builtin_shufflevector(x, y, (W / 2 + (I / 2) + (I % 2) * W)...));
  return Register(__builtin_shufflevector(x, y, ((I / 2) + (I % 2) * W)...));
}

inline void transpose(std::array<Batch, W>& rows) {
  constexpr auto lanes = std::make_index_sequence<W>{};
  for (int64_t round = 1; round < W; round *= 2) {
    std::array<Batch, W> next;
    for (int64_t i = 0; i < W / 2; ++i) {
      next[2 * i] = interleave(rows[i], rows[i + W / 2], false, lanes);
      next[2 * i + 1] = interleave(rows[i], rows[i + W / 2], true, lanes);
    }
    rows = next;
  }
}

// ---- Horizontal sums -----------------------------------------------------------
// The lanes of a batch summed as a pairwise tree, ((x0 + x1) + (x2 + x3)) +
// …: reduce_sum for one batch, horizontal_sums for W batches at once, each
// batch's total summed in exactly the same order either way, so a matrix
// row summed alone (matvec_nt's last rows, a batch of dot products) equals
// the same row summed among W (tests/tensor/test_kernels_matvec.cpp). With
// W batches the shuffles are shared: one round of pair_sums halves both the
// number of batches and the lanes each batch's partial sums fill, log2(W)
// rounds in all, 2W − 2 shuffles instead of W trees of 2·log2(W) each.
// (xsimd 8.1's haddp does the same for AVX2, but its AVX-512 float version
// mixes up the rows: 8 of 16 sums come out wrong.)

// [a0 + a1, a2 + a3, …, b0 + b1, b2 + b3, …]: neighbouring lanes of a, then
// of b.
template <size_t... I>
Batch pair_sums(Batch a, Batch b, std::index_sequence<I...>) {
  using Register = typename Batch::register_type;
  const Register x = a, y = b;
  return Batch(Register(__builtin_shufflevector(x, y, (2 * I)...))) +
         Batch(Register(__builtin_shufflevector(x, y, (2 * I + 1)...)));
}

[[gnu::always_inline]] inline real reduce_sum(Batch a) {
#pragma GCC unroll 16
  for (int64_t width = W; width > 1; width /= 2) {
    a = pair_sums(a, a, std::make_index_sequence<W>{});
  }
  return a.get(0);
}

// The largest lane. Max does not depend on the order, so each round takes
// the max of the batch and itself with lanes i and i XOR h swapped (h = W/2,
// …, 1): one shuffle a round, the narrow ones within 128-bit lanes. (NaN
// lanes may or may not win; the softmax rows that use it turn any NaN into
// NaN outputs.)
template <int64_t H, size_t... I>
Batch swap_lanes(Batch a, std::index_sequence<I...>) {
  using Register = typename Batch::register_type;
  const Register x = a;
  return Batch(Register(__builtin_shufflevector(x, x, (I ^ H)...)));
}

template <int64_t H = W / 2>
[[gnu::always_inline]] inline real reduce_max(Batch a) {
  if constexpr (H == 0) {
    return a.get(0);
  } else {
    return reduce_max<H / 2>(xsimd::max(a, swap_lanes<H>(a, std::make_index_sequence<W>{})));
  }
}

// sums[r] = the sum of acc[r]'s lanes, for r < W. (Unrolled, so that the
// batches stay in registers.)
[[gnu::always_inline]] inline void horizontal_sums(const std::array<Batch, W>& batches,
                                                   real* sums) {
  std::array<Batch, W> acc = batches;
#pragma GCC unroll 16
  for (int64_t count = W; count > 1; count /= 2) {
#pragma GCC unroll 16
    for (int64_t i = 0; i < count / 2; ++i) {
      acc[i] = pair_sums(acc[2 * i], acc[2 * i + 1], std::make_index_sequence<W>{});
    }
  }
  acc[0].store_unaligned(sums);
}
#else
inline constexpr bool kHaveTranspose = false;
inline void transpose(std::array<Batch, W>&) {}

// Without the vector shuffle: the same trees one value at a time.
inline real reduce_sum(Batch a) {
  alignas(64) std::array<real, W> lanes;
  a.store_aligned(lanes.data());
  for (int64_t width = W; width > 1; width /= 2) {
    for (int64_t i = 0; i < width / 2; ++i) lanes[i] = lanes[2 * i] + lanes[2 * i + 1];
  }
  return lanes[0];
}

inline real reduce_max(Batch a) {
  alignas(64) std::array<real, W> lanes;
  a.store_aligned(lanes.data());
  real largest = lanes[0];
  for (int64_t i = 1; i < W; ++i) largest = std::max(largest, lanes[i]);
  return largest;
}

inline void horizontal_sums(const std::array<Batch, W>& acc, real* sums) {
  for (int64_t r = 0; r < W; ++r) sums[r] = reduce_sum(acc[r]);
}
#endif

// max of x[i] for i < n (−∞ for n = 0), with four independent maxima so that
// a long row is not one chain of max latencies.
inline real maximum(const real* x, int64_t n) {
  const real lowest = -std::numeric_limits<real>::infinity();
  Batch best(lowest), best1(lowest), best2(lowest), best3(lowest);
  int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    best = xsimd::max(best, load(x + i));
    best1 = xsimd::max(best1, load(x + i + W));
    best2 = xsimd::max(best2, load(x + i + 2 * W));
    best3 = xsimd::max(best3, load(x + i + 3 * W));
  }
  for (; i + W <= n; i += W) best = xsimd::max(best, load(x + i));
  best = xsimd::max(xsimd::max(best, best1), xsimd::max(best2, best3));
  if (i < n) best = xsimd::max(best, tail_batch(x, n, lowest));
  return reduce_max(best);
}

#endif  // ATTOGRAD_USE_SIMD

}  // namespace attograd::kernels::simd
