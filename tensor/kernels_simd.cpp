// tensor/kernels_simd.cpp — the xsimd versions of the kernels in kernels.hpp.
//
// Each loop works on W lanes at a time (W = 16 floats with AVX-512, 8 with
// AVX2, …, fixed when the library is compiled) and finishes the last n % W
// elements with the same batch code, on the full batch that ends at n (or on
// a padded copy when n < W; "Ragged tails" below), so the tail needs no second
// scalar implementation. kernels_scalar.cpp is the specification these are
// tested against.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "tensor/kernels.hpp"
#include "tensor/kernels_matvec.hpp"
#include "tensor/parallel.hpp"
#include "tensor/xsimd.hpp"

namespace attograd::kernels {

#if ATTOGRAD_USE_SIMD

namespace {

using Batch = xsimd::batch<real>;
constexpr int64_t W = static_cast<int64_t>(Batch::size);

Batch load(const real* p) { return Batch::load_unaligned(p); }

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
// Rows shorter than W go through the buffer.

// The `count` (< W) values at p in the first lanes of a batch, the others `pad`.
Batch load_partial(const real* p, int64_t count, real pad) {
  alignas(64) std::array<real, W> buffer;
  for (int64_t i = 0; i < W; ++i) buffer[i] = i < count ? p[i] : pad;
  return Batch::load_aligned(buffer.data());
}

// Writes the first `count` (< W) lanes of value to p, and nothing after them.
void store_partial(real* p, Batch value, int64_t count) {
  alignas(64) std::array<real, W> buffer;
  value.store_aligned(buffer.data());
  for (int64_t i = 0; i < W; ++i) {
    if (i < count) p[i] = buffer[i];
  }
}

// The lanes of the batch [n − W, n) that the full batches before it did not
// cover: the last n % W (n ≥ W, n % W ≠ 0).
// (The lane numbers are a constant array, not a static Batch, so that each
// call is one load and one compare, with no check that a static is set up.)
constexpr auto kLaneIndex = [] {
  std::array<real, W> index{};
  for (int64_t i = 0; i < W; ++i) index[i] = real(i);
  return index;
}();

xsimd::batch_bool<real> tail_lanes(int64_t n) {
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

Batch sigmoid(Batch x) { return Batch(real(1)) / (Batch(real(1)) + xsimd::exp(-x)); }

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

// max of x[i] for i < n (−∞ for n = 0).
real maximum(const real* x, int64_t n) {
  const real lowest = -std::numeric_limits<real>::infinity();
  Batch best(lowest);
  int64_t i = 0;
  for (; i + W <= n; i += W) best = xsimd::max(best, load(x + i));
  if (i < n) best = xsimd::max(best, tail_batch(x, n, lowest));
  alignas(64) std::array<real, W> lanes;
  best.store_aligned(lanes.data());
  real largest = lanes[0];  // std::max compiles to maxss: no branch to mispredict
  for (int64_t i = 1; i < W; ++i) largest = std::max(largest, lanes[i]);
  return largest;
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

}  // namespace

void exp_nonpositive(real* out, const real* x, int64_t n) {
  map(
      out, n, [](Batch v, Batch, Batch) { return exp_nonpositive<real>(v); }, x);
}

const char* simd_description() {
  static const std::string text = fmt::format("{} x{} {}", xsimd::default_arch::name(), W,
                                              sizeof(real) == 4 ? "float" : "double");
  return text.c_str();
}

void unary_forward(Unary op, real* out, const real* x, int64_t n) {
  auto apply = [&](auto f) {
    map(
        out, n, [&](Batch v, Batch, Batch) { return f(v); }, x);
  };
  switch (op) {
    case Unary::neg:
      apply([](Batch v) { return -v; });
      break;
    case Unary::exp:
      apply([](Batch v) { return xsimd::exp(v); });
      break;
    case Unary::log:
      apply([](Batch v) { return xsimd::log(v); });
      break;
    case Unary::sqrt:
      apply([](Batch v) { return xsimd::sqrt(v); });
      break;
    case Unary::sin:
      apply([](Batch v) { return xsimd::sin(v); });
      break;
    case Unary::cos:
      apply([](Batch v) { return xsimd::cos(v); });
      break;
    case Unary::tanh:
      apply([](Batch v) { return xsimd::tanh(v); });
      break;
    case Unary::sigmoid:
      apply([](Batch v) { return sigmoid(v); });
      break;
    case Unary::relu:
      apply([](Batch v) { return xsimd::max(v, Batch(real(0))); });
      break;
  }
}

void unary_backward(Unary op, real* dx, const real* dy, const real* x, const real* y, int64_t n) {
  const Batch one(real(1));
  switch (op) {
    case Unary::neg:
      map(
          dx, n, [](Batch g, Batch, Batch) { return -g; }, dy);
      break;
    case Unary::exp:
      map(
          dx, n, [](Batch g, Batch out, Batch) { return g * out; }, dy, y);
      break;
    case Unary::log:
      map(
          dx, n, [](Batch g, Batch in, Batch) { return g / in; }, dy, x);
      break;
    case Unary::sqrt:
      map(
          dx, n, [](Batch g, Batch out, Batch) { return g * Batch(real(0.5)) / out; }, dy, y);
      break;
    case Unary::sin:
      map(
          dx, n, [](Batch g, Batch in, Batch) { return g * xsimd::cos(in); }, dy, x);
      break;
    case Unary::cos:
      map(
          dx, n, [](Batch g, Batch in, Batch) { return -g * xsimd::sin(in); }, dy, x);
      break;
    case Unary::tanh:
      map(
          dx, n, [&](Batch g, Batch out, Batch) { return g * (one - out * out); }, dy, y);
      break;
    case Unary::sigmoid:
      map(
          dx, n, [&](Batch g, Batch out, Batch) { return g * out * (one - out); }, dy, y);
      break;
    case Unary::relu:
      map(
          dx, n,
          [](Batch g, Batch in, Batch) {
            return xsimd::select(in > Batch(real(0)), g, Batch(real(0)));
          },
          dy, x);
      break;
  }
}

void pow_forward(real* out, const real* x, real p, int64_t n) {
  map(
      out, n, [p](Batch v, Batch, Batch) { return xsimd::pow(v, Batch(p)); }, x);
}

void pow_backward(real* dx, const real* dy, const real* x, real p, int64_t n) {
  map(
      dx, n, [p](Batch g, Batch v, Batch) { return g * Batch(p) * xsimd::pow(v, Batch(p - 1)); },
      dy, x);
}

void binary_forward(Binary op, real* out, const real* a, int64_t a_step, const real* b,
                    int64_t b_step, int64_t n) {
  // A step of 0 means "one value for every i": broadcast it into a batch.
  auto run = [&](auto f) {
    if (a_step == 1 && b_step == 1) {
      map(
          out, n, [&](Batch x, Batch y, Batch) { return f(x, y); }, a, b);
    } else if (a_step == 1) {
      const Batch y(*b);
      map(
          out, n, [&](Batch x, Batch, Batch) { return f(x, y); }, a);
    } else if (b_step == 1) {
      const Batch x(*a);
      map(
          out, n, [&](Batch y, Batch, Batch) { return f(x, y); }, b);
    } else {
      scalar::binary_forward(op, out, a, a_step, b, b_step, n);
    }
  };
  switch (op) {
    case Binary::add:
      run([](Batch x, Batch y) { return x + y; });
      break;
    case Binary::sub:
      run([](Batch x, Batch y) { return x - y; });
      break;
    case Binary::mul:
      run([](Batch x, Batch y) { return x * y; });
      break;
    case Binary::div:
      run([](Batch x, Batch y) { return x / y; });
      break;
  }
}

void accumulate(real* out, const real* x, int64_t n) {
  map(
      out, n, [](Batch o, Batch v, Batch) { return o + v; }, out, x);
}

namespace {

// out[j] = Σ_r term(r·cols + j) for cols ≥ W columns: W columns at a time,
// summed down the rows in a register, each in the order r = 0, 1, … as the
// scalar loops add them. The last columns as the W ending at `cols` (columns
// summed twice get the same sums).
template <typename Term>
void column_sums(real* out, int64_t rows, int64_t cols, Term term) {
  auto columns = [&](int64_t j) {
    Batch total(real(0));
    for (int64_t r = 0; r < rows; ++r) total += term(r * cols + j);
    total.store_unaligned(out + j);
  };
  const int64_t last = cols - W;
  for (int64_t j = 0; j < last; j += W) columns(j);
  columns(last);
}

}  // namespace

void sum_axis_forward(real* out, const real* x, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    const real* block = x + o * n * inner;
    if (inner == 1) {
      out[o] = sum(block, n);
    } else if (inner < W) {
      scalar::sum_axis_forward(out + o * inner, block, 1, n, inner);
    } else {
      column_sums(out + o * inner, n, inner, [&](int64_t i) { return load(block + i); });
    }
  }
}

void column_dots(real* out, const real* a, const real* b, int64_t rows, int64_t cols) {
  if (cols == 1) {
    out[0] = dot(a, b, rows);
  } else if (cols < W) {
    scalar::column_dots(out, a, b, rows, cols);
  } else {
    column_sums(out, rows, cols, [&](int64_t i) { return load(a + i) * load(b + i); });
  }
}

void max_axis_forward(real* out, int64_t* argmax, const real* x, int64_t outer, int64_t n,
                      int64_t inner) {
  if (inner != 1) {
    // Strided maxima: the scalar loop already walks memory in order per column.
    scalar::max_axis_forward(out, argmax, x, outer, n, inner);
    return;
  }
  for (int64_t o = 0; o < outer; ++o) {
    const real* row = x + o * n;
    const real best = maximum(row, n);
    // The first index equal to the maximum (0 when the row is all NaN or empty).
    int64_t index = 0;
    while (index < n && !(row[index] == best)) ++index;
    out[o] = best;
    argmax[o] = index < n ? index : 0;
  }
}

// The softmax kernels take rows in groups of this many, each pass over the
// whole group before the next pass (see softmax_forward).
constexpr int64_t kRowGroup = 64;

// Passes over a group of up to 64 rows at a time rather than per row: every
// row's maximum, y = x − max row by row, e^y over the whole group in one run,
// every row's Σ, then each row scaled by 1/Σ. exp is most of the cost (about
// 9 ns a batch here, Zen 1), and one run over the group spends a batch on one
// ragged tail in all, where a pass per row would spend one per row (50 rows of
// 49 keys: 307 batches instead of 350). The maxima and the sums of the group
// are independent short reductions, so they overlap when taken together
// rather than each waiting behind its row's other passes (5% faster for 50
// rows of 49). The row passes use whole batches and a tail that overlaps the
// last one (see map).
void softmax_forward(real* out, const real* x, int64_t rows, int64_t cols) {
  std::array<real, kRowGroup> per_row;
  for (int64_t r0 = 0; r0 < rows; r0 += kRowGroup) {
    const int64_t count = std::min(kRowGroup, rows - r0);
    const real* in = x + r0 * cols;
    real* y = out + r0 * cols;
    for (int64_t r = 0; r < count; ++r) per_row[r] = maximum(in + r * cols, cols);
    for (int64_t r = 0; r < count; ++r) {
      const Batch largest(per_row[r]);
      map(
          y + r * cols, cols, [&](Batch v, Batch, Batch) { return v - largest; }, in + r * cols);
    }
    exp_nonpositive(y, y, count * cols);
    for (int64_t r = 0; r < count; ++r) per_row[r] = sum(y + r * cols, cols);
    for (int64_t r = 0; r < count; ++r) {
      const Batch inverse(real(1) / per_row[r]);
      map(
          y + r * cols, cols, [&](Batch v, Batch, Batch) { return v * inverse; }, y + r * cols);
    }
  }
}

// dx = y ⊙ (dy − Σ dy ⊙ y) row by row, in groups of kRowGroup rows: the
// group's dot products first, which are independent short reductions that
// overlap, then the elementwise pass of each row.
void softmax_backward(real* dx, const real* y, const real* dy, int64_t rows, int64_t cols) {
  std::array<real, kRowGroup> inner;
  for (int64_t r0 = 0; r0 < rows; r0 += kRowGroup) {
    const int64_t count = std::min(kRowGroup, rows - r0);
    for (int64_t r = 0; r < count; ++r) {
      const int64_t start = (r0 + r) * cols;
      inner[r] = dot(dy + start, y + start, cols);
    }
    for (int64_t r = 0; r < count; ++r) {
      const int64_t start = (r0 + r) * cols;
      const Batch row_inner(inner[r]);
      map(
          dx + start, cols, [&](Batch out, Batch g, Batch) { return out * (g - row_inner); },
          y + start, dy + start);
    }
  }
}

// Each row: its maximum, Σ e^(x − max) without storing a term, then
// y = x − (max + log Σ) in one elementwise pass.
void log_softmax_forward(real* out, const real* x, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const real* in = x + r * cols;
    if (cols == 0) continue;
    const real largest = maximum(in, cols);
    const Batch shift(largest);
    Batch terms(real(0));
    int64_t c = 0;
    for (; c + W <= cols; c += W) terms += exp_nonpositive<real>(load(in + c) - shift);
    if (c < cols) {
      const real lowest = -std::numeric_limits<real>::infinity();  // e^−∞ = 0 in the pad lanes
      terms += exp_nonpositive<real>(tail_batch(in, cols, lowest) - shift);
    }
    const Batch log_total(largest + std::log(xsimd::hadd(terms)));
    map(
        out + r * cols, cols, [&](Batch v, Batch, Batch) { return v - log_total; }, in);
  }
}

void log_softmax_backward(real* dx, const real* y, const real* dy, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t start = r * cols;
    const Batch total(sum(dy + start, cols));
    map(
        dx + start, cols, [&](Batch g, Batch out, Batch) { return g - xsimd::exp(out) * total; },
        dy + start, y + start);
  }
}

