// tensor/kernels_attention.cpp — attention pooling: a softmax over each row
// of scores and the weighted sum of the values it selects, in one kernel. The
// scalar specification first, then the xsimd version that must agree with it.
//
// Legend: B batches, Tq queries per batch, Tk keys (and values) per batch,
// dv the size of one value.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "tensor/kernels.hpp"
#include "tensor/kernels_simd.hpp"

namespace attograd::kernels {

namespace scalar {

void attention_pool_forward(real* out, real* weights, const real* scores, const real* values,
                            int64_t B, int64_t Tq, int64_t Tk, int64_t dv) {
  for (int64_t b = 0; b < B; ++b) {
    const real* v = values + b * Tk * dv;  // (Tk,dv), shared by the batch's Tq rows
    for (int64_t q = 0; q < Tq; ++q) {
      const int64_t row = b * Tq + q;
      real* alpha = weights + row * Tk;
      softmax_forward(alpha, scores + row * Tk, 1, Tk);
      for (int64_t d = 0; d < dv; ++d) {
        real total = 0;
        for (int64_t k = 0; k < Tk; ++k) total += alpha[k] * v[k * dv + d];
        out[row * dv + d] = total;
      }
    }
  }
}

void attention_pool_backward(real* dscores, real* dvalues, const real* dout, const real* weights,
                             const real* values, const real* out, int64_t B, int64_t Tq, int64_t Tk,
                             int64_t dv) {
  if (dvalues != nullptr) std::fill(dvalues, dvalues + B * Tk * dv, real(0));
  for (int64_t b = 0; b < B; ++b) {
    const real* v = values + b * Tk * dv;
    for (int64_t q = 0; q < Tq; ++q) {
      const int64_t row = b * Tq + q;
      const real* g = dout + row * dv;
      const real* alpha = weights + row * Tk;
      // Σ_k α_k dα_k = Σ_k α_k (g · v_k) = g · out
      real inner = 0;
      for (int64_t d = 0; d < dv; ++d) inner += g[d] * out[row * dv + d];
      for (int64_t k = 0; k < Tk; ++k) {
        real d_alpha = 0;
        for (int64_t d = 0; d < dv; ++d) d_alpha += g[d] * v[k * dv + d];
        dscores[row * Tk + k] = alpha[k] * (d_alpha - inner);
      }
      if (dvalues == nullptr) continue;
      for (int64_t k = 0; k < Tk; ++k) {
        for (int64_t d = 0; d < dv; ++d) dvalues[(b * Tk + k) * dv + d] += alpha[k] * g[d];
      }
    }
  }
}

}  // namespace scalar

#if ATTOGRAD_USE_SIMD

using namespace simd;

namespace {

// Rows of at most kRegisterBatches batches with one number per value (dv = 1:
// Nadaraya–Watson's pooling, 49 keys): a row's scores, weights and values
// live in registers from the one load to the one store, instead of the
// softmax's passes over memory followed by a dot product's. The last batch
// is padded with −∞ in the scores (e^−∞ = 0: a padded lane has weight 0)
// and with 0 in the values.
constexpr int64_t kRegisterBatches = 4;

template <int64_t N>
struct Lanes {
  std::array<Batch, N> v;

