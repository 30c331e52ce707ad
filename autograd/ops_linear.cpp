// autograd/ops_linear.cpp — y = x Wᵀ + b, forward and backward side by side.
#include "autograd/ops_linear.hpp"

#include "autograd/engine.hpp"
#include "autograd/op_helpers.hpp"
#include "tensor/kernels.hpp"

namespace attograd {

using kernels::Layout;

namespace {

void check_linear(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_defined(op, x);
  check_defined(op, weight);
  check(weight.dim() == 2, "{}: the weight has shape {}; it must be (out,in)", op, weight.shape());
  const int64_t out = weight.shape()[0], in = weight.shape()[1];
  check(x.dim() == 2 && x.shape()[1] == in,
        "{}: x has shape {} but the weight is {}; x must be (batch, {})", op, x.shape(),
        weight.shape(), in);
  check(!bias.defined() || bias.shape() == Shape{out},
        "{}: the bias has shape {}; with a weight of shape {} it must be ({}), or undefined for "
        "none",
        op, bias.defined() ? bias.shape() : Shape{}, weight.shape(), out);
}

Tensor values_of(const Tensor& t) { return t.defined() ? detach(t).contiguous_data() : t; }

}  // namespace

Tensor detail::record_linear(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in,
                             Tensor y) {
  const int64_t B = x_in.shape()[0], out = weight_in.shape()[0], in = weight_in.shape()[1];
  // dy (B,out) -> dx (B,in), dW (out,in), db (out)
  auto gradients = [x = values_of(x_in), weight = values_of(weight_in),
                    need_x = requires_grad(x_in), need_weight = requires_grad(weight_in),
                    need_bias = bias_in.defined() && requires_grad(bias_in), B, in,
                    out](const Tensor& dy_in) {
    const Tensor dy = dy_in.contiguous_data();
    Tensor dx, dbias;
    if (need_x) {  // dy @ W
      dx = Tensor::empty({B, in});
      kernels::matmul_forward(dx.data(), dy.data(), Layout::normal, weight.data(), Layout::normal,
                              B, out, in);
    }
    if (need_bias) {  // Σ over the batch
      dbias = Tensor::empty({out});
      kernels::sum_axis_forward(dbias.data(), dy.data(), 1, B, out);
    }
    return Gradients{dx, need_weight ? Gradient::product(dy, x) : Gradient(), dbias};
  };
  return record("linear", std::move(y), {x_in, weight_in, bias_in}, std::move(gradients));
}

Tensor linear(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in) {
  check_linear("linear", x_in, weight_in, bias_in);
  const int64_t B = x_in.shape()[0], out = weight_in.shape()[0], in = weight_in.shape()[1];
  const Tensor x = x_in.contiguous_data(), weight = weight_in.contiguous_data();
  Tensor y = Tensor::empty({B, out});
  kernels::affine_forward(y.data(), x.data(), weight.data(),
                          bias_in.defined() ? bias_in.contiguous_data().data() : nullptr, B, in,
                          out);
  return detail::record_linear(x_in, weight_in, bias_in, std::move(y));
}

}  // namespace attograd
