// tests/autograd/test_higher_order.cpp — gradients of gradients: the API
// (backward's create_graph, autograd::grad), gradgradcheck catching a wrong
// second derivative, third derivatives against their closed forms, and the
// fast path's deferred gradients falling back to recorded ops. The op-by-op
// second derivatives are the gradcheck table's (tests/autograd/test_gradcheck.cpp).
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "attograd.hpp"
#include "autograd/op_helpers.hpp"

namespace test_higher_order {

using namespace attograd;

namespace {

using Inputs = std::vector<Tensor>;

// y = x³ elementwise with dx = dy ⊙ 3x² right, but whose second derivative
// (6x) is `factor` times too large in element `bad`: under create_graph the
// closure forms 3x² through an op whose own backward scales element `bad`.
Tensor scaled_square(const Tensor& x, int64_t bad, real factor) {
  const Tensor values = x.contiguous_data();
  Tensor y = Tensor::empty(x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) y.data()[i] = values.data()[i] * values.data()[i];
  return record("scaled_square", y, {x}, [x, bad, factor](const Tensor& dy) {
    Tensor dx = (dy * (real(2) * x.contiguous_data())).clone_data();
    dx.data()[bad] *= factor;
    return Gradients{dx};
  });
}

Tensor cube_with_scaled_second_derivative(const Tensor& x, int64_t bad, real factor) {
  const Tensor values = x.contiguous_data();
  Tensor y = Tensor::empty(x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    y.data()[i] = values.data()[i] * values.data()[i] * values.data()[i];
  }
  return record("cube", y, {x}, [x, bad, factor](const Tensor& dy) {
    // dx = dy ⊙ 3x²: x² by scaled_square, whose gradient is what is off.
    return Gradients{dy * (real(3) * scaled_square(x, bad, factor))};
  });
}

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> out;
  for (real v : t.to_vector()) out.push_back(v);
  return out;
}

}  // namespace

TEST_CASE("create_graph: the gradient of x³ is 3x², differentiable again to 6x and 6",
          "[higher-order][autograd]") {
  const Tensor x = requires_grad_(tensor({1.5, -2, 0.5}));
  const Tensor y = sum(x * x * x);
  const Tensor g = autograd::grad({y}, {x}, {}, {.create_graph = true})[0];
  REQUIRE(requires_grad(g));
  CHECK(as_doubles(g) == std::vector<double>{6.75, 12, 0.75});
  const Tensor h = autograd::grad({sum(g)}, {x}, {}, {.create_graph = true})[0];
  CHECK(as_doubles(h) == std::vector<double>{9, -12, 3});
  const Tensor third = autograd::grad({sum(h)}, {x})[0];
  CHECK(as_doubles(third) == std::vector<double>{6, 6, 6});
}

TEST_CASE("backward(create_graph) leaves a .grad with a graph, and without it nothing is recorded",
          "[higher-order][autograd]") {
  const Tensor x = requires_grad_(tensor({2.0, 3.0}));
  backward(sum(x * x * x), Tensor(), {.create_graph = true});
  const Tensor g = grad(x);  // 3x²
  REQUIRE(requires_grad(g));
  CHECK(as_doubles(g) == std::vector<double>{12, 27});
  zero_grad(x);
  backward(sum(g));  // d/dx Σ 3x² = 6x
  CHECK(as_doubles(grad(x)) == std::vector<double>{12, 18});

  const Tensor z = requires_grad_(tensor({2.0, 3.0}));
  backward(sum(z * z * z));
  CHECK_FALSE(requires_grad(grad(z)));
}

TEST_CASE("autograd::grad returns gradients and leaves every .grad alone",
          "[higher-order][autograd]") {
  const Tensor a = requires_grad_(tensor({1.0, 2.0}));
  const Tensor b = requires_grad_(tensor({3.0, -1.0}));
  const Tensor y = sum(a * b);
  const std::vector<Tensor> g = autograd::grad({y}, {b, a});
  REQUIRE(g.size() == 2);
  CHECK(as_doubles(g[0]) == std::vector<double>{1, 2});  // ∂/∂b = a
  CHECK(as_doubles(g[1]) == std::vector<double>{3, -1});
  CHECK_FALSE(grad(a).defined());
  CHECK_FALSE(grad(b).defined());
  // Without retain_graph (and create_graph) the graph is freed.
  CHECK_THROWS_WITH(autograd::grad({y}, {a}), Catch::Contains("retain_graph=true"));
}

