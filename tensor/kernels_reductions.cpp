// tensor/kernels_reductions.cpp — sums and maxima along an axis: the scalar
// specification first, then the xsimd version that must agree with it.
#include <limits>

#include "tensor/kernels.hpp"
#include "tensor/kernels_simd.hpp"

namespace attograd::kernels {

namespace scalar {

void sum_axis_forward(real* out, const real* x, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      real total = 0;
      for (int64_t k = 0; k < n; ++k) total += x[(o * n + k) * inner + j];
      out[o * inner + j] = total;
    }
  }
}

void column_dots(real* out, const real* a, const real* b, int64_t rows, int64_t cols) {
  for (int64_t j = 0; j < cols; ++j) out[j] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) out[j] += a[r * cols + j] * b[r * cols + j];
  }
}

void max_axis_forward(real* out, int64_t* argmax, const real* x, int64_t outer, int64_t n,
                      int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      real best = -std::numeric_limits<real>::infinity();
      int64_t best_index = 0;
      for (int64_t k = 0; k < n; ++k) {
        const real value = x[(o * n + k) * inner + j];
        if (value > best) {
          best = value;
          best_index = k;
        }
      }
      out[o * inner + j] = best;
      argmax[o * inner + j] = best_index;
    }
  }
}

}  // namespace scalar

#if ATTOGRAD_USE_SIMD

using namespace simd;

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

#endif  // ATTOGRAD_USE_SIMD; without it kernels::f is scalar::f (tensor/kernels.hpp)

}  // namespace attograd::kernels
