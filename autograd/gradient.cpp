// autograd/gradient.cpp — the named kinds of gradient, and how gradients add.
#include "autograd/gradient.hpp"

#include <algorithm>

#include "autograd/engine.hpp"
#include "autograd/fast/deferred_gradient.hpp"
#include "autograd/fast/gradient_stealing.hpp"
#include "autograd/op_helpers.hpp"
#include "autograd/ops.hpp"
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
  const int64_t n = dy.shape()[0], out = dy.shape()[1], width = x.shape()[1];
  if (grad_enabled()) {
    // Recording (create_graph): the same product as ops, its block placed
    // between zero columns, so it can be differentiated again.
    std::vector<Tensor> blocks;
    if (first_column > 0) blocks.push_back(zeros({out, first_column}));
    blocks.push_back(matmul(transpose(dy, 0, 1), x));
    if (first_column + width < in) blocks.push_back(zeros({out, in - first_column - width}));
    return blocks.size() == 1 ? blocks[0] : cat(blocks, 1);
  }
  if (auto kept = fast::defer_product(dy, x, first_column, in)) return Gradient(std::move(kept));
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
  if (!grad_enabled()) {
    if (auto kept = fast::defer_rows(shape, ids, values, skip)) return Gradient(std::move(kept));
  }
  const int64_t D = shape[1];
  const Tensor source = values.contiguous_data();
  Tensor dtable = zeros(shape);
  for (size_t p = 0; p < ids.size(); ++p) {
    if (ids[p] == skip) continue;
    kernels::accumulate(dtable.data() + ids[p] * D, source.data() + static_cast<int64_t>(p) * D, D);
  }
  // Linear in the values: recorded (create_graph), its backward reads the
  // rows back, zero where the id was skipped.
  return adjoint("embedding_rows", dtable, values, [ids, skip](const Tensor& g) {
    std::vector<int64_t> read(ids);
    std::vector<real> kept(ids.size(), real(1));
    for (size_t p = 0; p < ids.size(); ++p) {
      if (ids[p] == skip) read[p] = 0, kept[p] = real(0);
    }
    const Tensor rows = index_select(g, 0, read);
    if (!skip) return rows;
    return mul(rows, from_vector(kept, Shape{static_cast<int64_t>(ids.size()), 1}));
  });
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
  if (grad_enabled() || requires_grad(dense_) || requires_grad(other.dense_)) {
    // A sum with history (create_graph) is the add op's, recorded when
    // recording; a tensor with history is never written in place.
    dense_ = add(dense_, other.dense_);
    owned_ = !requires_grad(dense_);
    return *this;
  }
  own();
  const Tensor source = other.dense_.contiguous_data();
  kernels::accumulate(dense_.data(), source.data(), dense_.numel());
  return *this;
}

void Gradient::own() {
  // A gradient with history (from create_graph) stays the tensor its graph
  // made: it is read, never written in place.
  if (owned_ || !dense_.defined() || requires_grad(dense_)) return;
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
