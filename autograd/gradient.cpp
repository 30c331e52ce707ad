// autograd/gradient.cpp — the named kinds of gradient, and how gradients add.
#include "autograd/gradient.hpp"

#include <algorithm>

#include "autograd/fast/deferred_gradient.hpp"
#include "autograd/fast/gradient_stealing.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"
#include "tensor/kernels.hpp"

namespace attograd {

// dW = dyᵀ @ x    (n,out)ᵀ @ (n,in) → (out,in)
Gradient Gradient::product(const Tensor& dy, const Tensor& x) {
  check(dy.dim() == 2 && x.dim() == 2 && dy.shape()[0] == x.shape()[0],
        "Gradient::product: dy {} and x {} must be (n,out) and (n,in) with the same n", dy.shape(),
        x.shape());
  return product(dy, x, 0, x.shape()[1]);
}

// dW = dyᵀ [0 x 0]     dy: (n,out), x: (n,w) at columns f … f+w−1 → (out,in)
Gradient Gradient::product(const Tensor& dy, const Tensor& x, int64_t first_column, int64_t in) {
  check(dy.dim() == 2 && x.dim() == 2 && dy.shape()[0] == x.shape()[0] && first_column >= 0 &&
            first_column + x.shape()[1] <= in,
        "Gradient::product: dy {} and x {} at column {} must be (n,out) and (n,w) with the same "
        "n and {} + w <= {}",
        dy.shape(), x.shape(), first_column, first_column, in);
  if (auto kept = fast::defer_product(dy, x, first_column, in)) return Gradient(std::move(kept));
  const int64_t n = dy.shape()[0], out = dy.shape()[1], width = x.shape()[1];
  if (n == 0) return zeros({out, in});
  Tensor block = Tensor::empty({out, width});
  kernels::matmul_forward(block.data(), dy.data(), kernels::Layout::transposed, x.data(),
                          kernels::Layout::normal, out, n, width);
  if (width == in) return block;
  Tensor dweight = zeros({out, in});
  for (int64_t i = 0; i < out; ++i) {
    std::copy_n(block.data() + i * width, width, dweight.data() + i * in + first_column);
  }
  return dweight;
}

// dE = 0 but for dE[ids[p]] += values[p]     values: (n,D) → (V,D)
Gradient Gradient::rows(const Shape& shape, const std::vector<int64_t>& ids, const Tensor& values,
                        std::optional<int64_t> skip) {
  if (auto kept = fast::defer_rows(shape, ids, values, skip)) return Gradient(std::move(kept));
  const int64_t D = shape[1];
  Tensor dtable = zeros(shape);
  for (size_t p = 0; p < ids.size(); ++p) {
    if (ids[p] == skip) continue;
    kernels::accumulate(dtable.data() + ids[p] * D, values.data() + static_cast<int64_t>(p) * D, D);
  }
  return dtable;
}

Shape Gradient::shape() const { return dense_.defined() ? dense_.shape() : unformed_->shape(); }

Tensor Gradient::to_dense() const {
  if (!unformed_) return dense_;
  Tensor whole = unformed_->to_dense();  // a new tensor: ours to write
  if (dense_.defined()) {
    const Tensor source = dense_.contiguous_data();
    kernels::accumulate(whole.data(), source.data(), whole.numel());
  }
  return whole;
}

Gradient& Gradient::operator+=(Gradient other) {
  if (!other.defined()) return *this;
  if (defined()) {
    check(shape() == other.shape(),
          "Gradient: cannot add a gradient of shape {} to one of shape {}", other.shape(), shape());
  }
  if (other.unformed_) {
    if (unformed_) {
      unformed_->add(*other.unformed_);
    } else {
      unformed_ = std::move(other.unformed_);
    }
  }
  if (!other.dense_.defined()) return *this;
  if (!dense_.defined()) {
    dense_ = std::move(other.dense_);
    owned_ = false;
    return *this;
  }
  own();
  const Tensor source = other.dense_.contiguous_data();
  kernels::accumulate(dense_.data(), source.data(), dense_.numel());
  return *this;
}

void Gradient::own() {
  if (owned_ || !dense_.defined()) return;
  if (!fast::steal(dense_)) dense_ = dense_.clone_data();
  owned_ = true;
}

void Gradient::form() {
  if (!unformed_) return;
  Tensor formed = unformed_->to_dense();
  unformed_.reset();
  *this += Gradient(std::move(formed));
}

std::shared_ptr<UnformedGradient> Gradient::take_unformed() { return std::move(unformed_); }

}  // namespace attograd
