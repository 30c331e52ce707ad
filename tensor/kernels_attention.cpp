// tensor/kernels_attention.cpp — attention pooling: a softmax over each row
// of (optionally scaled) scores and the weighted sum of the values it
// selects, in one kernel. The scalar specification first, then the xsimd
// version that must agree with it.
//
// Legend: B batches, Tq queries per batch, Tk keys (and values) per batch,
// dv the size of one value, S the number of scale factors (0: no scale; 1:
// one for every score; Tk: one per key).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "tensor/kernels.hpp"
#include "tensor/kernels_simd.hpp"

namespace attograd::kernels {

namespace {

// The factor that scales score k: 1 without a scale, else the one factor or the key's own.
inline real scale_of(const real* scale, int64_t scale_count, int64_t k) {
  return scale_count == 0 ? real(1) : scale[scale_count == 1 ? 0 : k];
}

}  // namespace

namespace scalar {

void attention_pool_forward(real* out, real* weights, const real* scores, const real* scale,
                            int64_t scale_count, const real* values, int64_t B, int64_t Tq,
                            int64_t Tk, int64_t dv) {
  for (int64_t b = 0; b < B; ++b) {
    const real* v = values + b * Tk * dv;  // (Tk,dv), shared by the batch's Tq rows
    for (int64_t q = 0; q < Tq; ++q) {
      const int64_t row = b * Tq + q;
      real* alpha = weights + row * Tk;
      for (int64_t k = 0; k < Tk; ++k) {
        alpha[k] = scores[row * Tk + k] * scale_of(scale, scale_count, k);
      }
      softmax_forward(alpha, alpha, 1, Tk);
      for (int64_t d = 0; d < dv; ++d) {
        real total = 0;
        for (int64_t k = 0; k < Tk; ++k) total += alpha[k] * v[k * dv + d];
        out[row * dv + d] = total;
      }
    }
  }
}

void attention_pool_backward(real* dscores, real* dscale, real* dvalues, const real* dout,
                             const real* weights, const real* scores, const real* scale,
                             int64_t scale_count, const real* values, const real* out, int64_t B,
                             int64_t Tq, int64_t Tk, int64_t dv) {
  if (dvalues != nullptr) std::fill(dvalues, dvalues + B * Tk * dv, real(0));
  if (dscale != nullptr) std::fill(dscale, dscale + scale_count, real(0));
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
        const real dz = alpha[k] * (d_alpha - inner);  // the scaled score's gradient
        if (dscores != nullptr) dscores[row * Tk + k] = dz * scale_of(scale, scale_count, k);
        if (dscale != nullptr) dscale[scale_count == 1 ? 0 : k] += dz * scores[row * Tk + k];
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
// live in registers (RegisterRow, tensor/kernels_simd.hpp) from the one load
// to the one store, instead of the softmax's passes over memory followed by
// a dot product's. The lanes past the row's end hold −∞ as scaled scores
// (e^−∞ = 0: weight 0), 0 as scores, values and weights, and 1 as scale
// factors, so they add nothing anywhere.

// What every row of a call shares: where the last batch ends, and the scale.
template <int64_t N>
struct RowShape {
  int64_t Tq, Tk;
  int64_t count;                   // lanes of the row in its last batch
  LastBatch last;                  // moves them
  xsimd::batch_bool<real> inside;  // those lanes, as a mask
  int64_t factor_count;            // S: 0 (no scale), 1 or Tk
  RegisterRow<N> factors;          // the scale factors, lane by lane (1 past the row's end)

  RowShape(int64_t Tq_in, int64_t Tk_in, const real* scale, int64_t scale_count)
      : Tq(Tq_in),
        Tk(Tk_in),
        count(Tk_in - (N - 1) * W),
        last(count),
        inside(load(kLaneIndex.data()) < Batch(real(count))),
        factor_count(scale_count),
        factors(scale_count == 1 ? scale[0] : real(1)) {
    if (scale_count > 1) factors = RegisterRow<N>(scale, last, 1);
  }

  // Row `row`'s scaled scores, −∞ past its end.
  RegisterRow<N> scaled_scores(const real* scores, int64_t row) const {
    if (factor_count == 0) return RegisterRow<N>(scores + row * Tk, last, lowest());
    RegisterRow<N> z(scores + row * Tk, last, 0);
    for (int64_t i = 0; i < N; ++i) z.v[i] *= factors.v[i];
    if (count < W) z.v[N - 1] = xsimd::select(inside, z.v[N - 1], Batch(lowest()));
    return z;
  }

  static real lowest() { return -std::numeric_limits<real>::infinity(); }
};

// R rows at once: each row's forward is one chain of dependent steps (the
// maximum, its lanes' reduction, e^x, the sums Σ e and Σ e·v side by side,
// their reductions, 1/Σ e, the scaling), far longer than the arithmetic along
// it; R independent chains side by side keep the vector units busy meanwhile.
// The weighted sum is taken of e, not of α = e/Σ e, and scaled once at the
// end, out = (Σ e·v)/Σ e, so that the dot product does not wait for the
// division (6 % of the forward at Nadaraya–Watson's 50 × 49). Since e ≤ 1,
// |Σ e·v| ≤ Tk·max|v|: finite unless the values come within a factor Tk of
// the largest float.
template <int64_t N, int64_t R>
void register_rows_forward(real* out, real* weights, const real* scores, const real* values,
                           int64_t first_row, const RowShape<N>& shape) {
  std::array<RegisterRow<N>, R> z;
  std::array<Batch, R> largest, inverse, pooled;
  for (int64_t r = 0; r < R; ++r) {
    z[r] = shape.scaled_scores(scores, first_row + r);
    largest[r] = z[r].v[0];
    for (int64_t i = 1; i < N; ++i) largest[r] = xsimd::max(largest[r], z[r].v[i]);
  }
  for (int64_t r = 0; r < R; ++r) largest[r] = Batch(reduce_max(largest[r]));
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t i = 0; i < N; ++i) z[r].v[i] = exp_nonpositive<real>(z[r].v[i] - largest[r]);
  }
  std::array<real, R> pooled_sum;
  for (int64_t r = 0; r < R; ++r) {
    const int64_t row = first_row + r;
    const int64_t batch = shape.Tq == 1 ? row : row / shape.Tq;  // no division for one query
    const RegisterRow<N> v(values + batch * shape.Tk, shape.last, 0);
    pooled[r] = z[r].v[0] * v.v[0];
    for (int64_t i = 1; i < N; ++i) pooled[r] = simd::fma(z[r].v[i], v.v[i], pooled[r]);
  }
  for (int64_t r = 0; r < R; ++r) inverse[r] = Batch(xsimd::hadd(z[r].total()));
  for (int64_t r = 0; r < R; ++r) pooled_sum[r] = xsimd::hadd(pooled[r]);
  for (int64_t r = 0; r < R; ++r) inverse[r] = simd::div(Batch(real(1)), inverse[r]);
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t i = 0; i < N; ++i) z[r].v[i] *= inverse[r];
    z[r].store(weights + (first_row + r) * shape.Tk, shape.last);
    out[first_row + r] = pooled_sum[r] * inverse[r].get(0);
  }
}

