// tests/autograd/test_engine.cpp — the backward engine (autograd/engine.cpp):
// accumulation, graph shapes, deep chains, no-grad, detach, retain_graph,
// broadcasting undone by sum_to. Every expected gradient is worked out by
// hand in the comment next to it. These run in both binaries.
#include <catch2/catch.hpp>
#include <unordered_map>
#include <vector>

#include "attograd.hpp"
#include "autograd/fast/tensor_numbering.hpp"

namespace test_engine {

using namespace attograd;

namespace {

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> out;
  for (real v : t.to_vector()) out.push_back(v);
  return out;
}

// Approx for element-by-element comparison of whole tensors.
void require_values(const Tensor& t, const std::vector<double>& expected, double margin = 1e-5) {
  const std::vector<double> values = as_doubles(t);
  REQUIRE(values.size() == expected.size());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("element " << i);
    CHECK(values[i] == Approx(expected[i]).margin(margin));
  }
}

}  // namespace

TEST_CASE("a value used twice gets both gradients", "[autograd][engine]") {
  Tensor x = requires_grad_(tensor({1.5, -2, 3}));
  backward(sum(x * x));  // d(x²)/dx = 2x: one x from each operand
  require_values(grad(x), {3, -4, 6});

  Tensor y = requires_grad_(scalar(2));
  backward(y * y * y + y);  // 3y² + 1 = 13
  CHECK(grad(y).item() == Approx(13));
}

TEST_CASE("a diamond sums the gradients of both branches", "[autograd][engine]") {
  //      a
  //    /   \            b = 2a, c = a + 3, d = b·c = 2a² + 6a
  //   b     c           dd/da = 4a + 6
  //    \   /
  //      d
  Tensor a = requires_grad_(tensor({1, -0.5, 4}));
  Tensor b = a * real(2);
  Tensor c = a + real(3);
  backward(sum(b * c));
  require_values(grad(a), {10, 4, 22});
}

TEST_CASE("gradients flow only to inputs that require them", "[autograd][engine]") {
  Tensor w = requires_grad_(tensor({2, 3}));
  Tensor x = tensor({5, 7});  // a constant
  backward(sum(w * x));
  require_values(grad(w), {5, 7});
  CHECK_FALSE(grad(x).defined());
  CHECK_FALSE(requires_grad(x));
}

TEST_CASE("broadcasting is undone on the way back", "[autograd][engine]") {
  Tensor column = requires_grad_(tensor({{1}, {2}, {3}}));  // (3,1)
  Tensor row = requires_grad_(tensor({10, 20, 30, 40}));    // (4)
  Tensor s = requires_grad_(scalar(0.5));                   // 0-d
  Tensor y = (column + row) * s;                            // (3,4)
  backward(sum(y));
  // dy/dcolumn sums 4 columns of s; dy/drow sums 3 rows of s; dy/ds sums column+row.
  CHECK(grad(column).shape() == Shape{3, 1});
  require_values(grad(column), {2, 2, 2});
  CHECK(grad(row).shape() == Shape{4});
  require_values(grad(row), {1.5, 1.5, 1.5, 1.5});
  CHECK(grad(s).shape() == Shape{});
  // Σ_ij (column_i + row_j) = 4·(1+2+3) + 3·(10+20+30+40) = 24 + 300
  CHECK(grad(s).item() == Approx(324));
}

TEST_CASE("sum_to folds a gradient back to a broadcast operand's shape", "[autograd][engine]") {
  const Tensor g = reshape(arange(0, 24), {2, 3, 4});  // g[i][j][k] = 12i + 4j + k
  // (2,3,4) → (3,1): sum over axis 0 and axis 2.
  const Tensor folded = sum_to(g, {3, 1});
  CHECK(folded.shape() == Shape{3, 1});
  // Row j of the result: Σ_{i,k} (12i + 4j + k) = 2·(4·4j + 6) + 12·4 = 32j + 60
  require_values(folded, {60, 92, 124});
  CHECK(sum_to(g, {}).item() == Approx(276));
  CHECK(sum_to(g, {2, 3, 4}).same(g));  // nothing to fold: the same tensor
  REQUIRE_THROWS_WITH(sum_to(g, {5, 2, 3, 4}),
                      "sum_to: gradient of shape (2,3,4) cannot be reduced to (5,2,3,4) "
                      "((5,2,3,4) does not broadcast to (2,3,4))");
}