namespace {

// Where the kernels below find a[i][k], the entry of row i of the left
// operand at step k: a[i · row_step + k · k_step]. A row-major a (M,K) has
// steps (K, 1); a transposed one, stored (K,M) as a weight gradient's dyᵀ
// is, has steps (1, M) — the same kernels read both, no copy.
struct LeftOperand {
  const real* a;
  int64_t row_step, k_step;
  real at(int64_t i, int64_t k) const { return a[i * row_step + k * k_step]; }
  LeftOperand shifted(int64_t i, int64_t k) const {
    return {a + i * row_step + k * k_step, row_step, k_step};
  }
};

// How a kernel puts its finished block t of the product into c:
//   overwrite     c = t
//   continue_sum  c = t, the sum started from c's value (the later blocks of a
//                 k loop cut into blocks; the sum is the same as one unblocked)
//   add_scaled    c = c + α·t, in one rounding: a product added into what c
//                 already holds, e.g. W −= lr·dyᵀx with α = −lr.
struct Into {
  enum class Mode { overwrite, continue_sum, add_scaled };
  Mode mode = Mode::overwrite;
  real alpha = 1;
};

// c (MR rows × NV·W columns, row stride ldc) = a-rows (MR × K) @ b-strip
// (K × NV·W, row stride ldb): the register-blocked inner kernel. MR·NV
// accumulators stay in registers for the whole K loop; each step loads NV
// vectors of b once and reuses them for MR rows.
template <int MR, int NV>
void micro_kernel(real* c, int64_t ldc, LeftOperand a, const real* b, int64_t ldb, int64_t K,
                  Into into) {
  Batch acc[MR][NV];
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) {
      acc[r][v] =
          into.mode == Into::Mode::continue_sum ? load(c + r * ldc + v * W) : Batch(real(0));
    }
  }
  for (int64_t k = 0; k < K; ++k) {
    Batch row[NV];
    for (int v = 0; v < NV; ++v) row[v] = load(b + k * ldb + v * W);
    for (int r = 0; r < MR; ++r) {
      const Batch scale(a.at(r, k));
      for (int v = 0; v < NV; ++v) acc[r][v] = simd::fma(scale, row[v], acc[r][v]);
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) {
      real* out = c + r * ldc + v * W;
      if (into.mode == Into::Mode::add_scaled) {
        simd::fma(Batch(into.alpha), acc[r][v], load(out)).store_unaligned(out);
      } else {
        acc[r][v].store_unaligned(out);
      }
    }
  }
}

