// autograd/fast/deferred_gradient.cpp — factors and rows appended, formed on
// request (see the header).
#include "autograd/fast/deferred_gradient.hpp"

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
  dy_.insert(dy_.end(), dy.data(), dy.data() + dy.numel());
  x_.insert(x_.end(), x.data(), x.data() + x.numel());
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
  dy_.insert(dy_.end(), other.dy_.begin(), other.dy_.end());
  x_.insert(x_.end(), other.x_.begin(), other.x_.end());
  product_rows_ += other.product_rows_;
  row_ids_.insert(row_ids_.end(), other.row_ids_.begin(), other.row_ids_.end());
  row_values_.insert(row_values_.end(), other.row_values_.begin(), other.row_values_.end());
}

// dst += scale · (dyᵀx + rows)
void DeferredGradient::apply_scaled(real* dst, real scale) const {
  if (product_rows_ > 0) {
    kernels::add_scaled_product_tn(dst, scale, dy_.data(), x_.data(), shape_[0], product_rows_,
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
    dense = Tensor::empty(shape_);
    kernels::matmul_forward(dense.data(), dy_.data(), kernels::Layout::transposed, x_.data(),
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
