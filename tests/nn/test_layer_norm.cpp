// tests/nn/test_layer_norm.cpp — the fused layer_norm op against its composed
// specification and PyTorch, and the nn::LayerNorm module.
//
// PyTorch's numbers come from torch 1.13 in double: nn.LayerNorm(4) with the
// weight and bias below, and the gradient of Σ y ⊙ g for the g below.
// Gradients are checked by central differences in the gradcheck table
// (tests/autograd/test_gradcheck.cpp, rows layer_norm and layer_norm_composed).
#include <catch2/catch.hpp>
#include <type_traits>
#include <vector>

#include "autograd/ops.hpp"
#include "nn/layer_norm.hpp"
#include "tensor/factory.hpp"
#include "tests/support/tensor_checks.hpp"

namespace test_layer_norm {

using namespace attograd;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// The fused op sums in double; the composed one in `real`. In double both are
// exact to rounding; in float the composed sum of D terms is off by a few ulps.
const double kClose = std::is_same_v<real, double> ? 1e-12 : 2e-6;

void check_values(const Tensor& t, const std::vector<double>& expected, double tolerance) {
  const std::vector<real> values = t.to_vector();
  REQUIRE(values.size() == expected.size());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("element " << i);
    CHECK(values[i] == Approx(expected[i]).margin(tolerance));
  }
}

}  // namespace

TEST_CASE("layer_norm: PyTorch's values and gradients", "[layer_norm]") {
  const Tensor x = requires_grad_(from_vector({1, 2, 3, 4, -1, 0.5, 2, 7}, {2, 4}));
  const Tensor weight = requires_grad_(from_vector({0.5, 1, 1.5, 2}, {4}));
  const Tensor bias = requires_grad_(from_vector({0.1, -0.2, 0.3, 0}, {4}));
  const Tensor g = from_vector({1, -2, 3, 0.5, 0.25, 1, -1, 2}, {2, 4});
  const double tolerance = std::is_same_v<real, double> ? 1e-12 : 1e-5;
  for (const bool fused : {true, false}) {
    INFO((fused ? "fused" : "composed"));
    zero_grad(x);
    zero_grad(weight);
    zero_grad(bias);
    const Tensor y =
        fused ? layer_norm(x, {4}, weight, bias) : layer_norm_composed(x, {4}, weight, bias);
    check_values(y,
                 {-0.5708177084943474, -0.6472118096365413, 0.9708177219053923, 2.6832708399378538,
                  -0.41948198323131725, -0.740261267090523, 0.237662173754357, 3.2415675846617447},
                 tolerance);
    backward(sum(y * g));
    check_values(
        grad(x),
        {0.6260879429208359, -2.3255042567454725, 2.7727160634017807, -1.0732997495771448,
         0.24762815728300497, 0.2950008768980213, -0.7797074904852586, 0.23707845630423233},
        tolerance);
    check_values(grad(weight),
                 {-1.601376412329644, 0.3541623492023275, 1.3831939787466414, 3.9123852946462083},
                 tolerance);
    check_values(grad(bias), {1.25, -1.0, 2.0, 2.5}, tolerance);
  }
}

