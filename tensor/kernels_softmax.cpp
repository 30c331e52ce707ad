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

// Rows are taken in groups that fit in half of L1 (at most kRowGroup rows),
// every pass over the whole group before the next one: a long row (an
// output layer's 2297 logits, 9 KB) comes in from L2 or L3 once, for its
// maximum, and stays in L1 for the other passes; many short rows (attention's
// 49 keys) have their maxima and sums, independent short reductions, overlap
// instead of each waiting behind its own row's other passes.
constexpr int64_t kRowGroup = 64;
constexpr int64_t kGroupBytes = 24 << 10;

int64_t group_rows(int64_t cols) {
  return std::clamp<int64_t>(kGroupBytes / std::max<int64_t>(cols * int64_t(sizeof(real)), 1), 1,
                             kRowGroup);
}

// A long row's e^x pass also asks for the same row of the next group, x to
// read and y to write, a cache line per batch (`ahead`; the group's own rows
// for the last group): that row then arrives from L3 or memory while this
// one computes, instead of the next group's maximum pass waiting for it.
struct Ahead {
  const real* x;
  real* y;
};

// What row r of the group starting at row r0 (count rows) asks for.
Ahead ahead_of(const real* x, real* y, int64_t rows, int64_t cols, int64_t r0, int64_t count,
               int64_t r) {
  const int64_t next = r0 + count < rows ? r0 + count : r0;  // the next group, or this one
  const int64_t row = (next + std::min(r, std::min(count, rows - next) - 1)) * cols;
  return {x + row, y + row};
}

inline void ask_for(Ahead ahead, int64_t c) {
  __builtin_prefetch(ahead.x + c, 0);
  if (ahead.y != nullptr) __builtin_prefetch(ahead.y + c, 1);
}

// y = e^(x − shift) over one row of n ≥ 1 values, returning Σ y; with
// Store false, only Σ y (y is not touched). The full batches go two at a time
// (two independent chains of the exp polynomial and of the sum); the last
// n mod W values are the batch that ends the row, its lanes already counted
// padded with −∞ (e^−∞ = 0) so that they add nothing, or, for a row shorter
// than W, the row padded the same way.
template <bool Store>
real exp_row(real* y, const real* x, real shift, int64_t n, Ahead ahead) {
  const Batch minus(shift);
  const real lowest = -std::numeric_limits<real>::infinity();
  if (n < W) {
    const Batch e = exp_nonpositive<real>(load_partial(x, n, lowest) - minus);
    if (Store) store_partial(y, e, n);
    return xsimd::hadd(e);
  }
  Batch total0(real(0)), total1(real(0));
  int64_t c = 0;
  for (; c + 2 * W <= n; c += 2 * W) {
    ask_for(ahead, c);
    ask_for(ahead, c + W);
    const Batch e0 = exp_nonpositive<real>(load(x + c) - minus);
    const Batch e1 = exp_nonpositive<real>(load(x + c + W) - minus);
    if (Store) {
      e0.store_unaligned(y + c);
      e1.store_unaligned(y + c + W);
    }
    total0 += e0;
    total1 += e1;
  }
  if (c + W <= n) {
    const Batch e = exp_nonpositive<real>(load(x + c) - minus);
    if (Store) e.store_unaligned(y + c);
    total0 += e;
    c += W;
  }
  if (c < n) {
    total1 += exp_nonpositive<real>(tail_batch(x, n, lowest) - minus);
    // The whole last batch is stored: its first lanes get the values they
    // already hold, from the same inputs.
    if (Store) exp_nonpositive<real>(load(x + n - W) - minus).store_unaligned(y + n - W);
  }
  return xsimd::hadd(total0 + total1);
}

// Rows of at most W values (attention over a few keys, a masked softmax's
// valid prefix): a row is one batch, loaded once (padded with −∞, whose e^x
// is 0), and its maximum, e^x, Σ and result are formed in registers before
// the one store. Rows are independent, so one row's reductions overlap the
// next one's. `Log`: log_softmax's x − max − log Σ; otherwise softmax's
// e^(x − max)/Σ.
template <bool Log>
void one_batch_rows(real* out, const real* x, int64_t rows, int64_t cols) {
  const real lowest = -std::numeric_limits<real>::infinity();
  const LastBatch row(cols);
  for (int64_t r = 0; r < rows; ++r) {
    const Batch v = row.read(x + r * cols, lowest);
    const Batch shifted = v - Batch(reduce_max(v));
    const Batch e = exp_nonpositive<real>(shifted);
    const Batch result =
        Log ? shifted - Batch(std::log(reduce_sum(e))) : e * Batch(real(1) / reduce_sum(e));
    row.write(out + r * cols, result);
  }
}

