// tensor/kernels_optim.cpp — the loops of training's update: Adam's step over
// one parameter, and Σ x² in double for a gradient norm. The scalar
// specification first, then the xsimd version.
//
// Adam's step rounds the same operations in the same order in both versions
// (the products that are added are explicit fused multiply-adds, so the
// compiler cannot contract one version and not the other), and square root
// and division round correctly in every lane: the two agree bit for bit.
// Σ x² adds in a different order (two batches of double accumulators, then
// their lanes) and agrees to the rounding of a double sum.
#include <cmath>

#include "tensor/kernels.hpp"
#include "tensor/kernels_simd.hpp"

namespace attograd::kernels {

namespace scalar {

void adam_step(real* p, real* m, real* v, const real* g, int64_t n, const AdamStep& step) {
  for (int64_t i = 0; i < n; ++i) {
    const real d = std::fma(step.weight_decay, p[i], g[i]);
    m[i] = std::fma(step.one_minus_beta1, d - m[i], m[i]);
    v[i] = std::fma(step.beta2, v[i], step.one_minus_beta2 * d * d);
    const real denominator = std::sqrt(v[i]) / step.sqrt_correction2 + step.eps;
    p[i] -= step.step_size * m[i] / denominator;
  }
}

double sum_of_squares(const real* x, int64_t n) {
  double total = 0;
  for (int64_t i = 0; i < n; ++i) total = std::fma(double(x[i]), double(x[i]), total);
  return total;
}

}  // namespace scalar

#if ATTOGRAD_USE_SIMD

using namespace simd;

// W elements at a time; the last n mod W by the scalar loop, which computes
// each element exactly as a lane does.
void adam_step(real* p, real* m, real* v, const real* g, int64_t n, const AdamStep& step) {
  const Batch weight_decay(step.weight_decay), one_minus_beta1(step.one_minus_beta1);
  const Batch beta2(step.beta2), one_minus_beta2(step.one_minus_beta2);
  const Batch sqrt_correction2(step.sqrt_correction2), eps(step.eps), step_size(step.step_size);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const Batch p_i = load(p + i), m_i = load(m + i);
    const Batch d = simd::fma(weight_decay, p_i, load(g + i));
    const Batch m_new = simd::fma(one_minus_beta1, d - m_i, m_i);
    const Batch v_new = simd::fma(beta2, load(v + i), one_minus_beta2 * d * d);
    const Batch denominator = simd::div(simd::sqrt(v_new), sqrt_correction2) + eps;
    m_new.store_unaligned(m + i);
    v_new.store_unaligned(v + i);
    (p_i - simd::div(step_size * m_new, denominator)).store_unaligned(p + i);
  }
  scalar::adam_step(p + i, m + i, v + i, g + i, n - i, step);
}

// Two chains of double accumulators, each fed one batch of doubles (wide())
// per step.
double sum_of_squares(const real* x, int64_t n) {
  Double total0(0.0), total1(0.0);
  int64_t i = 0;
  for (; i + 2 * WD <= n; i += 2 * WD) {
    const Double low = wide(x + i), high = wide(x + i + WD);
    total0 = simd::fma(low, low, total0);
    total1 = simd::fma(high, high, total1);
  }
  return xsimd::hadd(total0 + total1) + scalar::sum_of_squares(x + i, n - i);
}

#endif  // ATTOGRAD_USE_SIMD; without it kernels::f is scalar::f (tensor/kernels.hpp)

}  // namespace attograd::kernels