template <int64_t N>
void register_rows_forward(real* out, real* weights, const real* scores, const real* scale,
                           int64_t scale_count, const real* values, int64_t B, int64_t Tq,
                           int64_t Tk) {
  constexpr int64_t R = 4;  // rows at once; then 2 and 1 for the last rows
  const RowShape<N> shape(Tq, Tk, scale, scale_count);
  const int64_t rows = B * Tq;
  int64_t row = 0;
  for (; row + R <= rows; row += R) {
    register_rows_forward<N, R>(out, weights, scores, values, row, shape);
  }
  if (row + 2 <= rows) {
    register_rows_forward<N, 2>(out, weights, scores, values, row, shape);
    row += 2;
  }
  if (row < rows) register_rows_forward<N, 1>(out, weights, scores, values, row, shape);
}

// Zeros for sums that a loop carries from row to row, built batch by batch.
// A filled std::array (fill(), GCC 12's memset) stays in memory, and each
// row's FMAs then read and wrote it there: a quarter of the backward's time.
// RegisterRow's fill constructor keeps fill(): RowShape::factors, built
// with it, is best left in memory, read as the forward's memory operands
// (built in registers, it pushed the forward's rows out of them: 800 →
// 890 ns at 50 × 49).
template <int64_t N>
std::array<Batch, N> zero_batches() {
  return []<size_t... I>(std::index_sequence<I...>) {
    return std::array<Batch, N>{((void)I, Batch(real(0)))...};
  }
  (std::make_index_sequence<N>{});
}

