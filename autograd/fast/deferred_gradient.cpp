// autograd/fast/deferred_gradient.cpp — factors and rows appended, formed on
// request (see the header).
#include "autograd/fast/deferred_gradient.hpp"

#include <algorithm>

#include "autograd/autograd_meta.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"
#include "tensor/kernels.hpp"

namespace attograd::fast {

namespace {
thread_local bool deferred_on = true;
}  // namespace

bool deferred_gradients() { return deferred_on; }
void set_deferred_gradients(bool on) { deferred_on = on; }

void DeferredGradient::add_product(const Tensor& dy, const Tensor& x) {
  check(shape_.ndim() == 2 && dy.shape() == Shape{dy.shape()[0], shape_[0]} &&
            x.shape() == Shape{dy.shape()[0], shape_[1]},
        "DeferredGradient: factors dy {} and x {} do not make a {} gradient dyᵀx", dy.shape(),
        x.shape(), shape_);
  if (dy.shape()[0] == 0) return;
  dy_blocks_.push_back(dy.clone_data());
  x_blocks_.push_back(x.clone_data());
  product_rows_ += dy.shape()[0];
}

void DeferredGradient::add_rows(const std::vector<int64_t>& ids, const Tensor& values,
                                std::optional<int64_t> skip) {
  const int64_t D = shape_[1];
  for (size_t p = 0; p < ids.size(); ++p) {
    if (ids[p] == skip) continue;
    const real* row = values.data() + static_cast<int64_t>(p) * D;
    row_ids_.push_back(ids[p]);
    row_values_.insert(row_values_.end(), row, row + D);
  }
}

void DeferredGradient::add(const DeferredGradient& other) {
  check(other.shape_ == shape_, "DeferredGradient: cannot add a {} gradient to a {} one",
        other.shape_, shape_);
  dy_blocks_.insert(dy_blocks_.end(), other.dy_blocks_.begin(), other.dy_blocks_.end());
  x_blocks_.insert(x_blocks_.end(), other.x_blocks_.begin(), other.x_blocks_.end());
  product_rows_ += other.product_rows_;
  row_ids_.insert(row_ids_.end(), other.row_ids_.begin(), other.row_ids_.end());
  row_values_.insert(row_values_.end(), other.row_values_.begin(), other.row_values_.end());
}

std::pair<Tensor, Tensor> DeferredGradient::stacked_factors() const {
  if (dy_blocks_.size() == 1) return {dy_blocks_.front(), x_blocks_.front()};
  Tensor dy = Tensor::empty({product_rows_, shape_[0]});
  Tensor x = Tensor::empty({product_rows_, shape_[1]});
  real* dy_end = dy.data();
  real* x_end = x.data();
  for (size_t b = 0; b < dy_blocks_.size(); ++b) {
    dy_end = std::copy_n(dy_blocks_[b].data(), dy_blocks_[b].numel(), dy_end);
    x_end = std::copy_n(x_blocks_[b].data(), x_blocks_[b].numel(), x_end);
  }
  return {dy, x};
}

// dst += scale · (dyᵀx + rows)
void DeferredGradient::apply_scaled(real* dst, real scale) const {
  if (product_rows_ > 0) {
    const auto [dy, x] = stacked_factors();
    kernels::add_scaled_product_tn(dst, scale, dy.data(), x.data(), shape_[0], product_rows_,
                                   shape_[1]);
  }
  const int64_t D = shape_.ndim() == 2 ? shape_[1] : 0;
  for (size_t p = 0; p < row_ids_.size(); ++p) {
    real* row = dst + row_ids_[p] * D;
    const real* g = row_values_.data() + static_cast<int64_t>(p) * D;
    for (int64_t k = 0; k < D; ++k) row[k] += scale * g[k];
  }
}

Tensor DeferredGradient::to_dense() const {
  Tensor dense;
  if (product_rows_ > 0) {
    const auto [dy, x] = stacked_factors();
    dense = Tensor::empty(shape_);
    kernels::matmul_forward(dense.data(), dy.data(), kernels::Layout::transposed, x.data(),
                            kernels::Layout::normal, shape_[0], product_rows_, shape_[1]);
  } else {
    dense = zeros(shape_);
  }
  const int64_t D = shape_.ndim() == 2 ? shape_[1] : 0;
  for (size_t p = 0; p < row_ids_.size(); ++p) {
    kernels::accumulate(dense.data() + row_ids_[p] * D,
                        row_values_.data() + static_cast<int64_t>(p) * D, D);
  }
  return dense;
}

std::shared_ptr<DeferredGradient> take_deferred_gradient(const Tensor& leaf) {
  AutogradMeta* meta = autograd_meta(leaf);
  if (meta == nullptr) return nullptr;
  return std::move(meta->deferred_grad);
}

}  // namespace attograd::fast