// MR rows of c, all N columns, over kc steps of k.
template <int MR>
void row_block(real* c, LeftOperand a, const real* b, int64_t N, int64_t kc, Into into) {
  int64_t j = 0;
  for (; j + 2 * W <= N; j += 2 * W) micro_kernel<MR, 2>(c + j, N, a, b + j, N, kc, into);
  for (; j + W <= N; j += W) micro_kernel<MR, 1>(c + j, N, a, b + j, N, kc, into);
  // Columns left over (fewer than W): plain dot products.
  for (; j < N; ++j) {
    for (int r = 0; r < MR; ++r) {
      real total = into.mode == Into::Mode::continue_sum ? c[r * N + j] : real(0);
      for (int64_t k = 0; k < kc; ++k) total += a.at(r, k) * b[k * N + j];
      c[r * N + j] =
          into.mode == Into::Mode::add_scaled ? std::fma(into.alpha, total, c[r * N + j]) : total;
    }
  }
}

// The rows of c four at a time, then the last 1–3 rows as one block too: one
// at a time, each would read all of b again (a sentence of 7 words is one
// block of 4 and 3 rows).
void row_blocks(real* c, LeftOperand a, const real* b, int64_t M, int64_t N, int64_t kc,
                Into into) {
  int64_t i = 0;
  for (; i + 4 <= M; i += 4) row_block<4>(c + i * N, a.shifted(i, 0), b, N, kc, into);
  const LeftOperand rest = a.shifted(i, 0);
  switch (M - i) {
    case 3:
      row_block<3>(c + i * N, rest, b, N, kc, into);
      break;
    case 2:
      row_block<2>(c + i * N, rest, b, N, kc, into);
      break;
    case 1:
      row_block<1>(c + i * N, rest, b, N, kc, into);
      break;
    default:
      break;
  }
}

