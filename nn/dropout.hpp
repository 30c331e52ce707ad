// nn/dropout.hpp — inverted dropout (Srivastava et al., 2014).
//
// In training, each element is zeroed with probability p and the survivors
// are scaled by 1/(1−p), so E[y] = x and nothing needs rescaling at test
// time. In evaluation mode (module.eval()) the layer is the identity.
//
// Randomness: the layer owns its own Generator, seeded at construction with
// one draw from the generator it is given. So there is no lifetime to worry
// about (the given generator may be a temporary), a fixed manual_seed before
// building the model fixes every mask, and the masks do not shift the random
// stream other code draws from. Use generator().seed(s) to reseed one layer.
// A mask takes one 64-bit draw from it; element i is dropped when a 32-bit
// hash of (that draw, i) falls below p·2^32 (kernels::dropout_mask), so one
// draw serves the whole mask and the hashes run W lanes at a time.
#pragma once

#include "nn/layer.hpp"
#include "tensor/random.hpp"
#include "tensor/shape.hpp"

namespace attograd::nn {

// An inverted-dropout mask of `shape`: each entry 0 with probability p, else
// 1/(1 − p), so the masked values keep their expectation. One draw from
// `generator`. (Dropout's, and the GRU's between its layers.)
Tensor dropout_mask(const Shape& shape, double p, Generator& generator);

class Dropout : public Layer {
 public:
  // p in [0, 1): the probability of zeroing an element.
  explicit Dropout(double p, Generator& generator = default_generator());

  // x: (*) -> (*)
  Tensor forward(const Tensor& x) override;

  double p() const { return p_; }
  Generator& generator() { return generator_; }

 protected:
  std::string extra_repr() const override;

 private:
  double p_;
  Generator generator_;
};

}  // namespace attograd::nn
