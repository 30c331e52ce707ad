// autograd/ops_softmax.cpp — softmax and log_softmax along any axis.
//
// The kernels work on rows (the last axis). For another axis, the op moves it
// last with a transpose, runs the kernel, and moves it back; the backward does
// the same dance with the gradient.
#include "autograd/op_helpers.hpp"
#include "autograd/ops.hpp"

namespace attograd {

namespace {

using RowKernel = void (*)(real*, const real*, int64_t, int64_t);
using RowBackward = void (*)(real*, const real*, const real*, int64_t, int64_t);

Tensor softmax_like(const char* name, const Tensor& x, int64_t axis_in, RowKernel forward,
                    RowBackward backward) {
  detail::check_defined(name, x);
  const int64_t axis = normalize_axis(name, axis_in, x.dim());
  const int64_t last = x.dim() - 1;
  // The rows to normalise, contiguous: a view of x's own values when the axis
  // is already last and x is stored row-major (no copy), else a copy.
  const Tensor rows_in =
      axis == last ? x.contiguous_data() : transpose(detach(x), axis, last).contiguous_data();
  const int64_t cols = x.shape()[axis];
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  Tensor rows_out = Tensor::empty(rows_in.shape());
  forward(rows_out.data(), rows_in.data(), rows, cols);
  Tensor y = axis == last ? rows_out : transpose(rows_out, axis, last).contiguous_data();
  return record(name, y, {x}, [=, y_rows = detach(rows_out)](const Tensor& dy) {
    const Tensor dy_rows = axis != last         ? transpose(dy, axis, last).contiguous_data()
                           : dy.is_contiguous() ? dy
                                                : dy.contiguous_data();
    Tensor dx_rows = Tensor::empty(dy_rows.shape());
    backward(dx_rows.data(), y_rows.data(), dy_rows.data(), rows, cols);
    return std::vector<Tensor>{axis == last ? dx_rows : transpose(dx_rows, axis, last)};
  });
}

}  // namespace

// y = exp(x) / Σ exp(x) along axis        dx = y ⊙ (dy − Σ dy ⊙ y)
Tensor softmax(const Tensor& x, int64_t axis) {
  return softmax_like("softmax", x, axis, kernels::softmax_forward, kernels::softmax_backward);
}

// y = x − log Σ exp(x) along axis          dx = dy − softmax(x) ⊙ Σ dy
Tensor log_softmax(const Tensor& x, int64_t axis) {
  return softmax_like("log_softmax", x, axis, kernels::log_softmax_forward,
                      kernels::log_softmax_backward);
}

}  // namespace attograd
