// autograd/fast/deferred_gradient.cpp — factors and rows appended, formed on
// request (see the header).
#include "autograd/fast/deferred_gradient.hpp"

#include <algorithm>

#include "autograd/autograd_meta.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"
#include "tensor/kernels.hpp"
#include "tensor/kernels_gemm.hpp"

namespace attograd::fast {

namespace {
thread_local bool deferred_on = true;
}  // namespace

bool deferred_gradients() { return deferred_on; }
void set_deferred_gradients(bool on) { deferred_on = on; }

std::shared_ptr<DeferredGradient> defer_product(const Tensor& dy, const Tensor& x,
                                                int64_t first_column, int64_t in) {
  const int64_t n = dy.shape()[0], out = dy.shape()[1], width = x.shape()[1];
  if (!deferred_on || n * (out + width) >= out * in) return nullptr;
  auto deferred = std::make_shared<DeferredGradient>(Shape{out, in});
  deferred->add_product(dy, x, first_column);
  return deferred;
}

std::shared_ptr<DeferredGradient> defer_rows(const Shape& shape, const std::vector<int64_t>& ids,
                                             const Tensor& values, std::optional<int64_t> skip) {
  if (!deferred_on) return nullptr;
  auto deferred = std::make_shared<DeferredGradient>(shape);
  deferred->add_rows(ids, values, skip);
  return deferred;
}

void DeferredGradient::add_product(const Tensor& dy, const Tensor& x, int64_t first_column) {
  check(shape_.ndim() == 2 && dy.dim() == 2 && x.dim() == 2 && dy.shape()[1] == shape_[0] &&
            x.shape()[0] == dy.shape()[0] && first_column >= 0 &&
            first_column + x.shape()[1] <= shape_[1],
        "DeferredGradient: factors dy {} and x {} at column {} do not make a {} gradient dyᵀx",
        dy.shape(), x.shape(), first_column, shape_);
  if (dy.shape()[0] == 0) return;
  factors_.push_back(Factors{dy.clone_data(), x.clone_data(), first_column});
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
  factors_.insert(factors_.end(), other.factors_.begin(), other.factors_.end());
  product_rows_ += other.product_rows_;
  row_ids_.insert(row_ids_.end(), other.row_ids_.begin(), other.row_ids_.end());
  row_values_.insert(row_values_.end(), other.row_values_.begin(), other.row_values_.end());
}

// Only the fast path makes unformed gradients, and they are all of this kind.
void DeferredGradient::add(const UnformedGradient& other) {
  add(static_cast<const DeferredGradient&>(other));
}

std::vector<DeferredGradient::Factors> DeferredGradient::stacked_factors() const {
  // Each block's column range and its add_products, in order of first appearance.
  std::vector<std::vector<const Factors*>> blocks;
  for (const Factors& f : factors_) {
    auto same = [&f](const std::vector<const Factors*>& block) {
      return block.front()->first_column == f.first_column &&
             block.front()->x.shape()[1] == f.x.shape()[1];
    };
    const auto found = std::find_if(blocks.begin(), blocks.end(), same);
    if (found == blocks.end()) {
      blocks.push_back({&f});
    } else {
      found->push_back(&f);
    }
  }
  std::vector<Factors> stacked;
  for (const auto& block : blocks) {
    if (block.size() == 1) {
      stacked.push_back(*block.front());
      continue;
    }
    int64_t rows = 0;
    for (const Factors* f : block) rows += f->dy.shape()[0];
    const int64_t width = block.front()->x.shape()[1];
    Tensor dy = Tensor::empty({rows, shape_[0]});
    Tensor x = Tensor::empty({rows, width});
    real* dy_end = dy.data();
    real* x_end = x.data();
    for (const Factors* f : block) {
      dy_end = std::copy_n(f->dy.data(), f->dy.numel(), dy_end);
      x_end = std::copy_n(f->x.data(), f->x.numel(), x_end);
    }
    stacked.push_back(Factors{dy, x, block.front()->first_column});
  }
  return stacked;
}

namespace {

// dst[:, f:f+w] += scale · dyᵀx for one column block, dst (out,in) row-major:
// the gemm add_scaled_product_tn runs, with dst's row stride, so each entry
// is summed and added in one rounding.
void add_block(real* dst, int64_t in, const Tensor& dy, const Tensor& x, int64_t first_column,
               real scale) {
  const int64_t rows = dy.shape()[0], out = dy.shape()[1], width = x.shape()[1];
  kernels::gemm(dst + first_column, in,
                kernels::MatrixRef{dy.data(), kernels::Layout::transposed, out},
                kernels::MatrixRef{x.data(), kernels::Layout::normal, width}, out, rows, width,
                kernels::GemmInto{true, scale});
}

}  // namespace

// dst += scale · (dyᵀx + rows)
//
// A block of the whole width is added by add_scaled_product_tn, a block of
// columns by add_block: one rounding per entry either way.
void DeferredGradient::apply_scaled(real* dst, real scale) const {
  const int64_t in = shape_.ndim() == 2 ? shape_[1] : 0;
  for (const Factors& f : stacked_factors()) {
    if (f.x.shape()[1] == in) {
      kernels::add_scaled_product_tn(dst, scale, f.dy.data(), f.x.data(), shape_[0],
                                     f.dy.shape()[0], in);
    } else {
      add_block(dst, in, f.dy, f.x, f.first_column, scale);
    }
  }
  for (size_t p = 0; p < row_ids_.size(); ++p) {
    real* row = dst + row_ids_[p] * in;
    const real* g = row_values_.data() + static_cast<int64_t>(p) * in;
    for (int64_t k = 0; k < in; ++k) row[k] += scale * g[k];
  }
}

// The whole-width block formed as the dense product would be (matmul_forward),
// the column blocks added into it (or into zeros) as apply_scaled adds them.
Tensor DeferredGradient::to_dense() const {
  const std::vector<Factors> stacked = stacked_factors();
  const int64_t out = shape_.ndim() == 2 ? shape_[0] : 0, in = shape_.ndim() == 2 ? shape_[1] : 0;
  const auto whole = std::find_if(stacked.begin(), stacked.end(),
                                  [in](const Factors& f) { return f.x.shape()[1] == in; });
  Tensor dense;
  if (whole != stacked.end()) {
    dense = Tensor::empty(shape_);
    kernels::matmul_forward(dense.data(), whole->dy.data(), kernels::Layout::transposed,
                            whole->x.data(), kernels::Layout::normal, out, whole->dy.shape()[0],
                            in);
  } else {
    dense = zeros(shape_);
  }
  for (auto f = stacked.begin(); f != stacked.end(); ++f) {
    if (f != whole) add_block(dense.data(), in, f->dy, f->x, f->first_column, real(1));
  }
  for (size_t p = 0; p < row_ids_.size(); ++p) {
    kernels::accumulate(dense.data() + row_ids_[p] * in,
                        row_values_.data() + static_cast<int64_t>(p) * in, in);
  }
  return dense;
}

std::shared_ptr<DeferredGradient> take_deferred_gradient(const Tensor& leaf) {
  AutogradMeta* meta = autograd_meta(leaf);
  if (meta == nullptr) return nullptr;
  return std::static_pointer_cast<DeferredGradient>(meta->grad.take_unformed());
}

const DeferredGradient* deferred_gradient_of(const Tensor& leaf) {
  const AutogradMeta* meta = autograd_meta(leaf);
  if (meta == nullptr) return nullptr;
  return static_cast<const DeferredGradient*>(meta->grad.unformed().get());
}

}  // namespace attograd::fast