TEST_CASE("a 100,000-step chain runs backward and is destroyed without recursion",
          "[autograd][engine]") {
  // y_{k+1} = y_k · (−1) + 0: two nodes per step, 200,000 in all. mul's
  // closure holds its inputs, so a recursive destructor would go 200,000
  // frames deep. dy/dx = (−1)^100000 = 1, exactly, in float too.
  constexpr int kSteps = 100000;
  const Tensor minus_one = scalar(-1);
  const Tensor zero = scalar(0);
  auto chain = [&](const Tensor& x) {
    Tensor y = x;
    for (int i = 0; i < kSteps; ++i) y = y * minus_one + zero;
    return y;
  };

  SECTION("backward, then destroy") {
    Tensor x = requires_grad_(scalar(3));
    {
      Tensor y = chain(x);
      CHECK(y.item() == 3);
      backward(y);
    }
    CHECK(grad(x).item() == 1);
  }
  SECTION("destroy without backward") {
    Tensor x = requires_grad_(scalar(3));
    { Tensor y = chain(x); }
    CHECK_FALSE(grad(x).defined());
    CHECK(is_leaf(x));
  }
  SECTION("backward with retain_graph, then destroy") {
    Tensor x = requires_grad_(scalar(3));
    {
      Tensor y = chain(x);
      backward(y, Tensor(), {.retain_graph = true});
      backward(y);  // the graph is still there
    }
    CHECK(grad(x).item() == 2);
  }
  SECTION("a chain through a tensor used at every step") {
    // y_{k+1} = y_k + x: dy/dx = 100,001, an integer float holds exactly.
    Tensor x = requires_grad_(scalar(1));
    {
      Tensor y = x;
      for (int i = 0; i < kSteps; ++i) y = y + x;
      backward(y);
    }
    CHECK(grad(x).item() == kSteps + 1);
  }
}

TEST_CASE("nothing is recorded under NoGradGuard", "[autograd][engine]") {
  Tensor x = requires_grad_(tensor({1, 2}));
  {
    NoGradGuard no_grad;
    CHECK_FALSE(grad_enabled());
    Tensor y = exp(x * x);
    CHECK_FALSE(requires_grad(y));
    CHECK(grad_fn(y) == nullptr);
    {
      NoGradGuard nested;
      CHECK_FALSE(grad_enabled());
    }
    CHECK_FALSE(grad_enabled());  // the inner guard restores "off", not "on"
    REQUIRE_THROWS_WITH(backward(sum(y)), Catch::StartsWith("backward: the output does not "
                                                            "require grad"));
  }
  CHECK(grad_enabled());
  Tensor z = x * x;
  CHECK(requires_grad(z));
  CHECK(grad_fn(z) != nullptr);
  CHECK(std::string(grad_fn(z)->name) == "mul");
}

TEST_CASE("detach shares storage and stops gradients", "[autograd][engine]") {
  Tensor x = requires_grad_(tensor({2, 3}));
  Tensor d = detach(x);
  CHECK(d.data() == x.data());
  CHECK_FALSE(requires_grad(d));
  CHECK(is_leaf(d));
  // y = detach(x) · x: only the second factor carries a gradient, dy/dx = x.
  backward(sum(d * x));
  require_values(grad(x), {2, 3});
  CHECK_FALSE(grad(d).defined());

  // Writing through the detached view writes x.
  d.set({0}, 7);
  CHECK(x.at({0}) == 7);
}