TEST_CASE("autograd::grad: with respect to an intermediate tensor, several outputs, grad_outputs",
          "[higher-order][autograd]") {
  const Tensor x = requires_grad_(tensor({1.0, 2.0}));
  const Tensor h = x * x;  // an intermediate
  const Tensor y1 = sum(h * 3.0);
  const Tensor y2 = h * 2.0;  // not a scalar: needs its own gradient
  const std::vector<Tensor> g =
      autograd::grad({y1, y2}, {h, x}, {Tensor(), tensor({1.0, 10.0})}, {.retain_graph = true});
  CHECK(as_doubles(g[0]) == std::vector<double>{5, 23});   // 3 + 2·(1, 10)
  CHECK(as_doubles(g[1]) == std::vector<double>{10, 92});  // (5, 23) ⊙ 2x
  // The same output with and without retain: create_graph implies it.
  const Tensor z = sum(x * x);
  autograd::grad({z}, {x}, {}, {.create_graph = true});
  CHECK_NOTHROW(autograd::grad({z}, {x}));
}

TEST_CASE("autograd::grad: unused inputs, non-scalar outputs and tensors outside the graph",
          "[higher-order][autograd]") {
  const Tensor x = requires_grad_(tensor({1.0, 2.0}));
  const Tensor unused = requires_grad_(tensor({5.0}));
  const Tensor constant = tensor({1.0, 1.0});
  const Tensor y = sum(x * x);
  CHECK_THROWS_WITH(autograd::grad({y}, {x, unused}, {}, {.retain_graph = true}),
                    Catch::StartsWith("autograd::grad: input 1 (shape (1)) is not used") &&
                        Catch::Contains("allow_unused=true"));
  const std::vector<Tensor> g =
      autograd::grad({y}, {x, unused}, {}, {.retain_graph = true, .allow_unused = true});
  CHECK(g[0].defined());
  CHECK_FALSE(g[1].defined());
  CHECK_THROWS_WITH(autograd::grad({y}, {constant}, {}, {.retain_graph = true}),
                    Catch::StartsWith("autograd::grad: input 0 does not require grad"));
  CHECK_THROWS_WITH(autograd::grad({x * x}, {x}, {}, {.retain_graph = true}),
                    Catch::StartsWith("autograd::grad: output 0 has shape (2)") &&
                        Catch::Contains("one-element"));
  CHECK_THROWS_WITH(autograd::grad({y}, {x}, {Tensor(), Tensor()}, {.retain_graph = true}),
                    Catch::StartsWith("autograd::grad: 2 grad_outputs for 1 outputs"));
  CHECK_THROWS_WITH(autograd::grad({constant}, {x}),
                    Catch::StartsWith("autograd::grad: output 0 does not require grad"));
  // In the graph, but only through a zero gradient: zeros, as in PyTorch.
  const Tensor m = requires_grad_(tensor({-1.0, -2.0}));
  const Tensor r = sum(relu(m));
  CHECK(as_doubles(autograd::grad({r}, {m})[0]) == std::vector<double>{0, 0});
}

TEST_CASE("gradgradcheck passes a right second derivative and catches one 1% off in one element",
          "[higher-order][gradcheck][f64]") {
  Generator generator(7);
  const Tensor x = uniform({3, 5}, 0.5, 2.0, generator);
  constexpr int64_t kBad = 7;
  const GradcheckResult right = gradgradcheck(
      [](const Inputs& in) { return cube_with_scaled_second_derivative(in[0], kBad, real(1)); },
      {x});
  INFO(right.report);
  CHECK(right.passed);
  // First derivatives are right either way: only the second derivative is off.
  const GradcheckResult first = gradcheck(
      [](const Inputs& in) { return cube_with_scaled_second_derivative(in[0], kBad, real(1.01)); },
      {x});
  INFO(first.report);
  CHECK(first.passed);

  const GradcheckResult wrong = gradgradcheck(
      [](const Inputs& in) { return cube_with_scaled_second_derivative(in[0], kBad, real(1.01)); },
      {x});
  INFO(wrong.report);
  CHECK_FALSE(wrong.passed);
  CHECK(wrong.input == 0);
  CHECK(wrong.element == kBad);
  CHECK_THAT(wrong.report, Catch::StartsWith("gradgradcheck FAILED: 30 elements; worst is input 0 "
                                             "element 7"));
}

TEST_CASE("gradgradcheck fails a gradient formed by a kernel, without history",
          "[higher-order][gradcheck][f64]") {
  // y = x², whose closure forms 2x⊙dy in plain numbers even under
  // create_graph: the first derivative is right, the second (2) is lost.
  auto square_without_history = [](const Inputs& in) {
    const Tensor& x = in[0];
    Tensor y = Tensor::empty(x.shape());
    const Tensor values = x.contiguous_data();
    for (int64_t i = 0; i < x.numel(); ++i) y.data()[i] = values.data()[i] * values.data()[i];
    return record("square_without_history", y, {x}, [values](const Tensor& dy) {
      const Tensor d = dy.contiguous_data();
      Tensor dx = Tensor::empty(values.shape());
      for (int64_t i = 0; i < dx.numel(); ++i) dx.data()[i] = 2 * values.data()[i] * d.data()[i];
      return Gradients{dx};
    });
  };
  Generator generator(8);
  const Tensor x = uniform({4}, -1.0, 1.0, generator);
  CHECK(gradcheck(square_without_history, {x}).passed);
  const GradcheckResult result = gradgradcheck(square_without_history, {x});
  INFO(result.report);
  CHECK_FALSE(result.passed);
}

