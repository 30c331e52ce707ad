// tensor/kernels_softmax.cpp — softmax and log_softmax over rows: the scalar
// specification first, then the xsimd version that must agree with it.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "tensor/kernels.hpp"
#include "tensor/kernels_simd.hpp"

namespace attograd::kernels {

namespace scalar {

void softmax_forward(real* out, const real* x, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const real* in = x + r * cols;
    real* y = out + r * cols;
    // Subtracting the row maximum changes nothing mathematically and keeps
    // exp() from overflowing.
    real largest = -std::numeric_limits<real>::infinity();
    for (int64_t c = 0; c < cols; ++c) largest = std::max(largest, in[c]);
    real total = 0;
    for (int64_t c = 0; c < cols; ++c) {
      y[c] = std::exp(in[c] - largest);
      total += y[c];
    }
    for (int64_t c = 0; c < cols; ++c) y[c] /= total;
  }
}

void softmax_backward(real* dx, const real* y, const real* dy, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    real dot = 0;
    for (int64_t c = 0; c < cols; ++c) dot += dy[r * cols + c] * y[r * cols + c];
    for (int64_t c = 0; c < cols; ++c)
      dx[r * cols + c] = y[r * cols + c] * (dy[r * cols + c] - dot);
  }
}

void log_softmax_forward(real* out, const real* x, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const real* in = x + r * cols;
    real largest = -std::numeric_limits<real>::infinity();
    for (int64_t c = 0; c < cols; ++c) largest = std::max(largest, in[c]);
    real total = 0;
    for (int64_t c = 0; c < cols; ++c) total += std::exp(in[c] - largest);
    const real log_total = largest + std::log(total);
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = in[c] - log_total;
  }
}

void log_softmax_backward(real* dx, const real* y, const real* dy, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    real total = 0;
    for (int64_t c = 0; c < cols; ++c) total += dy[r * cols + c];
    for (int64_t c = 0; c < cols; ++c) {
      dx[r * cols + c] = dy[r * cols + c] - std::exp(y[r * cols + c]) * total;
    }
  }
}

}  // namespace scalar

#if ATTOGRAD_USE_SIMD

using namespace simd;

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

#else  // ATTOGRAD_USE_SIMD off: the library runs the reference loops.

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

#endif

}  // namespace attograd::kernels