TEST_CASE("saved_output is y's numbers without its node, and nothing under NoGradGuard",
          "[autograd][engine]") {
  Tensor x = requires_grad_(tensor({1, 2}));
  Tensor y = exp(x);
  Tensor saved = saved_output(y);
  REQUIRE(saved.defined());
  CHECK(saved.data() == y.data());
  CHECK(saved.shape() == y.shape());
  CHECK(grad_fn(saved) == nullptr);
  CHECK_FALSE(requires_grad(saved));
  {
    NoGradGuard no_grad;
    CHECK_FALSE(saved_output(y).defined());
    // The ops that capture their output still compute under the guard.
    require_values(div(exp(x), x), {std::exp(real(1)), std::exp(real(2)) / 2});
  }
  // … and their closures, built while recording, still see y: d(e^x)/dx = e^x.
  backward(sum(exp(x)));
  require_values(grad(x), {std::exp(real(1)), std::exp(real(2))});
}

TEST_CASE("gradients accumulate over backward calls until zero_grad", "[autograd][engine]") {
  Tensor w = requires_grad_(tensor({1, -1}));
  backward(sum(w * real(3)));
  require_values(grad(w), {3, 3});
  backward(sum(w * w));  // adds 2w
  require_values(grad(w), {5, 1});
  zero_grad(w);
  CHECK_FALSE(grad(w).defined());
  backward(sum(w));
  require_values(grad(w), {1, 1});
}

TEST_CASE("retain_graph allows a second backward, the default frees the graph",
          "[autograd][engine]") {
  Tensor x = requires_grad_(scalar(2));
  Tensor y = exp(x) * x;  // dy/dx = eˣ(1 + x) = 3e²
  const double once = 3 * std::exp(2.0);

  backward(y, Tensor(), {.retain_graph = true});
  CHECK(grad(x).item() == Approx(once));
  backward(y);
  CHECK(grad(x).item() == Approx(2 * once));
  REQUIRE_THROWS_WITH(backward(y),
                      "backward: the graph behind 'mul' was already freed by an earlier "
                      "backward(); pass retain_graph=true to that first call to backpropagate "
                      "through it twice");
  CHECK(grad(x).item() == Approx(2 * once));  // the failed call added nothing

  // A new graph on top of the freed one fails when it reaches the freed part.
  Tensor z = y * real(2);
  REQUIRE_THROWS_WITH(backward(z), Catch::Contains("the graph behind 'mul' was already freed"));
}

TEST_CASE("backward on a non-scalar needs grad_output", "[autograd][engine]") {
  Tensor x = requires_grad_(tensor({1, 2, 3}));
  Tensor y = x * x;
  REQUIRE_THROWS_WITH(backward(y),
                      Catch::StartsWith("backward: the output has shape (3); without an "
                                        "output gradient"));
  // With grad_output = (1, 10, 100): dx = grad_output ⊙ 2x.
  backward(y, tensor({1, 10, 100}));
  require_values(grad(x), {2, 40, 600});
}

TEST_CASE("backward on a tensor that does not require grad throws", "[autograd][engine]") {
  Tensor x = tensor({1, 2});
  REQUIRE_THROWS_WITH(backward(sum(x)),
                      Catch::StartsWith("backward: the output does not require grad"));
}

TEST_CASE("retain_grad keeps an intermediate gradient", "[autograd][engine]") {
  Tensor x = requires_grad_(tensor({1, 2}));
  Tensor h = x * real(3);
  retain_grad(h);
  Tensor y = sum(h * h);  // dy/dh = 2h = (6, 12); dy/dx = 3·2h = (18, 36)
  backward(y);
  require_values(grad(h), {6, 12});
  require_values(grad(x), {18, 36});
  // Without retain_grad an intermediate keeps no gradient.
  Tensor h2 = x * real(3);
  backward(sum(h2));
  CHECK_FALSE(grad(h2).defined());
}

TEST_CASE("views and copies pass gradients to the right entries", "[autograd][engine]") {
  Tensor x = requires_grad_(reshape(arange(0, 6), {2, 3}));
  // y = x[:, 1] · (10, 100) + x[1, 2]: gradient 10 at (0,1), 100 at (1,1), 1 at (1,2).
  Tensor y = sum(select(x, 1, 1) * tensor({10, 100})) + select(select(x, 0, 1), 0, 2);
  backward(y);
  require_values(grad(x), {0, 10, 0, 0, 100, 1});
}

