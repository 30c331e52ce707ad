// nn/dropout.cpp — y = x ⊙ m, with m_i = 1/(1−p) with probability 1−p, else 0.
//
// The mask is a constant, so the product's own backward gives dx = dy ⊙ m:
// a dropped element passes no gradient, a kept one is scaled like its value.
#include "nn/dropout.hpp"

#include "autograd/ops.hpp"
#include "tensor/error.hpp"

namespace attograd::nn {

Dropout::Dropout(double p, Generator& generator)
    : Layer("Dropout"), p_(p), generator_(generator.next_u64()) {
  check(p >= 0.0 && p < 1.0,
        "Dropout: p = {} must be in [0, 1) (p is the probability of dropping an element; "
        "p = 1 would drop everything and divide by zero)",
        p);
}

// x: (*) -> (*)
Tensor Dropout::forward(const Tensor& x) {
  check(x.defined(), "Dropout: the input is undefined");
  if (!is_training() || p_ == 0.0) return x;
  const real scale = static_cast<real>(1.0 / (1.0 - p_));
  Tensor mask = Tensor::empty(x.shape());
  real* m = mask.data();
  for (int64_t i = 0; i < mask.numel(); ++i) m[i] = generator_.bernoulli(p_) ? real(0) : scale;
  return x * mask;
}

std::string Dropout::extra_repr() const { return fmt::format("p={}", p_); }

}  // namespace attograd::nn