// c (M,N) = a @ b with b row-major (K,N) and a read through its steps.
// Blocked over K so a strip of b stays in cache; the first block starts from
// zero rather than from c, so with one time step (K = 1) c is written once.
void matmul_xn(real* c, LeftOperand a, const real* b, int64_t M, int64_t K, int64_t N) {
  constexpr int64_t kBlockK = 256;
  if (N == 1 && a.k_step == 1) {
    // One column: b is a contiguous vector and each entry one dot product
    // (attention pooling's (1,K) @ (K,1), many times over in a bmm).
    for (int64_t i = 0; i < M; ++i) c[i] = dot(a.a + i * a.row_step, b, K);
    return;
  }
  if (K == 0) std::fill_n(c, M * N, real(0));
  for (int64_t k0 = 0; k0 < K; k0 += kBlockK) {
    const int64_t kc = std::min(kBlockK, K - k0);
    const Into into{k0 > 0 ? Into::Mode::continue_sum : Into::Mode::overwrite};
    row_blocks(c, a.shifted(0, k0), b + k0 * N, M, N, kc, into);
  }
}

// c = a @ b, both row-major.
void matmul_nn(real* c, const real* a, const real* b, int64_t M, int64_t K, int64_t N) {
  matmul_xn(c, LeftOperand{a, K, 1}, b, M, K, N);
}

