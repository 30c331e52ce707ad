// autograd/ops_linear.cpp — y = x Wᵀ + b, forward and backward side by side.
#include "autograd/ops_linear.hpp"

#include "autograd/engine.hpp"
#include "autograd/fast/forward_values.hpp"
#include "autograd/fast/sentence_products.hpp"
#include "autograd/op_helpers.hpp"
#include "autograd/ops.hpp"
#include "tensor/factory.hpp"
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

// The backward of linear and linear_columns when the backward pass records
// (create_graph): the same products as ops of x, W and dy as given, so the
// gradients have a history. x (B,n) sits at columns [first, first+n) of W's
// (out,in); the weight's gradient is zero outside them.
//   dx = dy W[:, f:f+n]   dW = dyᵀ [0 x 0]   db = Σ_batch dy
Gradients recorded_linear_gradients(const Tensor& x, const Tensor& weight, const Tensor& dy,
                                    int64_t first, bool need_x, bool need_weight, bool need_bias) {
  const int64_t n = x.shape()[1], in = weight.shape()[1];
  Tensor dx, dweight, dbias;
  if (need_x) dx = matmul(dy, n == in ? weight : slice(weight, 1, first, first + n));
  if (need_weight) {
    std::vector<Tensor> columns;  // [0 x 0], without empty blocks
    if (first > 0) columns.push_back(zeros({x.shape()[0], first}));
    columns.push_back(x);
    if (first + n < in) columns.push_back(zeros({x.shape()[0], in - first - n}));
    dweight = matmul(transpose(dy, 0, 1), columns.size() == 1 ? x : cat(columns, 1));
  }
  if (need_bias) dbias = sum(dy, {0});
  return Gradients{dx, dweight, dbias};
}

// Records linear(x, weight, bias) with `y` as its output: the values must
// already be x Wᵀ + b. The closure keeps x and W as given and reads their
// values only when it runs.
Tensor record_linear(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in, Tensor y) {
  const int64_t B = x_in.shape()[0], out = weight_in.shape()[0], in = weight_in.shape()[1];
  // dy (B,out) -> dx (B,in), dW (out,in), db (out)
  auto gradients = [x_in, weight_in, need_x = requires_grad(x_in),
                    need_weight = requires_grad(weight_in),
                    need_bias = bias_in.defined() && requires_grad(bias_in), B, in,
                    out](const Tensor& dy_in) {
    if (grad_enabled()) {
      return recorded_linear_gradients(x_in, weight_in, dy_in, 0, need_x, need_weight, need_bias);
    }
    const Tensor dy = dy_in.contiguous_data();
    Tensor dx, dbias;
    if (need_x) {  // dy @ W
      const Tensor weight = weight_in.contiguous_data();
      dx = Tensor::empty({B, in});
      kernels::matmul_forward(dx.data(), dy.data(), Layout::normal, weight.data(), Layout::normal,
                              B, out, in);
    }
    if (need_bias) {  // Σ over the batch
      dbias = Tensor::empty({out});
      kernels::sum_axis_forward(dbias.data(), dy.data(), 1, B, out);
    }
    return Gradients{dx, need_weight ? Gradient::product(dy, x_in.contiguous_data()) : Gradient(),
                     dbias};
  };
  return record("linear", std::move(y), {x_in, weight_in, bias_in}, std::move(gradients));
}

}  // namespace

Tensor linear(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in) {
  check_linear("linear", x_in, weight_in, bias_in);
  const int64_t B = x_in.shape()[0], out = weight_in.shape()[0], in = weight_in.shape()[1];
  const Tensor x = x_in.contiguous_data(), weight = weight_in.contiguous_data();
  Tensor y = Tensor::empty({B, out});
  kernels::affine_forward(y.data(), x.data(), weight.data(),
                          bias_in.defined() ? bias_in.contiguous_data().data() : nullptr, B, in,
                          out);
  return record_linear(x_in, weight_in, bias_in, std::move(y));
}

