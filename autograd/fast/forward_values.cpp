// autograd/fast/forward_values.cpp — see the header.
#include "autograd/fast/forward_values.hpp"

#include "autograd/engine.hpp"
#include "autograd/ops_linear.hpp"
#include "tensor/error.hpp"

namespace attograd::fast {

namespace {
thread_local bool reuse_on = true;
}  // namespace

bool reuse_forward_values() { return reuse_on; }
void set_reuse_forward_values(bool on) { reuse_on = on; }

Tensor linear_with_values(const Tensor& x, const Tensor& weight, const Tensor& bias,
                          const Tensor& y) {
  if (!reuse_on) return linear(x, weight, bias);
  check(x.defined() && weight.defined() && y.defined() && x.dim() == 2 && weight.dim() == 2 &&
            y.shape() == Shape{x.shape()[0], weight.shape()[0]},
        "linear_with_values: the values have shape {}; with x {} and the weight {} they must "
        "be (batch, out)",
        y.defined() ? y.shape() : Shape{}, x.defined() ? x.shape() : Shape{},
        weight.defined() ? weight.shape() : Shape{});
  return detail::record_linear(x, weight, bias, detach(y).contiguous_data());
}

}  // namespace attograd::fast