// R rows of c (row stride N), columns [j0, j1): rows of a (stride K) against
// rows of b (stride K). Each row of b is loaded once for all R rows of a (2R
// independent FMA chains), and each entry is summed exactly as dot() sums it:
// even and odd batches in two accumulators, the ragged tail into the odd one.
template <int R>
void nt_rows(real* c, const real* a, const real* b, int64_t K, int64_t N, int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; ++j) {
    const real* row = b + j * K;
    std::array<Batch, R> even, odd;
    even.fill(Batch(real(0)));
    odd.fill(Batch(real(0)));
    int64_t k = 0;
    for (; k + 2 * W <= K; k += 2 * W) {
      const Batch first = load(row + k), second = load(row + k + W);
      for (int r = 0; r < R; ++r) {
        even[r] = simd::fma(load(a + r * K + k), first, even[r]);
        odd[r] = simd::fma(load(a + r * K + k + W), second, odd[r]);
      }
    }
    for (; k + W <= K; k += W) {
      const Batch first = load(row + k);
      for (int r = 0; r < R; ++r) even[r] = simd::fma(load(a + r * K + k), first, even[r]);
    }
    if (k < K) {
      const Batch last = tail_batch(row, K, 0);
      for (int r = 0; r < R; ++r) {
        odd[r] = simd::fma(tail_batch(a + r * K, K, 0), last, odd[r]);
      }
    }
    for (int r = 0; r < R; ++r) c[r * N + j] = xsimd::hadd(even[r] + odd[r]);
  }
}