  Lanes() { v.fill(Batch(real(0))); }
  Lanes(const real* p, const FirstLanes& last, int64_t last_count, real pad) {
    for (int64_t i = 0; i + 1 < N; ++i) v[i] = load(p + i * W);
    v[N - 1] = last_count == W ? load(p + (N - 1) * W) : last.read(p + (N - 1) * W, pad);
  }
  void store(real* p, const FirstLanes& last, int64_t last_count) const {
    for (int64_t i = 0; i + 1 < N; ++i) v[i].store_unaligned(p + i * W);
    if (last_count == W) {
      v[N - 1].store_unaligned(p + (N - 1) * W);
    } else {
      last.write(p + (N - 1) * W, v[N - 1]);
    }
  }
  Batch total() const {
    Batch t = v[0];
    for (int64_t i = 1; i < N; ++i) t += v[i];
    return t;
  }
};

// R rows at once: each row's forward is one chain of dependent steps (the
// maximum, its lanes' reduction, e^x, the sum, its reduction, 1/Σ, the dot
// product, its reduction), far longer than the arithmetic along it; R
// independent chains side by side keep the vector units busy meanwhile.
template <int64_t N, int64_t R>
void register_rows_forward(real* out, real* weights, const real* scores, const real* values,
                           int64_t first_row, int64_t Tq, int64_t Tk, int64_t last_count,
                           const FirstLanes& last) {
  const real lowest = -std::numeric_limits<real>::infinity();
  std::array<Lanes<N>, R> s;
  std::array<Batch, R> largest, inverse, pooled;
  for (int64_t r = 0; r < R; ++r) {
    s[r] = Lanes<N>(scores + (first_row + r) * Tk, last, last_count, lowest);
    largest[r] = s[r].v[0];
    for (int64_t i = 1; i < N; ++i) largest[r] = xsimd::max(largest[r], s[r].v[i]);
  }
  for (int64_t r = 0; r < R; ++r) largest[r] = Batch(reduce_max(largest[r]));
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t i = 0; i < N; ++i) s[r].v[i] = exp_nonpositive<real>(s[r].v[i] - largest[r]);
  }
  for (int64_t r = 0; r < R; ++r) inverse[r] = Batch(xsimd::hadd(s[r].total()));
  for (int64_t r = 0; r < R; ++r) inverse[r] = Batch(real(1)) / inverse[r];
  for (int64_t r = 0; r < R; ++r) {
    const int64_t row = first_row + r;
    const Lanes<N> v(values + (row / Tq) * Tk, last, last_count, 0);
    pooled[r] = Batch(real(0));
    for (int64_t i = 0; i < N; ++i) {
      s[r].v[i] *= inverse[r];
      pooled[r] = simd::fma(s[r].v[i], v.v[i], pooled[r]);
    }
    s[r].store(weights + row * Tk, last, last_count);
  }
  for (int64_t r = 0; r < R; ++r) out[first_row + r] = xsimd::hadd(pooled[r]);
}

template <int64_t N>
void register_rows_forward(real* out, real* weights, const real* scores, const real* values,
                           int64_t B, int64_t Tq, int64_t Tk) {
  constexpr int64_t R = 4;  // rows at once; then 2 and 1 for the last rows
  const int64_t last_count = Tk - (N - 1) * W;
  const FirstLanes last(last_count == W ? 0 : last_count);
  const int64_t rows = B * Tq;
  int64_t row = 0;
  for (; row + R <= rows; row += R) {
    register_rows_forward<N, R>(out, weights, scores, values, row, Tq, Tk, last_count, last);
  }
  if (row + 2 <= rows) {
    register_rows_forward<N, 2>(out, weights, scores, values, row, Tq, Tk, last_count, last);
    row += 2;
  }
  if (row < rows) {
    register_rows_forward<N, 1>(out, weights, scores, values, row, Tq, Tk, last_count, last);
  }
}

//   ds = α ⊙ (g·v − g·out),  dv += g·α   (g, out: one number per row)
template <int64_t N>
void register_rows_backward(real* dscores, real* dvalues, const real* dout, const real* weights,
                            const real* values, const real* out, int64_t B, int64_t Tq,
                            int64_t Tk) {
  const int64_t last_count = Tk - (N - 1) * W;
  const FirstLanes last(last_count == W ? 0 : last_count);
  for (int64_t b = 0; b < B; ++b) {
    const Lanes<N> v(values + b * Tk, last, last_count, 0);
    Lanes<N> dv_row;  // Σ over the batch's queries of g·α
    for (int64_t q = 0; q < Tq; ++q) {
      const int64_t row = b * Tq + q;
      const Batch g(dout[row]);
      const Batch inner(dout[row] * out[row]);
      Lanes<N> alpha(weights + row * Tk, last, last_count, 0);
      for (int64_t i = 0; i < N; ++i) {
        dv_row.v[i] = simd::fma(g, alpha.v[i], dv_row.v[i]);
        alpha.v[i] = alpha.v[i] * (g * v.v[i] - inner);
      }
      alpha.store(dscores + row * Tk, last, last_count);
    }
    if (dvalues != nullptr) dv_row.store(dvalues + b * Tk, last, last_count);
  }
}

template <int64_t N = 1>
bool forward_in_registers(real* out, real* weights, const real* scores, const real* values,
                          int64_t B, int64_t Tq, int64_t Tk) {
  if (Tk <= N * W) {
    register_rows_forward<N>(out, weights, scores, values, B, Tq, Tk);
    return true;
  }
  if constexpr (N < kRegisterBatches) {
    return forward_in_registers<N + 1>(out, weights, scores, values, B, Tq, Tk);
  } else {
    return false;
  }
}

