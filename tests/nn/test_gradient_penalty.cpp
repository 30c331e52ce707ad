// tests/nn/test_gradient_penalty.cpp — nn::gradient_penalty: its value
// against a function whose input gradient is known, its gradient (a second
// derivative of f) by finite differences ([f64]), and its refusals.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "attograd.hpp"

namespace test_gradient_penalty {

using namespace attograd;
using Catch::Matchers::Contains;

namespace {

// f(x) = w₂ tanh(W₁ x + b₁): (B,2) -> (B,1), each output from its own row.
Tensor small_mlp(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2) {
  return linear(tanh(linear(x, w1, b1)), w2, Tensor());
}

}  // namespace

TEST_CASE("gradient_penalty of a linear function is the squared norm of its weights",
          "[nn][higher-order]") {
  // f(x) = x · a: ∇ₓ f = a in every row, so P = ‖a‖² = 1 + 4 + 0.25 = 5.25,
  // and ∂P/∂a = 2a (the gradient reaches a through ∇ₓ f).
  const Tensor a = requires_grad_(tensor({1, -2, 0.5}));
  const Tensor x = tensor({{0.3, 1, -1}, {2, 0, 0.1}});  // data: requires no grad
  const Tensor penalty =
      nn::gradient_penalty([&a](const Tensor& input) { return sum(input * a, {1}); }, x);
  CHECK(penalty.shape() == Shape{});
  CHECK(penalty.item() == Approx(5.25));
  backward(penalty);
  const std::vector<real> da = grad(a).to_vector();
  CHECK(da[0] == Approx(2));
  CHECK(da[1] == Approx(-4));
  CHECK(da[2] == Approx(1));
}

TEST_CASE("gradient_penalty's gradient passes gradcheck", "[nn][higher-order][gradcheck][f64]") {
  // P's gradient with respect to the weights and to x is a second derivative
  // of f: tanh, linear and sum differentiated twice. Inputs away from 0 keep
  // tanh's curvature non-trivial.
  Generator generator(7);
  const Tensor x = uniform({4, 2}, -1.5, 1.5, generator);
  const Tensor w1 = uniform({3, 2}, -1.0, 1.0, generator);
  const Tensor b1 = uniform({3}, -0.5, 0.5, generator);
  const Tensor w2 = uniform({1, 3}, -1.0, 1.0, generator);
  // gradcheck evaluates its function under NoGradGuard for the finite
  // differences, and the penalty differentiates f inside, which needs
  // recording: the function turns it back on, as gradgradcheck's does.
  const GradcheckResult result = gradcheck(
      [](const std::vector<Tensor>& in) {
        const GradModeGuard recording(true);
        return nn::gradient_penalty(
            [&in](const Tensor& input) { return small_mlp(input, in[1], in[2], in[3]); }, in[0]);
      },
      {x, w1, b1, w2});
  INFO(result.report);
  CHECK(result.passed);
  CHECK(result.elements_checked == 8 + 6 + 3 + 3);
}

TEST_CASE("gradient_penalty says what it needs", "[nn][higher-order]") {
  const Tensor w = requires_grad_(tensor({1, 2}));
  const auto f = [&w](const Tensor& input) { return sum(input * w, {1}); };
  CHECK_THROWS_WITH(nn::gradient_penalty(f, tensor({1, 2})),
                    Contains("gradient_penalty: x must be (B,D), got (2)"));
  CHECK_THROWS_WITH(nn::gradient_penalty([&w](const Tensor& input) { return input * w; },
                                         tensor({{1, 2}, {3, 4}})),
                    Contains("f must give one value per sample, (B) or (B,1) with B = 2"));
  NoGradGuard no_grad;
  CHECK_THROWS_WITH(nn::gradient_penalty(f, tensor({{1, 2}})), Contains("recording is off"));
}

}  // namespace test_gradient_penalty