// c = a @ bᵀ where b is stored (N, K): every entry is a dot product of two
// contiguous rows, which is what Linear's forward (x @ Wᵀ) needs. Rows of a
// meet b four at a time (the last 1–3 together), and the loop is blocked over
// the rows of b so that a block stays in cache while every row of a meets it.
void matmul_nt(real* c, const real* a, const real* b, int64_t M, int64_t K, int64_t N) {
  constexpr int64_t kBlockN = 32;
  for (int64_t j0 = 0; j0 < N; j0 += kBlockN) {
    const int64_t j1 = std::min(N, j0 + kBlockN);
    int64_t i = 0;
    for (; i + 4 <= M; i += 4) nt_rows<4>(c + i * N, a + i * K, b, K, N, j0, j1);
    switch (M - i) {
      case 3:
        nt_rows<3>(c + i * N, a + i * K, b, K, N, j0, j1);
        break;
      case 2:
        nt_rows<2>(c + i * N, a + i * K, b, K, N, j0, j1);
        break;
      case 1:
        nt_rows<1>(c + i * N, a + i * K, b, K, N, j0, j1);
        break;
      default:
        break;
    }
  }
}

// Rows [row_begin, row_end) of c = aᵀ @ b where a is stored (K, M):
// c[i][j] = Σ_k a[k][i] · b[k][j], a sum of K outer products (the weight
// gradient dyᵀ @ x). The register-blocked kernel of matmul_nn, reading a's
// column i as the left operand's row i, so threads can share the rows.
void matmul_tn(real* c, const real* a, const real* b, int64_t M, int64_t K, int64_t N,
               int64_t row_begin, int64_t row_end) {
  matmul_xn(c + row_begin * N, LeftOperand{a + row_begin, 1, M}, b, row_end - row_begin, K, N);
}

// Rows [i0, i1) of c = a @ b on this thread, by the layouts' kernel above
// (both operands transposed: the scalar loop, all rows).
void matmul_rows(real* c, const real* a, Layout a_layout, const real* b, Layout b_layout, int64_t M,
                 int64_t K, int64_t N, int64_t i0, int64_t i1) {
  if (matvec_forward(c, a, a_layout, b, b_layout, M, K, N)) return;  // one row: kernels_matvec
  if (a_layout == Layout::transposed && b_layout == Layout::transposed) {
    scalar::matmul_forward(c, a, a_layout, b, b_layout, M, K, N);
  } else if (a_layout == Layout::transposed) {
    matmul_tn(c, a, b, M, K, N, i0, i1);
  } else if (b_layout == Layout::normal) {
    matmul_nn(c + i0 * N, a + i0 * K, b, i1 - i0, K, N);
  } else {
    matmul_nt(c + i0 * N, a + i0 * K, b, i1 - i0, K, N);
  }
}

// Large products are shared between threads by blocks of 4 rows of c (the
// height of the register blocks above): rows(i0, i1) runs on one thread for
// each share. Every entry of c is still summed by one thread in the order
// above, so the result does not depend on the thread count
// (tensor/parallel.hpp).
template <typename Rows>
void share_rows(int64_t M, int64_t K, int64_t N, Rows&& rows) {
  constexpr int64_t kRowsPerBlock = 4;
  const int64_t blocks = (M + kRowsPerBlock - 1) / kRowsPerBlock;
  parallel::parallel_for(blocks, M * K * N, [&](int64_t block_begin, int64_t block_end) {
    rows(block_begin * kRowsPerBlock, std::min(M, block_end * kRowsPerBlock));
  });
}

}  // namespace