TEST_CASE("max sends the gradient to the first maximum", "[autograd][engine]") {
  Tensor x = requires_grad_(tensor({{1, 5, 5}, {7, 2, 7}}));
  backward(sum(max(x, 1)));
  require_values(grad(x), {0, 1, 0, 1, 0, 0});
  CHECK(argmax(x, 1) == std::vector<int64_t>{1, 0});
  CHECK(argmax(x, 0) == std::vector<int64_t>{1, 0, 1});
}

// autograd/fast/tensor_numbering.hpp has no switch: it must number tensors
// exactly as the plain std::unordered_map would (the order of first sight),
// through its growth from 0 slots to thousands, with pointers that share
// their low bits (TensorImpls are allocated in blocks of one size).
TEST_CASE("TensorNumbering numbers tensors as std::unordered_map does", "[autograd][engine]") {
  fast::TensorNumbering table;
  std::unordered_map<const TensorImpl*, size_t> plain;
  std::vector<Tensor> tensors;
  for (int i = 0; i < 5000; ++i) tensors.push_back(zeros({1}));
  CHECK(table.find(tensors[0].impl_ptr().get()) == fast::TensorNumbering::npos);
  // Each tensor offered three times, the repeats interleaved with new ones.
  for (size_t i = 0; i < tensors.size(); ++i) {
    for (size_t j : {i, i / 2, i / 3}) {
      const TensorImpl* t = tensors[j].impl_ptr().get();
      const bool added = plain.emplace(t, plain.size()).second;
      REQUIRE(table.insert(t) == added);
      REQUIRE(table.size() == plain.size());
    }
  }
  for (const auto& [t, number] : plain) REQUIRE(table.find(t) == number);
  const Tensor stranger = zeros({1});
  CHECK(table.find(stranger.impl_ptr().get()) == fast::TensorNumbering::npos);
}

// Gradient stealing (autograd/fast/gradient_stealing.hpp) keeps a gradient
// nothing else sees without a copy. add hands the same dy to both inputs:
// neither leaf may keep it without a copy, or writing one leaf's .grad (as
// an optimizer does) would write the other's.
TEST_CASE("gradient stealing keeps each leaf's gradient its own, with the copy's bits",
          "[autograd][engine][fast]") {
  for (const bool stealing : {true, false}) {
    INFO("stealing " << stealing);
    fast::Switches switches = fast::Switches::current();
    switches.gradient_stealing = stealing;
    const fast::UseSwitches use(switches);
    const Tensor x = requires_grad_(from_vector({1, 2, 3}));
    const Tensor y = requires_grad_(from_vector({4, 5, 6}));
    backward(sum(add(x, y)));
    Tensor gx = grad(x);
    const Tensor gy = grad(y);
    REQUIRE(gx.storage() != gy.storage());
    gx.data()[0] = 7;
    CHECK(grad(y).to_vector() == std::vector<real>{1, 1, 1});
  }
  // The same training step both ways: the same bits.
  std::vector<std::vector<real>> grads;
  for (const bool stealing : {true, false}) {
    fast::Switches switches = fast::Switches::current();
    switches.gradient_stealing = stealing;
    const fast::UseSwitches use(switches);
    Generator generator(5);
    const Tensor w = requires_grad_(randn({3, 4}, generator));
    const Tensor b = requires_grad_(randn({4}, generator));
    const Tensor x = randn({5, 3}, generator);
    backward(sum(mul(tanh(add(matmul(x, w), b)), b)));
    backward(sum(exp(matmul(x, w))));  // a second backward adds into the kept gradients
    std::vector<real> both = grad(w).to_vector();
    for (real v : grad(b).to_vector()) both.push_back(v);
    grads.push_back(both);
  }
  CHECK(grads[0] == grads[1]);
}

}  // namespace test_engine
