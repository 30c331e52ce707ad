// tensor/kernels_simd.cpp — the xsimd versions of the kernels in kernels.hpp.
//
// Each loop works on W lanes at a time (W = 16 floats with AVX-512, 8 with
// AVX2, …, fixed when the library is compiled) and finishes the last n % W
// elements by running the same batch code on a zero-padded copy, so the
// tail needs no second scalar implementation. kernels_scalar.cpp is the
// specification these are tested against.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

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

// Loads the `count` (< W) values at p into a batch padded with `pad`. The
// loops run a fixed W times so the compiler unrolls them, rather than turning
// a copy of `count` values into a call to memcpy (which costs more than the
// arithmetic on rows as short as attention's).
Batch load_partial(const real* p, int64_t count, real pad) {
  alignas(64) std::array<real, W> buffer;
  for (int64_t i = 0; i < W; ++i) buffer[i] = i < count ? p[i] : pad;
  return Batch::load_aligned(buffer.data());
}

void store_partial(real* p, Batch value, int64_t count) {
  alignas(64) std::array<real, W> buffer;
  value.store_aligned(buffer.data());
  for (int64_t i = 0; i < W; ++i) {
    if (i < count) p[i] = buffer[i];
  }
}

// out[i] = f(a[i], b[i], c[i]) over n elements; absent inputs are nullptr.
// Tail lanes are padded with 1 so that log/division stay finite in lanes
// that are thrown away.
template <typename F>
void map(real* out, int64_t n, F&& f, const real* a, const real* b = nullptr,
         const real* c = nullptr) {
  auto at = [](const real* p, int64_t i) { return p ? load(p + i) : Batch(real(0)); };
  int64_t i = 0;
  for (; i + W <= n; i += W) f(at(a, i), at(b, i), at(c, i)).store_unaligned(out + i);
  if (i < n) {
    const int64_t rest = n - i;
    auto partial = [&](const real* p) { return p ? load_partial(p + i, rest, 1) : Batch(real(0)); };
    store_partial(out + i, f(partial(a), partial(b), partial(c)), rest);
  }
}

Batch sigmoid(Batch x) { return Batch(real(1)) / (Batch(real(1)) + xsimd::exp(-x)); }

// Σ x[i] for i < n with four independent accumulators (to hide FMA latency).
real sum(const real* x, int64_t n) {
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
  if (i < n) best = xsimd::max(best, load_partial(x + i, n - i, lowest));
  alignas(64) std::array<real, W> lanes;
  best.store_aligned(lanes.data());
  return *std::max_element(lanes.begin(), lanes.end());
}

// Σ a[i] · b[i] for i < n.
real dot(const real* a, const real* b, int64_t n) {
  Batch acc0(real(0)), acc1(real(0));
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    acc0 = xsimd::fma(load(a + i), load(b + i), acc0);
    acc1 = xsimd::fma(load(a + i + W), load(b + i + W), acc1);
  }
  for (; i + W <= n; i += W) acc0 = xsimd::fma(load(a + i), load(b + i), acc0);
  if (i < n) acc1 = xsimd::fma(load_partial(a + i, n - i, 0), load_partial(b + i, n - i, 0), acc1);
  return xsimd::hadd(acc0 + acc1);
}

}  // namespace

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

void sum_axis_forward(real* out, const real* x, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    const real* block = x + o * n * inner;
    if (inner == 1) {
      out[o] = sum(block, n);
      continue;
    }
    // Sum whole rows of `inner` values: out row += each of the n rows.
    real* row = out + o * inner;
    std::fill_n(row, inner, real(0));
    for (int64_t k = 0; k < n; ++k) accumulate(row, block + k * inner, inner);
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

// Three passes over the whole (rows, cols) block rather than three per row,
// so that many short rows (attention over a few keys) pay for one ragged
// tail of exp() instead of one each. Subtracting and scaling are exact per
// element, so plain loops (which the compiler vectorises) give the same bits.
void softmax_forward(real* out, const real* x, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const real* in = x + r * cols;
    real* y = out + r * cols;
    const real largest = maximum(in, cols);
    for (int64_t c = 0; c < cols; ++c) y[c] = in[c] - largest;
  }
  map(
      out, rows * cols, [](Batch v, Batch, Batch) { return xsimd::exp(v); }, out);
  for (int64_t r = 0; r < rows; ++r) {
    real* y = out + r * cols;
    const real inverse = real(1) / sum(y, cols);
    for (int64_t c = 0; c < cols; ++c) y[c] *= inverse;
  }
}

void softmax_backward(real* dx, const real* y, const real* dy, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t start = r * cols;
    const Batch inner(dot(dy + start, y + start, cols));
    map(
        dx + start, cols, [&](Batch out, Batch g, Batch) { return out * (g - inner); }, y + start,
        dy + start);
  }
}

void log_softmax_forward(real* out, const real* x, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const real* in = x + r * cols;
    real* y = out + r * cols;
    const real largest = maximum(in, cols);
    // y holds exp(x − max) for a moment, to sum it without a buffer.
    map(
        y, cols, [&](Batch v, Batch, Batch) { return xsimd::exp(v - Batch(largest)); }, in);
    const Batch log_total(largest + std::log(sum(y, cols)));
    map(
        y, cols, [&](Batch v, Batch, Batch) { return v - log_total; }, in);
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
//                 already holds, the SGD update W −= lr·dyᵀx with α = −lr.
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
      for (int v = 0; v < NV; ++v) acc[r][v] = xsimd::fma(scale, row[v], acc[r][v]);
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) {
      real* out = c + r * ldc + v * W;
      if (into.mode == Into::Mode::add_scaled) {
        xsimd::fma(Batch(into.alpha), acc[r][v], load(out)).store_unaligned(out);
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
        even[r] = xsimd::fma(load(a + r * K + k), first, even[r]);
        odd[r] = xsimd::fma(load(a + r * K + k + W), second, odd[r]);
      }
    }
    for (; k + W <= K; k += W) {
      const Batch first = load(row + k);
      for (int r = 0; r < R; ++r) even[r] = xsimd::fma(load(a + r * K + k), first, even[r]);
    }
    if (k < K) {
      const int64_t rest = K - k;
      const Batch last = load_partial(row + k, rest, 0);
      for (int r = 0; r < R; ++r) {
        odd[r] = xsimd::fma(load_partial(a + r * K + k, rest, 0), last, odd[r]);
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
  parallel::parallel_for(batches, batches * M * K * N, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      matmul_rows(c + i * M * N, a + i * a_step, a_layout, b + i * b_step, b_layout, M, K, N, 0, M);
    }
  });
}

#else  // ATTOGRAD_USE_SIMD off: the library runs the reference loops.

const char* simd_description() { return "scalar"; }
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