void matmul_forward(real* c, const real* a, Layout a_layout, const real* b, Layout b_layout,
                    int64_t M, int64_t K, int64_t N) {
  if (a_layout == Layout::transposed && b_layout == Layout::transposed) {
    scalar::matmul_forward(c, a, a_layout, b, b_layout, M, K, N);
    return;
  }
  share_rows(M, K, N, [&](int64_t i0, int64_t i1) {
    matmul_rows(c, a, a_layout, b, b_layout, M, K, N, i0, i1);
  });
}

// c += α · aᵀ @ b, a stored (K,M): the kernel of matmul_tn over all k at once
// (the sum of each entry is the one matmul_forward makes), then added into c.
// Shared between threads by blocks of rows as matmul_forward is.
void add_scaled_product_tn(real* c, real alpha, const real* a, const real* b, int64_t M, int64_t K,
                           int64_t N) {
  if (M == 1 && N == 1) {  // one dot product, which matmul_xn sums with dot()
    c[0] = std::fma(alpha, dot(a, b, K), c[0]);
    return;
  }
  share_rows(M, K, N, [&](int64_t i0, int64_t i1) {
    row_blocks(c + i0 * N, LeftOperand{a + i0, 1, M}, b, i1 - i0, N, K,
               Into{Into::Mode::add_scaled, alpha});
  });
}

namespace {

// c[i] = Σ_k a_i[k] · b_i[k] for `batches` pairs of K-vectors (a_i at a + i·a_step,
// b_i likewise): a batch of (1,K) @ (K,1) products, attention pooling's
// Σ_k α_k v_k. matmul_forward hands such a product to matvec_nt, so each is
// summed exactly as matvec_nt sums one row (tensor/kernels_matvec.cpp): one
// accumulator over the whole batches in order, a horizontal add, then the
// last K mod W products one at a time. Four dot products at a time, so four
// chains of dependent FMAs overlap instead of waiting on one another.
void batched_dots(real* c, const real* a, int64_t a_step, const real* b, int64_t b_step,
                  int64_t batches, int64_t K) {
  const int64_t k_full = K - K % W;
  auto finish = [&](int64_t i, Batch acc) {
    const real* x = a + i * a_step;
    const real* w = b + i * b_step;
    real total = xsimd::hadd(acc);
    for (int64_t k = k_full; k < K; ++k) total += w[k] * x[k];
    c[i] = total;
  };
  int64_t i = 0;
  for (; i + 4 <= batches; i += 4) {
    std::array<Batch, 4> acc;
    acc.fill(Batch(real(0)));
    for (int64_t k = 0; k < k_full; k += W) {
      for (int64_t r = 0; r < 4; ++r) {
        acc[r] = simd::fma(load(b + (i + r) * b_step + k), load(a + (i + r) * a_step + k), acc[r]);
      }
    }
    for (int64_t r = 0; r < 4; ++r) finish(i + r, acc[r]);
  }
  for (; i < batches; ++i) {
    Batch acc(real(0));
    for (int64_t k = 0; k < k_full; k += W) {
      acc = simd::fma(load(b + i * b_step + k), load(a + i * a_step + k), acc);
    }
    finish(i, acc);
  }
}

}  // namespace

