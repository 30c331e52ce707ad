// autograd/inspect/anomaly.hpp — find the first op that made a NaN or an Inf.
//
//   {
//     DetectAnomaly anomaly;   // while alive, in every thread:
//     Tensor loss = model(x);  // each recorded op's output is checked,
//     backward(loss);          // and each gradient a backward closure returns
//   }
//
// The first non-finite value throws an Error that names the op, its input
// shapes, which output or input gradient went non-finite (and where), the
// op's position in the graph and, for a gradient, the forward op whose
// backward made it. Only recorded ops are checked (ops on tensors that need
// a gradient); with no guard alive nothing is checked and the engine pays one
// flag test per op (autograd/inspect/hooks.hpp). Guards nest.
#pragma once

#include <cstdint>

namespace attograd {

class DetectAnomaly {
 public:
  DetectAnomaly();
  ~DetectAnomaly();
  DetectAnomaly(const DetectAnomaly&) = delete;
  DetectAnomaly& operator=(const DetectAnomaly&) = delete;

  // Tensors checked since the program started (outputs and gradients), all
  // threads: a way to see that nothing is checked while no guard is alive.
  static int64_t checks();
};

}  // namespace attograd