TEST_CASE("layer_norm: the fused op equals the composed one, values and gradients",
          "[layer_norm]") {
  Generator generator(11);
  // Sizes 1, 7, 8, 9, 17 on the normalised axis, several leading shapes, two
  // normalised axes, and rows far from zero mean (where a naive float
  // variance would lose digits).
  struct Case {
    Shape x, normalized;
    double offset;
  };
  for (const Case& c : std::vector<Case>{{{3, 1}, {1}, 0},
                                         {{5, 7}, {7}, 0},
                                         {{2, 3, 8}, {8}, 0},
                                         {{9}, {9}, 0},
                                         {{4, 17}, {17}, 100},
                                         {{2, 3, 4}, {3, 4}, 0}}) {
    INFO("x " << c.x.str() << ", normalized_shape " << c.normalized.str());
    const Tensor x = requires_grad_(randn(c.x, generator) + real(c.offset));
    const Tensor weight = requires_grad_(randn(c.normalized, generator));
    const Tensor bias = requires_grad_(randn(c.normalized, generator));
    const Tensor g = randn(c.x, generator);
    std::vector<Tensor> results;
    for (const bool fused : {true, false}) {
      zero_grad(x);
      zero_grad(weight);
      zero_grad(bias);
      const Tensor y = fused ? layer_norm(x, c.normalized, weight, bias)
                             : layer_norm_composed(x, c.normalized, weight, bias);
      backward(sum(y * g));
      results.insert(results.end(), {detach(y), grad(x), grad(weight), grad(bias)});
    }
    // The composed form subtracts a float mean of values near 100: its
    // relative error grows with the offset, the fused one's does not.
    const double tolerance = kClose * (1 + c.offset);
    for (size_t i = 0; i < 4; ++i) {
      INFO("result " << i << " (y, dx, dweight, dbias)");
      testing::check_close(results[i], results[4 + i], tolerance);
    }
  }
}

TEST_CASE("layer_norm: each row gets mean 0 and variance 1 without gain or bias", "[layer_norm]") {
  Generator generator(3);
  const Tensor y = layer_norm(randn({6, 32}, generator) * real(5), {32}, Tensor(), Tensor());
  const Tensor row_mean = mean(y, {1});
  const Tensor row_variance = mean(y * y, {1});
  for (int64_t r = 0; r < 6; ++r) {
    CHECK(row_mean.to_vector()[r] == Approx(0).margin(1e-5));
    CHECK(row_variance.to_vector()[r] == Approx(1).epsilon(1e-4));  // ε = 1e-5 against σ² = 25
  }
}

TEST_CASE("layer_norm: bad shapes and eps are errors naming the op and the shapes",
          "[layer_norm]") {
  const Tensor x = zeros({2, 5});
  CHECK_THROWS_WITH(layer_norm(x, {4}, Tensor(), Tensor()),
                    StartsWith("layer_norm: input of shape (2,5) does not end in "
                               "normalized_shape (4)"));
  CHECK_THROWS_WITH(layer_norm(x, {5}, zeros({4}), Tensor()),
                    StartsWith("layer_norm: the weight has shape (4); it must be "
                               "normalized_shape (5)"));
  CHECK_THROWS_WITH(layer_norm(x, {5}, Tensor(), zeros({5, 1})),
                    Contains("the bias has shape (5,1)"));
  CHECK_THROWS_WITH(layer_norm(x, {5}, Tensor(), Tensor(), real(0)),
                    StartsWith("layer_norm: eps is 0; it must be positive"));
  CHECK_THROWS_WITH(layer_norm_composed(x, {2, 5, 1}, Tensor(), Tensor()),
                    StartsWith("layer_norm_composed: input of shape (2,5)"));
  CHECK_THROWS_WITH(nn::LayerNorm(nn::LayerNormOptions(Shape{})),
                    StartsWith("LayerNorm: normalized_shape () must name at least one axis"));
}

TEST_CASE("LayerNorm: PyTorch's names and starting values, options", "[layer_norm]") {
  nn::LayerNorm norm(nn::LayerNormOptions({3}));
  const auto named = norm.named_parameters();
  REQUIRE(named.size() == 2);
  CHECK(named[0].first == "weight");
  CHECK(named[1].first == "bias");
  check_values(norm.weight, {1, 1, 1}, 0);
  check_values(norm.bias, {0, 0, 0}, 0);
  CHECK(norm.summary() == "LayerNorm((3), eps=1e-05, elementwise_affine=true)");
  nn::LayerNorm plain(nn::LayerNormOptions({3}).elementwise_affine(false).eps(1e-3));
  CHECK(plain.named_parameters().empty());
  const Tensor x = from_vector({1, 2, 4}, {1, 3});
  testing::check_close(plain.forward(x), layer_norm(x, {3}, Tensor(), Tensor(), real(1e-3)), 0);
}

}  // namespace test_layer_norm