// One product alone shares its rows between threads (matmul_forward above); a
// batch shares whole products, each computed on one thread by the same
// kernel, so every entry is summed in the same order either way — and many
// tiny products cost one dispatch instead of one each.
void bmm_forward(real* c, const real* a, Layout a_layout, int64_t a_step, const real* b,
                 Layout b_layout, int64_t b_step, int64_t batches, int64_t M, int64_t K,
                 int64_t N) {
  if (batches == 1) {
    matmul_forward(c, a, a_layout, b, b_layout, M, K, N);
    return;
  }
  if (M == 1 && N == 1 && a_layout == Layout::normal) {
    batched_dots(c, a, a_step, b, b_step, batches, K);
    return;
  }
  if (K == 1) {
    // Outer products, (M,1) @ (1,N): c[i][m][n] = a[i][m] · b[i][n], one rounded
    // product per entry as every matmul kernel makes it (attention pooling's
    // backward dα = df ⊗ v). a and b are plain vectors in either layout.
    for (int64_t i = 0; i < batches; ++i) {
      for (int64_t m = 0; m < M; ++m) {
        const Batch scale(a[i * a_step + m]);
        map(
            c + (i * M + m) * N, N, [&](Batch v, Batch, Batch) { return scale * v; },
            b + i * b_step);
      }
    }
    return;
  }
  parallel::parallel_for(batches, batches * M * K * N, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      matmul_rows(c + i * M * N, a + i * a_step, a_layout, b + i * b_step, b_layout, M, K, N, 0, M);
    }
  });
}

#else  // ATTOGRAD_USE_SIMD off: the library runs the reference loops.

const char* simd_description() { return "scalar"; }
void exp_nonpositive(real* out, const real* x, int64_t n) { scalar::exp_nonpositive(out, x, n); }
void unary_forward(Unary op, real* out, const real* x, int64_t n) {
  scalar::unary_forward(op, out, x, n);
}
void unary_backward(Unary op, real* dx, const real* dy, const real* x, const real* y, int64_t n) {
  scalar::unary_backward(op, dx, dy, x, y, n);
}
void pow_forward(real* out, const real* x, real p, int64_t n) { scalar::pow_forward(out, x, p, n); }
void pow_backward(real* dx, const real* dy, const real* x, real p, int64_t n) {
  scalar::pow_backward(dx, dy, x, p, n);
}
void binary_forward(Binary op, real* out, const real* a, int64_t a_step, const real* b,
                    int64_t b_step, int64_t n) {
  scalar::binary_forward(op, out, a, a_step, b, b_step, n);
}
void accumulate(real* out, const real* x, int64_t n) { scalar::accumulate(out, x, n); }
void sum_axis_forward(real* out, const real* x, int64_t outer, int64_t n, int64_t inner) {
  scalar::sum_axis_forward(out, x, outer, n, inner);
}
void column_dots(real* out, const real* a, const real* b, int64_t rows, int64_t cols) {
  scalar::column_dots(out, a, b, rows, cols);
}
void max_axis_forward(real* out, int64_t* argmax, const real* x, int64_t outer, int64_t n,
                      int64_t inner) {
  scalar::max_axis_forward(out, argmax, x, outer, n, inner);
}
void softmax_forward(real* out, const real* x, int64_t rows, int64_t cols) {
  scalar::softmax_forward(out, x, rows, cols);
}
void softmax_backward(real* dx, const real* y, const real* dy, int64_t rows, int64_t cols) {
  scalar::softmax_backward(dx, y, dy, rows, cols);
}
void log_softmax_forward(real* out, const real* x, int64_t rows, int64_t cols) {
  scalar::log_softmax_forward(out, x, rows, cols);
}
void log_softmax_backward(real* dx, const real* y, const real* dy, int64_t rows, int64_t cols) {
  scalar::log_softmax_backward(dx, y, dy, rows, cols);
}
void matmul_forward(real* c, const real* a, Layout a_layout, const real* b, Layout b_layout,
                    int64_t M, int64_t K, int64_t N) {
  scalar::matmul_forward(c, a, a_layout, b, b_layout, M, K, N);
}
void bmm_forward(real* c, const real* a, Layout a_layout, int64_t a_step, const real* b,
                 Layout b_layout, int64_t b_step, int64_t batches, int64_t M, int64_t K,
                 int64_t N) {
  scalar::bmm_forward(c, a, a_layout, a_step, b, b_layout, b_step, batches, M, K, N);
}
void add_scaled_product_tn(real* c, real alpha, const real* a, const real* b, int64_t M, int64_t K,
                           int64_t N) {
  scalar::add_scaled_product_tn(c, alpha, a, b, M, K, N);
}

#endif

}  // namespace attograd::kernels