template <int64_t N = 1>
bool backward_in_registers(real* dscores, real* dvalues, const real* dout, const real* weights,
                           const real* values, const real* out, int64_t B, int64_t Tq, int64_t Tk) {
  if (Tk <= N * W) {
    register_rows_backward<N>(dscores, dvalues, dout, weights, values, out, B, Tq, Tk);
    return true;
  }
  if constexpr (N < kRegisterBatches) {
    return backward_in_registers<N + 1>(dscores, dvalues, dout, weights, values, out, B, Tq, Tk);
  } else {
    return false;
  }
}

}  // namespace

// Short rows of scalar values in registers; anything else is the softmax
// kernel over all B·Tq rows, then the batched product weights @ values.
void attention_pool_forward(real* out, real* weights, const real* scores, const real* values,
                            int64_t B, int64_t Tq, int64_t Tk, int64_t dv) {
  if (B == 0 || Tq == 0) return;
  if (Tk == 0) {  // an empty sum
    std::fill(out, out + B * Tq * dv, real(0));
    return;
  }
  if (dv == 1 && forward_in_registers(out, weights, scores, values, B, Tq, Tk)) return;
  softmax_forward(weights, scores, B * Tq, Tk);
  if (dv == 0) return;
  bmm_forward(out, weights, Layout::normal, Tq * Tk, values, Layout::normal, Tk * dv, B, Tq, Tk,
              dv);
}

// Short rows of scalar values in registers; otherwise row by row, dα_k = g ·
// v_k and Σ_k α_k dα_k = g · out as dot products over dv (vectorised over the
// keys instead when dv = 1), and dvalues += α_k g as an axpy per key.
void attention_pool_backward(real* dscores, real* dvalues, const real* dout, const real* weights,
                             const real* values, const real* out, int64_t B, int64_t Tq, int64_t Tk,
                             int64_t dv) {
  if (dv == 1 && B > 0 && Tk > 0 &&
      backward_in_registers(dscores, dvalues, dout, weights, values, out, B, Tq, Tk)) {
    return;
  }
  if (dvalues != nullptr) std::fill(dvalues, dvalues + B * Tk * dv, real(0));
  if (dv == 0) {  // nothing was pooled: every score's gradient is 0
    std::fill(dscores, dscores + B * Tq * Tk, real(0));
    return;
  }
  for (int64_t b = 0; b < B; ++b) {
    const real* v = values + b * Tk * dv;
    real* dv_rows = dvalues == nullptr ? nullptr : dvalues + b * Tk * dv;
    for (int64_t q = 0; q < Tq; ++q) {
      const int64_t row = b * Tq + q;
      const real* g = dout + row * dv;
      const real* alpha = weights + row * Tk;
      real* ds = dscores + row * Tk;
      if (dv == 1) {
        const Batch gradient(g[0]), inner(g[0] * out[row]);
        map(
            ds, Tk, [&](Batch a, Batch value, Batch) { return a * (gradient * value - inner); },
            alpha, v);
        if (dv_rows != nullptr) {
          map(
              dv_rows, Tk, [&](Batch a, Batch d, Batch) { return simd::fma(gradient, a, d); },
              alpha, dv_rows);
        }
        continue;
      }
      const real inner = dot(g, out + row * dv, dv);
      for (int64_t k = 0; k < Tk; ++k) ds[k] = alpha[k] * (dot(g, v + k * dv, dv) - inner);
      if (dv_rows == nullptr) continue;
      for (int64_t k = 0; k < Tk; ++k) {
        const Batch weight(alpha[k]);
        map(
            dv_rows + k * dv, dv,
            [&](Batch d, Batch gradient, Batch) { return simd::fma(weight, gradient, d); },
            dv_rows + k * dv, g);
      }
    }
  }
}

#else  // ATTOGRAD_USE_SIMD off: the library runs the reference loops.

void attention_pool_forward(real* out, real* weights, const real* scores, const real* values,
                            int64_t B, int64_t Tq, int64_t Tk, int64_t dv) {
  scalar::attention_pool_forward(out, weights, scores, values, B, Tq, Tk, dv);
}
void attention_pool_backward(real* dscores, real* dvalues, const real* dout, const real* weights,
                             const real* values, const real* out, int64_t B, int64_t Tq, int64_t Tk,
                             int64_t dv) {
  scalar::attention_pool_backward(dscores, dvalues, dout, weights, values, out, B, Tq, Tk, dv);
}

#endif

}  // namespace attograd::kernels
