// check_rms_norm.cpp — proves RMSNorm's gradients (links attograd::attograd_f64).
//
// For each shape, both versions pass gradcheck (central differences in
// double, autograd/gradcheck.hpp), with respect to x and to the gain, and
// gradgradcheck (the same for second derivatives, through
// backward(…, create_graph)); and the
// op with its own backward gives the composed version's values and gradients
// to within rounding. Exits 0 when everything passes, 1 otherwise.
//
//   check_rms_norm
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "rms_norm.hpp"

using namespace attograd;

namespace {

constexpr double kEps = 1e-5;

// The largest |a − b| over all elements.
double max_difference(const Tensor& a, const Tensor& b) {
  const std::vector<real> left = a.to_vector();
  const std::vector<real> right = b.to_vector();
  double worst = 0;
  for (size_t i = 0; i < left.size(); ++i)
    worst = std::max(worst, std::abs(double(left[i] - right[i])));
  return worst;
}

// Value and gradients of Σ f(x, g) ⊙ R for a fixed random R.
struct Evaluation {
  Tensor value, dx, dgain;
};
template <typename F>
Evaluation evaluate(F&& f, const Tensor& x_values, const Tensor& gain_values, const Tensor& r) {
  const Tensor x = requires_grad_(x_values.clone_data());
  const Tensor gain = requires_grad_(gain_values.clone_data());
  const Tensor y = f(x, gain);
  backward(sum(y * r));
  return {y, grad(x), grad(gain)};
}

bool check_shape(const Shape& shape, Generator& generator) {
  const int64_t features = shape[shape.ndim() - 1];
  const Tensor x = randn(shape, generator);
  const Tensor gain = uniform({features}, 0.5, 1.5, generator);
  bool passed = true;
  for (const bool fused : {false, true}) {
    const auto f = [fused](const std::vector<Tensor>& in) {
      return fused ? extension::rms_norm(in[0], in[1], kEps)
                   : extension::rms_norm_composed(in[0], in[1], kEps);
    };
    for (const GradcheckResult& result : {gradcheck(f, {x, gain}), gradgradcheck(f, {x, gain})}) {
      fmt::print("{:<18} x {:<10} {}\n", fused ? "rms_norm" : "rms_norm_composed",
                 fmt::format("{}", shape), result.report.substr(0, result.report.find(':')));
      if (!result.passed) fmt::print("  {}\n", result.report);
      passed = passed && result.passed;
    }
  }
  // The two versions sum in different orders, so they agree to rounding, not bits.
  const Tensor r = randn(shape, generator);
  const Evaluation composed = evaluate(
      [](const Tensor& a, const Tensor& g) { return extension::rms_norm_composed(a, g, kEps); }, x,
      gain, r);
  const Evaluation own = evaluate(
      [](const Tensor& a, const Tensor& g) { return extension::rms_norm(a, g, kEps); }, x, gain, r);
  const double worst =
      std::max({max_difference(composed.value, own.value), max_difference(composed.dx, own.dx),
                max_difference(composed.dgain, own.dgain)});
  const bool agree = worst <= 1e-12;
  fmt::print("{:<18} x {:<10} {} (largest difference {:.1e}, allowed 1e-12)\n", "both agree",
             fmt::format("{}", shape), agree ? "passed" : "FAILED", worst);
  return passed && agree;
}

}  // namespace

int main() {
  static_assert(sizeof(real) == sizeof(double),
                "check_rms_norm checks gradients in double: link attograd::attograd_f64");
  Generator generator(7);
  bool passed = true;
  // One feature, a SIMD width's worth and either side of it, and a batch of
  // sentences' worth of rows (B, T, C).
  for (const Shape& shape : {Shape{1}, Shape{7}, Shape{3, 8}, Shape{2, 9}, Shape{2, 3, 4}}) {
    passed = check_shape(shape, generator) && passed;
  }
  fmt::print("{}\n", passed ? "all gradients agree with finite differences"
                            : "error: a gradient disagrees with finite differences");
  return passed ? 0 : 1;
}
