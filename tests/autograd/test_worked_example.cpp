// tests/autograd/test_worked_example.cpp — known values from outside attograd.
//
// The micrograd README expression (the same lines as
// examples/autograd_basics.cpp), whose values micrograd and PyTorch both
// print: a = −4, b = 2 → g = 24.7041, dg/da = 138.8338, dg/db = 645.5773.
// It mixes +, −, ·, /, pow, relu on both sides of its kink, reals on either
// side of an operator, and values used many times. Runs in both binaries.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "attograd.hpp"
#include "tests/support/micrograd.hpp"

namespace test_worked_example {

using namespace attograd;
using attograd::testing::Micrograd;
using attograd::testing::micrograd_expression;

namespace {

std::string four_decimals(real value) { return fmt::format("{:.4f}", value); }

}  // namespace

TEST_CASE("the micrograd README expression has micrograd's values", "[autograd][known]") {
  Micrograd m = micrograd_expression();
  backward(m.g);
  // Rounded to 4 decimals, as the README prints them. In float the values
  // agree to about 1e-5 relative, which is inside the rounding of 4 decimals.
  CHECK(four_decimals(m.g.item()) == "24.7041");
  CHECK(four_decimals(grad(m.a).item()) == "138.8338");
  CHECK(four_decimals(grad(m.b).item()) == "645.5773");
  // And close to the exact values (g is a rational function of a and b; the
  // references are micrograd's double-precision results).
  CHECK(double(m.g.item()) == Approx(24.70408163265306).epsilon(1e-6));
  CHECK(double(grad(m.a).item()) == Approx(138.83381924198252).epsilon(1e-6));
  CHECK(double(grad(m.b).item()) == Approx(645.5772594752186).epsilon(1e-6));
}

TEST_CASE("a second backward through a fresh graph gives the same gradients", "[autograd][known]") {
  Micrograd first = micrograd_expression();
  backward(first.g);
  Micrograd second = micrograd_expression();
  backward(second.g);
  CHECK(grad(first.a).item() == grad(second.a).item());
  CHECK(grad(first.b).item() == grad(second.b).item());
}

}  // namespace test_worked_example
