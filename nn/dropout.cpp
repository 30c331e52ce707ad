// nn/dropout.cpp — y = x ⊙ m, with m_i = 1/(1−p) with probability 1−p, else 0.
//
// The mask is a constant, so the product's own backward gives dx = dy ⊙ m:
// a dropped element passes no gradient, a kept one is scaled like its value.
#include "nn/dropout.hpp"

#include <algorithm>
#include <cmath>

#include "autograd/ops.hpp"
#include "tensor/error.hpp"
#include "tensor/kernels.hpp"

namespace attograd::nn {

Tensor dropout_mask(const Shape& shape, double p, Generator& generator) {
  check(p >= 0.0 && p < 1.0, "dropout_mask: p = {} must be in [0, 1)", p);
  // p·2^32 rounded, so that a draw below it has probability p to within 2^−33.
  const auto drop_below = static_cast<uint32_t>(std::min(std::round(p * 0x1.0p32), 0x1.0p32 - 1));
  Tensor mask = Tensor::empty(shape);
  kernels::dropout_mask(mask.data(), mask.numel(), drop_below, static_cast<real>(1.0 / (1.0 - p)),
                        generator.next_u64());
  return mask;
}

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
  return x * dropout_mask(x.shape(), p_, generator_);
}

std::string Dropout::extra_repr() const { return fmt::format("p={}", p_); }

}  // namespace attograd::nn
