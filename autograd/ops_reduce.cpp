// autograd/ops_reduce.cpp — sum, mean, max along axes.
//
// A reduction along one axis views the contiguous input as (outer, n, inner):
// everything before the axis, the axis, everything after it.
#include <algorithm>

#include "autograd/op_helpers.hpp"
#include "autograd/ops.hpp"
#include "tensor/factory.hpp"

namespace attograd {

namespace {

struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};

// The axes first..last (adjacent) taken together as the middle one.
AxisSplit split_at(const Shape& shape, int64_t first, int64_t last) {
  AxisSplit split;
  for (int64_t i = 0; i < first; ++i) split.outer *= shape[i];
  for (int64_t i = first; i <= last; ++i) split.n *= shape[i];
  for (int64_t i = last + 1; i < shape.ndim(); ++i) split.inner *= shape[i];
  return split;
}

AxisSplit split_at(const Shape& shape, int64_t axis) { return split_at(shape, axis, axis); }

// Sorted, de-duplicated, non-negative axes.
Dims normalize_axes(const char* op, const std::vector<int64_t>& axes, int64_t ndim) {
  Dims result(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) result[i] = normalize_axis(op, axes[i], ndim);
  std::sort(result.begin(), result.end());
  const auto repeated = std::adjacent_find(result.begin(), result.end());
  check(repeated == result.end(),
        "{}: axes ({}) name axis {} twice (a negative axis counts from the end); list each "
        "axis once",
        op, fmt::join(axes, ","), repeated == result.end() ? 0 : *repeated);
  return result;
}

Shape drop_axes(const Shape& keep_shape, const Dims& axes) {
  Shape shape;
  for (int64_t i = 0; i < keep_shape.ndim(); ++i) {
    if (!std::binary_search(axes.begin(), axes.end(), i)) shape.push_back(keep_shape[i]);
  }
  return shape;
}

// The same contiguous values under another shape of equal size (no copy).
Tensor with_shape(const Tensor& contiguous_values, const Shape& shape) {
  return contiguous_values.as_strided(shape, contiguous_strides(shape), contiguous_values.offset());
}

}  // namespace

namespace {

// y = Σ over `axes` of x     dx = dy broadcast back over the summed axes
// (`axes` already normalized: sorted, each once)
Tensor sum_axes(const Tensor& x, const Dims& axes, bool keepdim) {
  Tensor values = x.contiguous_data();
  // One run of adjacent axes at a time, keeping dims so axis numbers stay
  // valid. A run is summed in one pass, as a single axis of their combined
  // size: all of an (N,K) is one sum of N·K numbers, not N rows folded together.
  for (size_t first = 0; first < axes.size();) {
    size_t last = first;
    while (last + 1 < axes.size() && axes[last + 1] == axes[last] + 1) ++last;
    const AxisSplit split = split_at(values.shape(), axes[first], axes[last]);
    Shape reduced = values.shape();
    for (size_t i = first; i <= last; ++i) reduced[axes[i]] = 1;
    Tensor out = Tensor::empty(reduced);
    kernels::sum_axis_forward(out.data(), values.data(), split.outer, split.n, split.inner);
    values = out;
    first = last + 1;
  }
  const Shape keep_shape = values.shape();
  if (!keepdim) values = with_shape(values, drop_axes(keep_shape, axes));
  return record("sum", values, {x}, [keep_shape, x_shape = x.shape()](const Tensor& dy) {
    return Gradients{expand(reshape(dy, keep_shape), x_shape)};
  });
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  check_defined("sum", x);
  return sum_axes(x, normalize_axes("sum", axes, x.dim()), keepdim);
}

Tensor sum(const Tensor& x) {
  check_defined("sum", x);
  Dims all(static_cast<size_t>(x.dim()));
  for (int64_t i = 0; i < x.dim(); ++i) all[i] = i;
  return sum_axes(x, all, /*keepdim=*/false);
}

// mean = sum / count: a one-liner over primitives, so its gradient is theirs.
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  check_defined("mean", x);
  int64_t count = 1;
  for (int64_t axis : normalize_axes("mean", axes, x.dim())) count *= x.shape()[axis];
  check(count > 0, "mean: cannot average over an empty axis of shape {}", x.shape());
  return sum(x, axes, keepdim) * (real(1) / static_cast<real>(count));
}

Tensor mean(const Tensor& x) {
  check_defined("mean", x);
  check(x.numel() > 0, "mean: cannot average an empty tensor of shape {}", x.shape());
  return sum(x) * (real(1) / static_cast<real>(x.numel()));
}

// y = max of x along `axis`   dx = dy at the first position that attains the
// maximum, 0 elsewhere (a subgradient at ties; gradcheck keeps entries apart).
// dx is linear in dy, a scatter; the map it is the adjoint of picks the winners
// out of a tensor of x's shape, which is gather with the argmax as the index.
Tensor max(const Tensor& x, int64_t axis_in, bool keepdim) {
  check_defined("max", x);
  const int64_t axis = normalize_axis("max", axis_in, x.dim());
  check(x.shape()[axis] > 0, "max: axis {} of shape {} is empty; a maximum needs an element", axis,
        x.shape());
  const Tensor values = x.contiguous_data();
  const AxisSplit split = split_at(x.shape(), axis);
  Shape keep_shape = x.shape();
  keep_shape[axis] = 1;
  Tensor out = Tensor::empty(keep_shape);
  auto argmax = std::make_shared<std::vector<int64_t>>(split.outer * split.inner);
  kernels::max_axis_forward(out.data(), argmax->data(), values.data(), split.outer, split.n,
                            split.inner);
  if (!keepdim) out = with_shape(out, drop_axes(keep_shape, Dims{axis}));
  return record(
      "max", out, {x}, [split, argmax, axis, keep_shape, x_shape = x.shape()](const Tensor& dy_in) {
        const Tensor dy = dy_in.contiguous_data();  // row-major, as (outer, 1, inner)
        Tensor dx = zeros(x_shape);
        for (int64_t o = 0; o < split.outer; ++o) {
          for (int64_t j = 0; j < split.inner; ++j) {
            const int64_t k = (*argmax)[o * split.inner + j];
            dx.data()[(o * split.n + k) * split.inner + j] = dy.data()[o * split.inner + j];
          }
        }
        return Gradients{adjoint(
            "max", dx, dy_in, [argmax, axis, keep_shape, y_shape = dy_in.shape()](const Tensor& g) {
              return reshape(gather(g, axis, *argmax, keep_shape), y_shape);
            })};
      });
}

Tensor max(const Tensor& x) {
  check_defined("max", x);
  check(x.numel() > 0, "max: tensor of shape {} is empty; a maximum needs an element", x.shape());
  return max(reshape(x, {x.numel()}), 0, /*keepdim=*/false);
}

std::vector<int64_t> argmax(const Tensor& x, int64_t axis_in) {
  check_defined("argmax", x);
  const int64_t axis = normalize_axis("argmax", axis_in, x.dim());
  check(x.shape()[axis] > 0, "argmax: axis {} of shape {} is empty", axis, x.shape());
  const Tensor values = x.contiguous_data();
  const AxisSplit split = split_at(x.shape(), axis);
  std::vector<real> best(split.outer * split.inner);
  std::vector<int64_t> index(split.outer * split.inner);
  kernels::max_axis_forward(best.data(), index.data(), values.data(), split.outer, split.n,
                            split.inner);
  return index;
}

}  // namespace attograd
