// autograd/gradcheck.hpp — proving a backward right with finite differences.
//
// For f: inputs → output, gradcheck compares, for every element x_k of every
// input, the analytic derivative of L = Σ f(x) ⊙ R (R a fixed random tensor,
// so every output element matters with its own weight) against the central
// difference (L(x_k + ε) − L(x_k − ε)) / 2ε. In double precision with ε = 1e-6
// the difference is accurate to ~1e-9, so a backward that is off by 1% in a
// single element fails. It needs the double build (ATTOGRAD_REAL=double).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tensor/tensor.hpp"

namespace attograd {

struct GradcheckOptions {
  double epsilon = 1e-6;   // finite-difference step
  double absolute = 1e-6;  // pass when |analytic − numeric| ≤ absolute + relative·|numeric|
  double relative = 1e-5;
  uint64_t seed = 1234;            // for the projection R
  const char* name = "gradcheck";  // the check's name in the report
};

struct GradcheckResult {
  bool passed = true;
  // The worst element (largest error relative to its tolerance).
  int64_t input = -1;
  int64_t element = -1;  // row-major index within that input
  double analytic = 0;
  double numeric = 0;
  double error = 0;
  int64_t elements_checked = 0;
  std::string report;  // one line: what was checked and the worst element
};

using GradcheckFunction = std::function<Tensor(const std::vector<Tensor>&)>;

// `inputs` are copied into fresh leaves that require grad; fn may combine them
// with constants of its own. fn must be deterministic (no dropout).
GradcheckResult gradcheck(const GradcheckFunction& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

// Second derivatives, the same way: gradcheck of the function
//   G(x, R) = ∂/∂x Σ fn(x) ⊙ R     (every input's gradient, flattened, one after another)
// formed by autograd::grad with create_graph, with respect to the inputs and
// to the output gradient R (a random tensor, the last input of the report).
// Its analytic side is the double backward of Σ G ⊙ R₂ (a vector-Jacobian
// product of the gradient with a random direction R₂); its numeric side is
// the central difference of the analytic G. So a backward whose gradient
// loses its history under create_graph (a kernel where ops were needed)
// fails, and so does one 1 % off in a single second derivative.
GradcheckResult gradgradcheck(const GradcheckFunction& fn, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options = {});

}  // namespace attograd