TEST_CASE("third derivatives of tanh, sigmoid and exp equal their closed forms",
          "[higher-order][f64]") {
  const std::vector<double> points = {-2.0, -0.7, 0.0, 0.3, 1.9};
  auto third = [&](Tensor (*f)(const Tensor&)) {
    const Tensor x = requires_grad_(from_vector(std::vector<real>(points.begin(), points.end())));
    const Tensor d1 = autograd::grad({sum(f(x))}, {x}, {}, {.create_graph = true})[0];
    const Tensor d2 = autograd::grad({sum(d1)}, {x}, {}, {.create_graph = true})[0];
    return as_doubles(autograd::grad({sum(d2)}, {x})[0]);
  };
  const std::vector<double> tanh3 = third(attograd::tanh);
  const std::vector<double> sigmoid3 = third(attograd::sigmoid);
  const std::vector<double> exp3 = third(attograd::exp);
  for (size_t i = 0; i < points.size(); ++i) {
    const double x = points[i];
    const double t = std::tanh(x);
    const double s = 1 / (1 + std::exp(-x));
    INFO("x = " << x);
    CHECK(tanh3[i] == Approx(-2 * (1 - t * t) * (1 - 3 * t * t)).margin(1e-12));  // tanh'''
    CHECK(sigmoid3[i] == Approx(s * (1 - s) * (1 - 6 * s + 6 * s * s)).margin(1e-12));
    CHECK(exp3[i] == Approx(std::exp(x)).epsilon(1e-14));
  }
}

TEST_CASE("deferred gradients fall back to recorded products under create_graph",
          "[higher-order][f64]") {
  // A weight's gradient dyᵀx is kept as its factors on the fast path; under
  // create_graph it is a recorded matmul, so its second derivative exists.
  // First derivatives: the same numbers on both paths and with and without
  // create_graph (the products are the same sums).
  Generator generator(9);
  const Tensor x0 = uniform({4, 3}, -1.0, 1.0, generator);
  const Tensor w0 = uniform({5, 3}, -1.0, 1.0, generator);
  const Tensor b0 = uniform({5}, -1.0, 1.0, generator);
  auto first_derivatives = [&](bool create_graph) {
    const Tensor x = requires_grad_(x0.clone_data());
    const Tensor w = requires_grad_(w0.clone_data());
    const Tensor b = requires_grad_(b0.clone_data());
    const Tensor loss = sum(tanh(linear(x, w, b)));
    backward(loss, Tensor(), {.create_graph = create_graph});
    CHECK(requires_grad(grad(w)) == create_graph);
    return std::vector<std::vector<double>>{as_doubles(grad(x)), as_doubles(grad(w)),
                                            as_doubles(grad(b))};
  };
  const auto plain = first_derivatives(false);
  const auto recorded = first_derivatives(true);
  CHECK(plain[0] == recorded[0]);
  CHECK(plain[2] == recorded[2]);
  for (size_t i = 0; i < plain[1].size(); ++i)
    CHECK(plain[1][i] == Approx(recorded[1][i]).margin(1e-15));
  std::vector<std::vector<double>> reference;
  {
    const fast::ReferencePath reference_path;
    reference = first_derivatives(true);
  }
  CHECK(reference == recorded);
}

TEST_CASE("backward_inputs: a closure reads its node's inputs as given, and outside one it throws",
          "[higher-order][autograd]") {
  const Tensor a = requires_grad_(tensor({1.0, 2.0}));
  const Tensor b = tensor({3.0, 4.0});
  std::vector<bool> same;
  const Tensor y = record("peek", Tensor(a.clone_data()), {a, b}, [&same, a, b](const Tensor& dy) {
    const Node::Inputs& given = backward_inputs();
    same = {given.size() == 2 && given[0].same(a) && given[1].same(b)};
    return Gradients{dy, Tensor()};
  });
  backward(sum(y));
  CHECK(same == std::vector<bool>{true});
  CHECK_THROWS_WITH(backward_inputs(), Catch::StartsWith("backward_inputs: called outside a "
                                                         "backward closure"));
}

}  // namespace test_higher_order
