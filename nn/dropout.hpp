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
#pragma once

#include "nn/layer.hpp"
#include "tensor/random.hpp"

namespace attograd::nn {

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
