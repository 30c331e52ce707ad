// tests/support/micrograd.hpp — the micrograd README expression (the same
// lines as examples/autograd_basics.cpp), shared by the tests that know its
// values (tests/autograd/test_worked_example.cpp) and its graph
// (tests/autograd/test_inspect.cpp).
//
// a = −4, b = 2 → g = 24.7041, dg/da = 138.8338, dg/db = 645.5773. Its graph
// has 25 ops — 13 add, 3 mul, 2 pow, 2 sub, 2 div, 2 relu, 1 neg — on the
// leaves a and b and six scalar constants.
#pragma once

#include "attograd.hpp"

namespace attograd::testing {

struct Micrograd {
  Tensor a, b, g;
};

inline Micrograd micrograd_expression() {
  Tensor a = requires_grad_(scalar(-4.0));
  Tensor b = requires_grad_(scalar(2.0));
  Tensor c = a + b;
  Tensor d = a * b + pow(b, 3);
  c = c + (c + 1.0);
  c = c + (1.0 + c + (-a));
  d = d + (d * 2.0 + relu(b + a));
  d = d + (3.0 * d + relu(b - a));
  Tensor e = c - d;
  Tensor f = pow(e, 2);
  Tensor g = f / 2.0;
  g = g + 10.0 / f;
  return {a, b, g};
}

}  // namespace attograd::testing
