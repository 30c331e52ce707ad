// autograd/gradient.cpp — the two named kinds of gradient, formed now (the
// reference path) or kept deferred (autograd/fast/deferred_gradient.hpp).
#include "autograd/gradient.hpp"

#include <algorithm>

#include "autograd/fast/deferred_gradient.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"
#include "tensor/kernels.hpp"

namespace attograd {

Gradient::Gradient(std::shared_ptr<fast::DeferredGradient> deferred)
    : deferred_(std::move(deferred)) {}

// dW = dyᵀ @ x    (n,out)ᵀ @ (n,in) → (out,in)
Gradient Gradient::product(const Tensor& dy, const Tensor& x) {
  check(dy.dim() == 2 && x.dim() == 2 && dy.shape()[0] == x.shape()[0],
        "Gradient::product: dy {} and x {} must be (n,out) and (n,in) with the same n", dy.shape(),
        x.shape());
  const int64_t n = dy.shape()[0], out = dy.shape()[1], in = x.shape()[1];
  // The factors are kept only when they hold fewer numbers than the matrix
  // they stand for (a decoder step's one row against a 2231 × 256 output
  // layer); a batch of 64 rows against a 96 × 32 weight is cheaper as the
  // matrix, formed now, than as factors copied, stacked and formed later.
  if (fast::deferred_gradients() && n * (out + in) < out * in) {
    auto deferred = std::make_shared<fast::DeferredGradient>(Shape{out, in});
    deferred->add_product(dy, x);
    return Gradient(std::move(deferred));
  }
  if (n == 0) return zeros({out, in});
  Tensor dweight = Tensor::empty({out, in});
  kernels::matmul_forward(dweight.data(), dy.data(), kernels::Layout::transposed, x.data(),
                          kernels::Layout::normal, out, n, in);
  return dweight;
}

// dW = dyᵀ [0 x 0]     dy: (n,out), x: (n,w) at columns f … f+w−1 → (out,in)
Gradient Gradient::product(const Tensor& dy, const Tensor& x, int64_t first_column, int64_t in) {
  check(dy.dim() == 2 && x.dim() == 2 && dy.shape()[0] == x.shape()[0] && first_column >= 0 &&
            first_column + x.shape()[1] <= in,
        "Gradient::product: dy {} and x {} at column {} must be (n,out) and (n,w) with the same "
        "n and {} + w <= {}",
        dy.shape(), x.shape(), first_column, first_column, in);
  const int64_t n = dy.shape()[0], out = dy.shape()[1], width = x.shape()[1];
  if (width == in) return product(dy, x);
  if (fast::deferred_gradients() && n * (out + width) < out * in) {
    auto deferred = std::make_shared<fast::DeferredGradient>(Shape{out, in});
    deferred->add_product(dy, x, first_column);
    return Gradient(std::move(deferred));
  }
  Tensor dweight = zeros({out, in});
  if (n == 0) return dweight;
  Tensor block = Tensor::empty({out, width});
  kernels::matmul_forward(block.data(), dy.data(), kernels::Layout::transposed, x.data(),
                          kernels::Layout::normal, out, n, width);
  for (int64_t i = 0; i < out; ++i) {
    std::copy_n(block.data() + i * width, width, dweight.data() + i * in + first_column);
  }
  return dweight;
}

// dE = 0 but for dE[ids[p]] += values[p]     values: (n,D) → (V,D)
Gradient Gradient::rows(const Shape& shape, const std::vector<int64_t>& ids, const Tensor& values,
                        std::optional<int64_t> skip) {
  if (fast::deferred_gradients()) {
    auto deferred = std::make_shared<fast::DeferredGradient>(shape);
    deferred->add_rows(ids, values, skip);
    return Gradient(std::move(deferred));
  }
  const int64_t D = shape[1];
  Tensor dtable = zeros(shape);
  for (size_t p = 0; p < ids.size(); ++p) {
    if (ids[p] == skip) continue;
    kernels::accumulate(dtable.data() + ids[p] * D, values.data() + static_cast<int64_t>(p) * D, D);
  }
  return dtable;
}

Shape Gradient::shape() const { return deferred_ ? deferred_->shape() : dense_.shape(); }

Tensor Gradient::to_dense() const { return deferred_ ? deferred_->to_dense() : dense_; }

}  // namespace attograd
