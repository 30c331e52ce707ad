// tests/nn/test_second_derivatives.cpp — second derivatives by double
// backward against their closed forms: the Hessian of softmax cross-entropy
// and Newton's method on a one-parameter function. These are the checks of
// exercises 11 and 12 in docs/exercises.md.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "attograd.hpp"

namespace test_second_derivatives {

using namespace attograd;

TEST_CASE("the Hessian of softmax cross-entropy is diag(p) - p p^T",
          "[nn][loss][higher-order][f64]") {
  // L(z) = −log softmax(z)_y = log Σ_c e^{z_c} − z_y
  // ∂L/∂z = p − e_y                        (p = softmax(z))
  // ∂²L/∂z∂zᵀ = diag(p) − p pᵀ              (y drops out: e_y is a constant)
  const std::vector<double> z_values = {0.5, -1.0, 2.0, 0.1};
  const int64_t classes = 4;
  const Tensor z = requires_grad_(from_vector({0.5, -1.0, 2.0, 0.1}, {1, classes}));
  const Tensor loss = nn::cross_entropy(z, {2});
  const Tensor dz = autograd::grad({loss}, {z}, {}, {.create_graph = true})[0];  // (1,C)

  double total = 0;
  for (double value : z_values) total += std::exp(value);
  std::vector<double> p;
  for (double value : z_values) p.push_back(std::exp(value) / total);

  for (int64_t i = 0; i < classes; ++i) {
    INFO("row " << i);
    CHECK(dz.data()[i] == Approx(p[i] - (i == 2 ? 1 : 0)).margin(1e-12));
    // Row i of the Hessian: the gradient of ∂L/∂z_i.
    const Tensor row =
        autograd::grad({select(select(dz, 0, 0), 0, i)}, {z}, {}, {.retain_graph = true})[0];
    for (int64_t j = 0; j < classes; ++j) {
      INFO("column " << j);
      CHECK(row.data()[j] == Approx((i == j ? p[i] : 0) - p[i] * p[j]).margin(1e-12));
    }
  }
}

TEST_CASE("a Newton step on exp(w) - 2w by double backward", "[autograd][higher-order][f64]") {
  // L(w) = eʷ − 2w, L'(w) = eʷ − 2, L''(w) = eʷ: the minimum is w* = ln 2, and
  // Newton's step w ← w − (eʷ − 2)/eʷ = w − 1 + 2e^{−w} from w = 0 gives
  // 1, 2/e, … converging quadratically.
  Tensor w = requires_grad_(scalar(0));
  std::vector<double> iterates;
  for (int step = 0; step < 5; ++step) {
    const Tensor loss = exp(w) - 2.0 * w;
    const Tensor slope = autograd::grad({loss}, {w}, {}, {.create_graph = true})[0];
    const Tensor curvature = autograd::grad({slope}, {w})[0];
    const double at = w.item();
    CHECK(slope.item() == Approx(std::exp(at) - 2).margin(1e-12));
    CHECK(curvature.item() == Approx(std::exp(at)).margin(1e-12));
    w.fill_(static_cast<real>(at - slope.item() / curvature.item()));
    iterates.push_back(w.item());
  }
  CHECK(iterates[0] == Approx(1).margin(1e-12));
  CHECK(iterates[1] == Approx(2 / std::exp(1.0)).margin(1e-12));
  // Quadratic convergence: each error about the square of the one before, over 2
  // (|e_{k+1}| ≈ L'''/(2L'') e_k² = e_k²/2 here).
  const double target = std::log(2.0);
  for (int k = 1; k + 1 < 4; ++k) {
    const double error = std::abs(iterates[k] - target);
    const double next = std::abs(iterates[k + 1] - target);
    CHECK(next == Approx(error * error / 2).epsilon(0.2));
  }
  CHECK(std::abs(iterates[4] - target) < 1e-12);
}

}  // namespace test_second_derivatives