// Per group: every row's maximum; then, for long rows, y = e^(x − max) with
// its Σ in one pass per row, and for short ones (under 4W values: attention
// over a few dozen keys) y = x − max row by row and one e^x over the whole
// group, so that the group's rows share one ragged tail instead of paying one
// each (50 rows of 49: 154 batches of e^x instead of 200), then the sums;
// then each row scaled by 1/Σ (in L1 by then). Rows of at most W values are
// one_batch_rows'.
void softmax_forward(real* out, const real* x, int64_t rows, int64_t cols) {
  if (cols == 0) return;
  if (cols <= W) {
    one_batch_rows<false>(out, x, rows, cols);
    return;
  }
  const int64_t group = group_rows(cols);
  const bool short_rows = cols < 4 * W;
  std::array<real, kRowGroup> per_row;
  for (int64_t r0 = 0; r0 < rows; r0 += group) {
    const int64_t count = std::min(group, rows - r0);
    const real* in = x + r0 * cols;
    real* y = out + r0 * cols;
    for (int64_t r = 0; r < count; ++r) per_row[r] = maximum(in + r * cols, cols);
    if (short_rows) {
      for (int64_t r = 0; r < count; ++r) {
        const Batch largest(per_row[r]);
        map(
            y + r * cols, cols, [&](Batch v, Batch, Batch) { return v - largest; }, in + r * cols);
      }
      exp_nonpositive(y, y, count * cols);
      for (int64_t r = 0; r < count; ++r) per_row[r] = sum(y + r * cols, cols);
    } else {
      for (int64_t r = 0; r < count; ++r) {
        per_row[r] = exp_row<true>(y + r * cols, in + r * cols, per_row[r], cols,
                                   ahead_of(x, out, rows, cols, r0, count, r));
      }
    }
    for (int64_t r = 0; r < count; ++r) {
      const Batch inverse(real(1) / per_row[r]);
      map(
          y + r * cols, cols, [&](Batch v, Batch, Batch) { return v * inverse; }, y + r * cols);
    }
  }
}

// Rows of at most kRegisterBatches batches, for softmax_backward: a row of
// B batches is loaded once into registers (RegisterRow, the last batch padded
// with 0), and Σ dy ⊙ y and dx are formed there before the one store. (The
// forward keeps its group passes for rows of more than one batch: its cost
// is the e^x polynomial, and packing a group's rows end to end needs fewer
// batches of it than rows padded to whole batches.)
// dx = y ⊙ (dy − Σ dy ⊙ y) for rows of B batches, in registers. The batches
// of products are added as a pairwise tree and its lanes by xsimd::hadd, as
// dot() adds them, so a row of one batch gets exactly dot()'s Σ.
template <int64_t B>
void register_rows_backward(real* dx, const real* y, const real* dy, int64_t rows, int64_t cols) {
  const LastBatch last(cols - (B - 1) * W);
  for (int64_t r = 0; r < rows; ++r) {
    RegisterRow<B> out(y + r * cols, last);
    const RegisterRow<B> g(dy + r * cols, last);
    std::array<Batch, B> products;
    for (int64_t b = 0; b < B; ++b) products[b] = out.v[b] * g.v[b];
    Batch partial;
    if constexpr (B == 1) {
      partial = products[0];
    } else if constexpr (B == 2) {
      partial = products[0] + products[1];
    } else if constexpr (B == 3) {
      partial = (products[0] + products[1]) + products[2];
    } else {
      static_assert(B == 4, "a pairwise tree for each number of batches up to kRegisterBatches");
      partial = (products[0] + products[1]) + (products[2] + products[3]);
    }
    const Batch inner(xsimd::hadd(partial));
    for (int64_t b = 0; b < B; ++b) out.v[b] = out.v[b] * (g.v[b] - inner);
    out.store(dx + r * cols, last);
  }
}

// dx = y ⊙ (dy − Σ dy ⊙ y) row by row: rows of up to kRegisterBatches
// batches in registers; longer ones in groups, the group's dot products
// first, which are independent short reductions that overlap, then the
// elementwise pass of each row.
void softmax_backward(real* dx, const real* y, const real* dy, int64_t rows, int64_t cols) {
  if (cols == 0 || with_register_batches(cols, [&](auto batches) {
        register_rows_backward<decltype(batches)::value>(dx, y, dy, rows, cols);
      })) {
    return;
  }
  const int64_t group = group_rows(2 * cols);  // two inputs per row
  std::array<real, kRowGroup> inner;
  for (int64_t r0 = 0; r0 < rows; r0 += group) {
    const int64_t count = std::min(group, rows - r0);
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

// Per group: every row's maximum, every row's log Σ e^(x − max) without
// storing a term (exp_row<false>), then y = x − (max + log Σ) in one elementwise pass.
void log_softmax_forward(real* out, const real* x, int64_t rows, int64_t cols) {
  if (cols == 0) return;
  if (cols <= W) {
    one_batch_rows<true>(out, x, rows, cols);
    return;
  }
  const int64_t group = group_rows(cols);
  std::array<real, kRowGroup> per_row;
  for (int64_t r0 = 0; r0 < rows; r0 += group) {
    const int64_t count = std::min(group, rows - r0);
    const real* in = x + r0 * cols;
    for (int64_t r = 0; r < count; ++r) per_row[r] = maximum(in + r * cols, cols);
    for (int64_t r = 0; r < count; ++r) {
      per_row[r] += std::log(exp_row<false>(nullptr, in + r * cols, per_row[r], cols,
                                            ahead_of(x, out, rows, cols, r0, count, r)));
    }
    for (int64_t r = 0; r < count; ++r) {
      const Batch log_total(per_row[r]);
      map(
          out + (r0 + r) * cols, cols, [&](Batch v, Batch, Batch) { return v - log_total; },
          in + r * cols);
    }
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

#endif  // ATTOGRAD_USE_SIMD; without it kernels::f is scalar::f (tensor/kernels.hpp)

}  // namespace attograd::kernels