//   dz = α ⊙ (g·v − g·out),  dscores = dz ⊙ c,  dscale += dz ⊙ scores,  dvalues += g·α
// (g, out: one number per row). Each output is formed only when asked for:
// the three flags make one loop per combination, with no test inside it.
template <int64_t N, bool Scores, bool Scale, bool Values>
void register_rows_backward(real* dscores, real* dscale, real* dvalues, const real* dout,
                            const real* weights, const real* scores, const real* values,
                            const real* out, int64_t B, const RowShape<N>& shape) {
  const int64_t Tq = shape.Tq, Tk = shape.Tk;
  std::array<Batch, N> scale_sums = zero_batches<N>();  // Σ over rows of dz ⊙ scores, lane by lane
  for (int64_t b = 0; b < B; ++b) {
    const RegisterRow<N> v(values + b * Tk, shape.last, 0);
    std::array<Batch, N> value_sums = zero_batches<N>();  // Σ over the batch's queries of g·α
    for (int64_t q = 0; q < Tq; ++q) {
      const int64_t row = b * Tq + q;
      const Batch g(dout[row]);
      const Batch inner(dout[row] * out[row]);
      RegisterRow<N> dz(weights + row * Tk, shape.last, 0);  // α, for now
      if constexpr (Values) {
        for (int64_t i = 0; i < N; ++i) value_sums[i] = simd::fma(g, dz.v[i], value_sums[i]);
      }
      for (int64_t i = 0; i < N; ++i) dz.v[i] = dz.v[i] * (g * v.v[i] - inner);
      if constexpr (Scale) {
        const RegisterRow<N> s(scores + row * Tk, shape.last, 0);
        for (int64_t i = 0; i < N; ++i) scale_sums[i] = simd::fma(dz.v[i], s.v[i], scale_sums[i]);
      }
      if constexpr (Scores) {
        for (int64_t i = 0; i < N; ++i) dz.v[i] *= shape.factors.v[i];
        dz.store(dscores + row * Tk, shape.last);
      }
    }
    if constexpr (Values) {
      RegisterRow<N> sums;
      sums.v = value_sums;
      sums.store(dvalues + b * Tk, shape.last);
    }
  }
  if constexpr (Scale) {
    RegisterRow<N> sums;
    sums.v = scale_sums;
    if (shape.factor_count == 1) {
      dscale[0] = xsimd::hadd(sums.total());
    } else {
      sums.store(dscale, shape.last);
    }
  }
}

// The loop for the outputs asked for.
template <int64_t N>
void register_rows_backward(real* dscores, real* dscale, real* dvalues, const real* dout,
                            const real* weights, const real* scores, const real* scale,
                            int64_t scale_count, const real* values, const real* out, int64_t B,
                            int64_t Tq, int64_t Tk) {
  const RowShape<N> shape(Tq, Tk, scale, scale_count);
  auto run = [&](auto scores_wanted, auto scale_wanted, auto values_wanted) {
    register_rows_backward<N, decltype(scores_wanted)::value, decltype(scale_wanted)::value,
                           decltype(values_wanted)::value>(dscores, dscale, dvalues, dout, weights,
                                                           scores, values, out, B, shape);
  };
  using Yes = std::true_type;
  using No = std::false_type;
  const int wanted =
      (dscores != nullptr ? 4 : 0) + (dscale != nullptr ? 2 : 0) + (dvalues != nullptr ? 1 : 0);
  switch (wanted) {
    case 0:
      return;
    case 1:
      return run(No(), No(), Yes());
    case 2:
      return run(No(), Yes(), No());
    case 3:
      return run(No(), Yes(), Yes());
    case 4:
      return run(Yes(), No(), No());
    case 5:
      return run(Yes(), No(), Yes());
    case 6:
      return run(Yes(), Yes(), No());
    default:
      return run(Yes(), Yes(), Yes());
  }
}

}  // namespace