Tensor linear_with_values(const Tensor& x, const Tensor& weight, const Tensor& bias,
                          const Tensor& y) {
  if (!fast::reuse_forward_values()) return linear(x, weight, bias);
  check(x.defined() && weight.defined() && y.defined() && x.dim() == 2 && weight.dim() == 2 &&
            y.shape() == Shape{x.shape()[0], weight.shape()[0]},
        "linear_with_values: the values have shape {}; with x {} and the weight {} they must "
        "be (batch, out)",
        y.defined() ? y.shape() : Shape{}, x.defined() ? x.shape() : Shape{},
        weight.defined() ? weight.shape() : Shape{});
  return record_linear(x, weight, bias, detach(y).contiguous_data());
}

Tensor linear_columns(const Tensor& x_in, const Tensor& weight_in, int64_t first,
                      const Tensor& bias_in) {
  check_defined("linear_columns", x_in);
  check_defined("linear_columns", weight_in);
  check(weight_in.dim() == 2, "linear_columns: the weight has shape {}; it must be (out,in)",
        weight_in.shape());
  const int64_t out = weight_in.shape()[0], in = weight_in.shape()[1];
  check(x_in.dim() == 2 && first >= 0 && first + x_in.shape()[1] <= in,
        "linear_columns: x has shape {} at column {}, but the weight is {}; x must be (batch, n) "
        "with {} + n <= {}",
        x_in.shape(), first, weight_in.shape(), first, in);
  check(!bias_in.defined() || bias_in.shape() == Shape{out},
        "linear_columns: the bias has shape {}; with a weight of shape {} it must be ({}), or "
        "undefined for none",
        bias_in.defined() ? bias_in.shape() : Shape{}, weight_in.shape(), out);
  const int64_t B = x_in.shape()[0], n = x_in.shape()[1];
  const Tensor x = x_in.contiguous_data(), weight = weight_in.contiguous_data();
  Tensor y = Tensor::empty({B, out});
  kernels::affine_forward(y.data(), x.data(), weight.data() + first, in,
                          bias_in.defined() ? bias_in.contiguous_data().data() : nullptr, B, n,
                          out);
  // dy (B,out) -> dx (B,n), dW (out,in), db (out)
  auto gradients = [x_in, weight_in, first, need_x = requires_grad(x_in),
                    need_weight = requires_grad(weight_in),
                    need_bias = bias_in.defined() && requires_grad(bias_in), B, n, in,
                    out](const Tensor& dy_in) {
    if (grad_enabled()) {
      return recorded_linear_gradients(x_in, weight_in, dy_in, first, need_x, need_weight,
                                       need_bias);
    }
    const Tensor dy = dy_in.contiguous_data();
    Tensor dx, dbias;
    Gradient dweight;
    if (need_x) {  // dy @ W[:, f:f+n]
      const Tensor weight = weight_in.contiguous_data();
      dx = Tensor::empty({B, n});
      kernels::affine_backward_input(dx.data(), dy.data(), weight.data() + first, in, B, out, n);
    }
    if (need_weight) {  // dyᵀ [0 x 0]
      dweight = Gradient::product(dy, x_in.contiguous_data(), first, in);
    }
    if (need_bias) {  // Σ over the batch
      dbias = Tensor::empty({out});
      kernels::sum_axis_forward(dbias.data(), dy.data(), 1, B, out);
    }
    return Gradients{dx, dweight, dbias};
  };
  return record("linear_columns", std::move(y), {x_in, weight_in, bias_in}, std::move(gradients));
}

KnownInputsLinear::KnownInputsLinear(std::vector<Tensor> known, Tensor weight, Tensor bias)
    : known_(std::move(known)),
      weight_(std::move(weight)),
      bias_(std::move(bias)),
      known_part_(fast::detail::sentence_product(known_, weight_, bias_)) {}

Tensor KnownInputsLinear::step(int64_t t, const Tensor& b) const {
  check(t >= 0 && t < static_cast<int64_t>(known_.size()),
        "KnownInputsLinear::step: step {} of a sentence of {} known inputs; give 0 ≤ t < {}", t,
        known_.size(), known_.size());
  if (known_part_.defined())
    return fast::detail::sentence_step(known_part_, t, b, weight_, known_[t].shape()[1]);
  return linear(cat({known_[t], b}, 1), weight_, bias_);
}

}  // namespace attograd
