// tensor/kernels_norm.cpp — layer normalisation's loops: the scalar
// specification first, then the xsimd version. Per row of D values, with
// r = 1/√(σ² + eps):
//   forward   x̂ = (x − μ)·r,  y = x̂ ⊙ w + b
//   backward  dx̂ = dy ⊙ w,  dx = r (dx̂ − mean dx̂ − x̂ · mean(dx̂ ⊙ x̂)),
//             dw = Σ_rows dy ⊙ x̂,  db = Σ_rows dy
//
// A row's mean and variance are summed in double, so that a row's mean does
// not lose the small differences a float sum of D terms would; every value
// computed from them is formed in double and rounded to real once. The SIMD
// version sums each row in W/2-lane double batches, in another order than the
// scalar loop, so μ, σ² and the two sums of the backward agree with it to a
// double sum's rounding, and the outputs, each rounded once from double, to
// one rounding of real. The weight and bias gradients add the rows in the same
// order in both versions, with the same fused multiply-adds: bit for bit.
#include <algorithm>
#include <cmath>

#include "tensor/kernels.hpp"
#include "tensor/kernels_simd.hpp"

namespace attograd::kernels {

namespace scalar {

void layer_norm_forward(real* y, real* x_hat, real* rstd, const real* x, const real* weight,
                        const real* bias, int64_t N, int64_t D, real eps) {
  for (int64_t n = 0; n < N; ++n) {
    const real* row = x + n * D;
    double total = 0;
    for (int64_t j = 0; j < D; ++j) total += row[j];
    const double mu = total / static_cast<double>(D);
    double squares = 0;
    for (int64_t j = 0; j < D; ++j) squares = std::fma(row[j] - mu, row[j] - mu, squares);
    const double r = 1.0 / std::sqrt(squares / static_cast<double>(D) + static_cast<double>(eps));
    rstd[n] = static_cast<real>(r);
    for (int64_t j = 0; j < D; ++j) {
      const real normalized = static_cast<real>((row[j] - mu) * r);
      x_hat[n * D + j] = normalized;
      y[n * D + j] = std::fma(normalized, weight ? weight[j] : real(1), bias ? bias[j] : real(0));
    }
  }
}

void layer_norm_backward(real* dx, real* dweight, real* dbias, const real* dy, const real* x_hat,
                         const real* rstd, const real* weight, int64_t N, int64_t D) {
  if (dweight) std::fill(dweight, dweight + D, real(0));
  if (dbias) std::fill(dbias, dbias + D, real(0));
  for (int64_t n = 0; n < N; ++n) {
    const real* dy_row = dy + n * D;
    const real* x_hat_row = x_hat + n * D;
    for (int64_t j = 0; j < D; ++j) {
      if (dweight) dweight[j] = std::fma(dy_row[j], x_hat_row[j], dweight[j]);
      if (dbias) dbias[j] += dy_row[j];
    }
    if (!dx) continue;
    double sum_dx_hat = 0, sum_dx_hat_x_hat = 0;
    for (int64_t j = 0; j < D; ++j) {
      const double dx_hat = dy_row[j] * (weight ? weight[j] : real(1));
      sum_dx_hat += dx_hat;
      sum_dx_hat_x_hat = std::fma(dx_hat, double(x_hat_row[j]), sum_dx_hat_x_hat);
    }
    const double mean_dx_hat = sum_dx_hat / static_cast<double>(D);
    const double mean_dx_hat_x_hat = sum_dx_hat_x_hat / static_cast<double>(D);
    for (int64_t j = 0; j < D; ++j) {
      const double dx_hat = dy_row[j] * (weight ? weight[j] : real(1));
      dx[n * D + j] = static_cast<real>(
          rstd[n] * std::fma(-double(x_hat_row[j]), mean_dx_hat_x_hat, dx_hat - mean_dx_hat));
    }
  }
}

}  // namespace scalar

#if ATTOGRAD_USE_SIMD

using namespace simd;

// Per row: Σx and Σ(x − μ)² over the full double batches, the last D mod WD
// values one at a time (added to the batch sums, not mixed into their lanes);
// x̂ formed in double a batch at a time, and y = x̂·w + b in real.
void layer_norm_forward(real* y, real* x_hat, real* rstd, const real* x, const real* weight,
                        const real* bias, int64_t N, int64_t D, real eps) {
  const int64_t full = D - D % WD;
  for (int64_t n = 0; n < N; ++n) {
    const real* row = x + n * D;
    Double total_lanes(0.0);
    for (int64_t j = 0; j < full; j += WD) total_lanes += wide(row + j);
    double total = xsimd::hadd(total_lanes);
    for (int64_t j = full; j < D; ++j) total += row[j];
    const double mu = total / static_cast<double>(D);
    const Double mu_lanes(mu);
    Double square_lanes(0.0);
    for (int64_t j = 0; j < full; j += WD) {
      const Double centred = wide(row + j) - mu_lanes;
      square_lanes = simd::fma(centred, centred, square_lanes);
    }
    double squares = xsimd::hadd(square_lanes);
    for (int64_t j = full; j < D; ++j) squares = std::fma(row[j] - mu, row[j] - mu, squares);
    const double r = 1.0 / std::sqrt(squares / static_cast<double>(D) + static_cast<double>(eps));
    rstd[n] = static_cast<real>(r);
    const Double r_lanes(r);
    real* hat = x_hat + n * D;
    for (int64_t j = 0; j < full; j += WD)
      store_narrow(hat + j, (wide(row + j) - mu_lanes) * r_lanes);
    for (int64_t j = full; j < D; ++j) hat[j] = static_cast<real>((row[j] - mu) * r);
    real* out = y + n * D;
    if (weight == nullptr && bias == nullptr) {
      std::copy(hat, hat + D, out);
    } else {
      map(
          out, D,
          [&](Batch h, Batch w, Batch b) {
            return simd::fma(h, weight ? w : Batch(real(1)), bias ? b : Batch(real(0)));
          },
          hat, weight, bias);
    }
  }
}

// dweight and dbias row by row as the scalar loop adds them; the two sums of
// dx̂ in double batches; dx formed in double a batch at a time.
void layer_norm_backward(real* dx, real* dweight, real* dbias, const real* dy, const real* x_hat,
                         const real* rstd, const real* weight, int64_t N, int64_t D) {
  if (dweight) std::fill(dweight, dweight + D, real(0));
  if (dbias) std::fill(dbias, dbias + D, real(0));
  const int64_t full = D - D % WD;
  for (int64_t n = 0; n < N; ++n) {
    const real* dy_row = dy + n * D;
    const real* x_hat_row = x_hat + n * D;
    if (dweight) {
      map(
          dweight, D, [](Batch g, Batch h, Batch acc) { return simd::fma(g, h, acc); }, dy_row,
          x_hat_row, dweight);
    }
    if (dbias) {
      map(
          dbias, D, [](Batch acc, Batch g, Batch) { return acc + g; }, dbias, dy_row);
    }
    if (!dx) continue;
    // dx̂ = dy ⊙ w, in real as the scalar loop forms it, then widened.
    auto dx_hat_at = [&](int64_t j) {
      if (weight == nullptr) return wide(dy_row + j);
      alignas(64) real product[WD];
      for (int64_t i = 0; i < WD; ++i) product[i] = dy_row[j + i] * weight[j + i];
      return wide(product);
    };
    Double sum_lanes(0.0), sum_x_hat_lanes(0.0);
    for (int64_t j = 0; j < full; j += WD) {
      const Double d = dx_hat_at(j);
      sum_lanes += d;
      sum_x_hat_lanes = simd::fma(d, wide(x_hat_row + j), sum_x_hat_lanes);
    }
    double sum_dx_hat = xsimd::hadd(sum_lanes), sum_dx_hat_x_hat = xsimd::hadd(sum_x_hat_lanes);
    for (int64_t j = full; j < D; ++j) {
      const double d = dy_row[j] * (weight ? weight[j] : real(1));
      sum_dx_hat += d;
      sum_dx_hat_x_hat = std::fma(d, double(x_hat_row[j]), sum_dx_hat_x_hat);
    }
    const double mean_dx_hat = sum_dx_hat / static_cast<double>(D);
    const double mean_dx_hat_x_hat = sum_dx_hat_x_hat / static_cast<double>(D);
    const Double mean_lanes(mean_dx_hat), mean_x_hat_lanes(mean_dx_hat_x_hat);
    const Double r_lanes(static_cast<double>(rstd[n]));
    real* dx_row = dx + n * D;
    for (int64_t j = 0; j < full; j += WD) {
      const Double d = dx_hat_at(j);
      store_narrow(dx_row + j,
                   r_lanes * simd::fma(-wide(x_hat_row + j), mean_x_hat_lanes, d - mean_lanes));
    }
    for (int64_t j = full; j < D; ++j) {
      const double d = dy_row[j] * (weight ? weight[j] : real(1));
      dx_row[j] = static_cast<real>(
          rstd[n] * std::fma(-double(x_hat_row[j]), mean_dx_hat_x_hat, d - mean_dx_hat));
    }
  }
}

#endif  // ATTOGRAD_USE_SIMD; without it kernels::f is scalar::f (tensor/kernels.hpp)

}  // namespace attograd::kernels
