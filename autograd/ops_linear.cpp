// autograd/ops_linear.cpp — the Linear step whose weight gradient is formed
// once per sequence (see the header), and the factor rows it shares with the
// GRU steps of autograd/ops_gru.cpp.
#include "autograd/ops_linear.hpp"

#include "autograd/op_helpers.hpp"
#include "autograd/ops.hpp"
#include "tensor/factory.hpp"

namespace attograd {

using kernels::Layout;

namespace detail {

void affine_forward(real* out, const Tensor& input, const Tensor& weight, const Tensor& bias,
                    int64_t B, int64_t K, int64_t N) {
  kernels::matmul_forward(out, input.data(), Layout::normal, weight.data(), Layout::transposed, B,
                          K, N);
  if (!bias.defined()) return;
  for (int64_t b = 0; b < B; ++b) kernels::accumulate(out + b * N, bias.data(), N);
}

}  // namespace detail

void WeightGradientRows::append(const Tensor& dy_rows, const Tensor& x_rows) {
  dy.insert(dy.end(), dy_rows.data(), dy_rows.data() + dy_rows.numel());
  x.insert(x.end(), x_rows.data(), x_rows.data() + x_rows.numel());
  rows += dy_rows.shape()[0];
}

// (n,out) read as (out,n), times (n,in)
Tensor WeightGradientRows::product(int64_t out, int64_t in) const {
  if (rows == 0) return zeros({out, in});
  Tensor result = Tensor::empty({out, in});
  kernels::matmul_forward(result.data(), dy.data(), Layout::transposed, x.data(), Layout::normal,
                          out, rows, in);
  return result;
}

Tensor WeightGradientRows::gradient(size_t input, int64_t out, int64_t in) const {
  if (rows > 0 && offer_gradient_factors(input, {dy.data(), x.data(), rows, out, in})) {
    return Tensor();
  }
  return product(out, in);
}

// token = 0, recorded with the weight as its input; its node's gradient for
// the weight is dYᵀ @ X over every row the steps handed over. The token's
// own gradient is always 0 and is ignored.
LinearWeights linear_weights(const Tensor& weight, const Tensor& bias) {
  detail::check_defined("linear_weights", weight);
  check(weight.dim() == 2, "linear_weights: the weight has shape {}; it must be (out,in)",
        weight.shape());
  check(!bias.defined() || bias.shape() == Shape{weight.shape()[0]},
        "linear_weights: the bias has shape {}; with a weight of shape {} it must be ({}), or "
        "undefined for none",
        bias.defined() ? bias.shape() : Shape{}, weight.shape(), weight.shape()[0]);
  LinearWeights weights{weight, bias, Tensor(), nullptr};
  if (!grad_enabled() || !weight.requires_grad()) return weights;
  auto factors = std::make_shared<WeightGradientRows>();
  const int64_t out = weight.shape()[0], in = weight.shape()[1];
  auto gradients = [factors, out, in](const Tensor&) {
    Tensor dweight = factors->gradient(0, out, in);
    *factors = WeightGradientRows{};  // a second backward (retain_graph) starts afresh
    return std::vector<Tensor>{dweight};
  };
  weights.token = record("linear_weights", zeros({}), {weight}, std::move(gradients));
  weights.factors = factors;
  return weights;
}

namespace {

void check_linear_input(const char* op, const Tensor& x, const LinearWeights& weights) {
  detail::check_defined(op, x);
  detail::check_defined(op, weights.weight);
  const int64_t in = weights.weight.shape()[1];
  check(x.dim() == 2 && x.shape()[1] == in,
        "{}: x has shape {} but the weight is {}; x must be (batch, {})", op, x.shape(),
        weights.weight.shape(), in);
}

// Records y = x Wᵀ + b (its values already in y) with the backward below;
// x and weight are x_in's and the weight's values, contiguous.
Tensor record_linear(const Tensor& x_in, const LinearWeights& weights, Tensor y, Tensor x,
                     Tensor weight) {
  const int64_t B = x_in.shape()[0], out = weights.weight.shape()[0],
                in = weights.weight.shape()[1];
  auto gradients = [x, weight, factors = weights.factors, need_x = x_in.requires_grad(),
                    need_bias = weights.bias.defined() && weights.bias.requires_grad(), B, in,
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
    factors->append(dy, x);
    return std::vector<Tensor>{dx, dbias, zeros({})};
  };
  return record("linear", std::move(y), {x_in, weights.bias, weights.token}, std::move(gradients));
}

}  // namespace

Tensor linear(const Tensor& x_in, const LinearWeights& weights) {
  check_linear_input("linear", x_in, weights);
  if (!weights.token.defined() || !grad_enabled()) {
    const Tensor y = matmul(x_in, transpose(weights.weight, 0, 1));
    return weights.bias.defined() ? y + weights.bias : y;
  }
  const int64_t B = x_in.shape()[0], out = weights.weight.shape()[0],
                in = weights.weight.shape()[1];
  Tensor x = detach(x_in).contiguous_data();
  Tensor weight = detach(weights.weight).contiguous_data();
  const Tensor bias =
      weights.bias.defined() ? detach(weights.bias).contiguous_data() : weights.bias;
  Tensor y = Tensor::empty({B, out});
  detail::affine_forward(y.data(), x, weight, bias, B, in, out);
  return record_linear(x_in, weights, std::move(y), std::move(x), std::move(weight));
}

Tensor linear_recorded(const Tensor& x_in, const LinearWeights& weights, const Tensor& y) {
  check_linear_input("linear_recorded", x_in, weights);
  detail::check_defined("linear_recorded", y);
  const Shape expected{x_in.shape()[0], weights.weight.shape()[0]};
  check(y.shape() == expected,
        "linear_recorded: the values have shape {}; with x {} and the weight {} they must be {}",
        y.shape(), x_in.shape(), weights.weight.shape(), expected);
  if (!weights.token.defined() || !grad_enabled()) return y;
  return record_linear(x_in, weights, detach(y).contiguous_data(),  // a handle of its own
                       detach(x_in).contiguous_data(), detach(weights.weight).contiguous_data());
}

}  // namespace attograd