// Short rows of scalar values in registers; anything else is the scores
// scaled, the softmax kernel over all B·Tq rows, then the batched product
// weights @ values.
void attention_pool_forward(real* out, real* weights, const real* scores, const real* scale,
                            int64_t scale_count, const real* values, int64_t B, int64_t Tq,
                            int64_t Tk, int64_t dv) {
  if (B == 0 || Tq == 0) return;
  const FlushSubnormals flush;  // weights just above 0 are 0, not slow subnormals
  if (Tk == 0) {                // an empty sum
    std::fill(out, out + B * Tq * dv, real(0));
    return;
  }
  if (dv == 1 && with_register_batches(Tk, [&](auto batches) {
        register_rows_forward<decltype(batches)::value>(out, weights, scores, scale, scale_count,
                                                        values, B, Tq, Tk);
      })) {
    return;
  }
  const int64_t rows = B * Tq;
  std::vector<real> scaled;  // the softmax kernel does not work in place
  if (scale_count > 0) {
    scaled.resize(static_cast<size_t>(rows * Tk));
    if (scale_count == 1) {
      binary_forward(Binary::mul, scaled.data(), scores, 1, scale, 0, rows * Tk);
    } else {
      binary_rows_forward(Binary::mul, scaled.data(), scores, Tk, scale, 0, rows, Tk);
    }
  }
  softmax_forward(weights, scale_count > 0 ? scaled.data() : scores, rows, Tk);
  if (dv == 0) return;
  bmm_forward(out, weights, Layout::normal, Tq * Tk, values, Layout::normal, Tk * dv, B, Tq, Tk,
              dv);
}

// Short rows of scalar values in registers; otherwise row by row: dα_k = g ·
// v_k and Σ_k α_k dα_k = g · out as dot products over dv (vectorised over the
// keys instead when dv = 1), dvalues += α_k g as an axpy per key, and the
// scores' and the scale's gradients from the row of dz.
void attention_pool_backward(real* dscores, real* dscale, real* dvalues, const real* dout,
                             const real* weights, const real* scores, const real* scale,
                             int64_t scale_count, const real* values, const real* out, int64_t B,
                             int64_t Tq, int64_t Tk, int64_t dv) {
  const FlushSubnormals flush;  // as in the forward: tiny weights make tiny products
  if (dv == 1 && B > 0 && Tk > 0 && with_register_batches(Tk, [&](auto batches) {
        register_rows_backward<decltype(batches)::value>(dscores, dscale, dvalues, dout, weights,
                                                         scores, scale, scale_count, values, out, B,
                                                         Tq, Tk);
      })) {
    return;
  }
  if (dvalues != nullptr) std::fill(dvalues, dvalues + B * Tk * dv, real(0));
  if (dscale != nullptr) std::fill(dscale, dscale + scale_count, real(0));
  std::vector<real> dz(static_cast<size_t>(Tk));
  for (int64_t b = 0; b < B; ++b) {
    const real* v = values + b * Tk * dv;
    real* dv_rows = dvalues == nullptr ? nullptr : dvalues + b * Tk * dv;
    for (int64_t q = 0; q < Tq; ++q) {
      const int64_t row = b * Tq + q;
      const real* g = dout + row * dv;
      const real* alpha = weights + row * Tk;
      if (dv == 1) {
        const Batch gradient(g[0]), inner(g[0] * out[row]);
        map(
            dz.data(), Tk,
            [&](Batch a, Batch value, Batch) { return a * (gradient * value - inner); }, alpha, v);
        if (dv_rows != nullptr) {
          map(
              dv_rows, Tk, [&](Batch a, Batch d, Batch) { return simd::fma(gradient, a, d); },
              alpha, dv_rows);
        }
      } else {
        const real inner = dot(g, out + row * dv, dv);  // 0 when dv = 0
        for (int64_t k = 0; k < Tk; ++k)
          dz[size_t(k)] = alpha[k] * (dot(g, v + k * dv, dv) - inner);
        for (int64_t k = 0; dv_rows != nullptr && k < Tk; ++k) {
          const Batch weight(alpha[k]);
          map(
              dv_rows + k * dv, dv,
              [&](Batch d, Batch gradient, Batch) { return simd::fma(weight, gradient, d); },
              dv_rows + k * dv, g);
        }
      }
      const real* s = scores + row * Tk;
      if (dscale != nullptr && scale_count == 1) {
        dscale[0] += dot(dz.data(), s, Tk);
      } else if (dscale != nullptr) {
        map(
            dscale, Tk, [](Batch total, Batch d, Batch x) { return simd::fma(d, x, total); },
            dscale, dz.data(), s);
      }
      if (dscores == nullptr) continue;
      if (scale_count == 0) {
        std::copy(dz.begin(), dz.end(), dscores + row * Tk);
      } else {  // one factor for the row (step 0), or one per key (step 1)
        binary_forward(Binary::mul, dscores + row * Tk, dz.data(), 1, scale,
                       scale_count == 1 ? 0 : 1, Tk);
      }
    }
  }
}

#endif  // ATTOGRAD_USE_SIMD; without it kernels::f is scalar::f (tensor/kernels.hpp)

}  // namespace attograd::kernels
