// autograd/ops_shape.cpp — reshaping, views, tiling and joining.
//
// Most of these only change how storage is read (shape, strides, offset) and
// copy nothing. Their backward moves the gradient the opposite way: reshape
// back, permute by the inverse order, scatter a slice back into zeros.
#include <algorithm>
#include <numeric>

#include "autograd/op_helpers.hpp"
#include "autograd/ops.hpp"
#include "tensor/factory.hpp"

namespace attograd {

namespace {

Tensor view_of(const Tensor& x, const Shape& shape, const Strides& strides, int64_t offset) {
  return x.as_strided(shape, strides, offset);
}

// Replaces a −1 in `shape` by whatever makes the element counts agree.
Shape resolve_shape(const char* op, const Tensor& x, const Shape& requested) {
  Shape shape = requested;
  int64_t known = 1;
  int64_t unknown_axis = -1;
  for (int64_t i = 0; i < shape.ndim(); ++i) {
    if (shape[i] == -1) {
      check(unknown_axis < 0, "{}: {} has more than one -1; only one size can be inferred", op,
            requested);
      unknown_axis = i;
    } else {
      check(shape[i] >= 0, "{}: {} has a negative size", op, requested);
      known *= shape[i];
    }
  }
  if (unknown_axis >= 0) {
    check(known != 0 && x.numel() % known == 0,
          "{}: cannot reshape {} ({} elements) into {}: no size for -1 fits", op, x.shape(),
          x.numel(), requested);
    shape[unknown_axis] = x.numel() / known;
  }
  check(shape.numel() == x.numel(),
        "{}: cannot reshape {} ({} elements) into {} ({} elements); the counts must match", op,
        x.shape(), x.numel(), shape, shape.numel());
  return shape;
}

// Gradient of any op whose output is a window (view) of x: zeros shaped like
// x, with dy written through the same window. It is linear in dy, and the map
// it is the adjoint of is the op itself, `take_window` (recorded, unlike
// make_window's bare view), which a recorded backward differentiates.
template <typename MakeWindow, typename TakeWindow>
Node::BackwardFn scatter_into_window(const char* name, const Shape& x_shape, MakeWindow make_window,
                                     TakeWindow take_window) {
  return [name, x_shape, make_window, take_window](const Tensor& dy) {
    Tensor dx = zeros(x_shape);
    make_window(dx).copy_from(dy);
    return Gradients{adjoint(name, dx, dy, take_window)};
  };
}

}  // namespace

// y = x with another shape      dx = reshape(dy, x.shape)
Tensor reshape(const Tensor& x, const Shape& requested) {
  check_defined("reshape", x);
  const Shape shape = resolve_shape("reshape", x, requested);
  const Tensor values = x.contiguous_data();  // a view when x already is contiguous
  Tensor y = view_of(values, shape, contiguous_strides(shape), values.offset());
  return record("reshape", y, {x}, [x_shape = x.shape()](const Tensor& dy) {
    return Gradients{reshape(dy, x_shape)};
  });
}

Tensor view(const Tensor& x, const Shape& shape) {
  check_defined("view", x);
  check(x.is_contiguous(),
        "view: tensor of shape {} is not contiguous (strides {}), so it cannot be viewed as {} "
        "without a copy; call contiguous() first or use reshape()",
        x.shape(), Shape(x.strides()), shape);
  return reshape(x, shape);
}

// y = x laid out row-major     dx = dy
Tensor contiguous(const Tensor& x) {
  check_defined("contiguous", x);
  if (x.is_contiguous()) return x;
  return record("contiguous", x.clone_data(), {x}, [](const Tensor& dy) { return Gradients{dy}; });
}

namespace {

// permute with the order as a Dims: up to six axes live inside it, so
// transpose, which every bmm backward calls, reorders without a heap block.
Tensor permute_axes(const Tensor& x, const Dims& order_in) {
  check_defined("permute", x);
  check(static_cast<int64_t>(order_in.size()) == x.dim(),
        "permute: order has {} axes but the tensor of shape {} has {}", order_in.size(), x.shape(),
        x.dim());
  Dims order(order_in.size());
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = normalize_axis("permute", order_in[i], x.dim());
  }
  Dims inverse(order.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) {
    check(inverse[order[i]] < 0, "permute: axis {} appears twice in the order", order[i]);
    inverse[order[i]] = static_cast<int64_t>(i);
  }
  Shape shape(order.size());
  Strides strides(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    shape[i] = x.shape()[order[i]];
    strides[i] = x.strides()[order[i]];
  }
  Tensor y = view_of(x, shape, strides, x.offset());
  return record("permute", y, {x},
                [inverse](const Tensor& dy) { return Gradients{permute_axes(dy, inverse)}; });
}

}  // namespace

// y = x with axes reordered: y axis i is x axis order[i]    dx = permute(dy, order⁻¹)
Tensor permute(const Tensor& x, const std::vector<int64_t>& order) {
  return permute_axes(x, Dims(order));
}

Tensor transpose(const Tensor& x, int64_t axis0, int64_t axis1) {
  check_defined("transpose", x);
  Dims order(static_cast<size_t>(x.dim()));
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[normalize_axis("transpose", axis0, x.dim())],
            order[normalize_axis("transpose", axis1, x.dim())]);
  return permute_axes(x, order);
}

// Drop a size-1 axis      dx = reshape(dy, x.shape)
Tensor squeeze(const Tensor& x, int64_t axis_in) {
  check_defined("squeeze", x);
  const int64_t axis = normalize_axis("squeeze", axis_in, x.dim());
  check(x.shape()[axis] == 1,
        "squeeze: axis {} of shape {} has size {}, not 1; only size-1 axes can be removed", axis,
        x.shape(), x.shape()[axis]);
  Shape shape = x.shape();
  Strides strides = x.strides();
  shape.erase(shape.begin() + axis);
  strides.erase(strides.begin() + axis);
  Tensor y = view_of(x, shape, strides, x.offset());
  return record("squeeze", y, {x}, [x_shape = x.shape()](const Tensor& dy) {
    return Gradients{reshape(dy, x_shape)};
  });
}

// Insert a size-1 axis at `axis` (0..dim)      dx = reshape(dy, x.shape)
Tensor unsqueeze(const Tensor& x, int64_t axis_in) {
  check_defined("unsqueeze", x);
  const int64_t axis = normalize_axis("unsqueeze", axis_in, x.dim() + 1);
  Shape shape = x.shape();
  Strides strides = x.strides();
  shape.insert(shape.begin() + axis, 1);
  strides.insert(strides.begin() + axis, 0);
  Tensor y = view_of(x, shape, strides, x.offset());
  return record("unsqueeze", y, {x}, [x_shape = x.shape()](const Tensor& dy) {
    return Gradients{reshape(dy, x_shape)};
  });
}

// A broadcast view of x at `shape` (size-1 axes repeat with stride 0; a −1
// keeps x's size).    dx = dy, summed back to x.shape by the engine's sum_to.
Tensor expand(const Tensor& x, const Shape& requested) {
  check_defined("expand", x);
  check(requested.ndim() >= x.dim(),
        "expand: cannot expand {} to {}, which has fewer dims; expand can only add leading axes",
        x.shape(), requested);
  Shape shape = requested;
  const int64_t lead = shape.ndim() - x.dim();
  for (int64_t axis = 0; axis < lead; ++axis) {
    check(shape[axis] >= 0,
          "expand: cannot expand {} to {}: new leading axis {} needs a size, not {}", x.shape(),
          requested, axis, shape[axis]);
  }
  for (int64_t axis = lead; axis < shape.ndim(); ++axis) {
    const int64_t size = x.shape()[axis - lead];
    if (shape[axis] == -1) shape[axis] = size;
    check(size == shape[axis] || size == 1,
          "expand: cannot expand {} to {}: axis {} has size {} (only size-1 axes can grow)",
          x.shape(), requested, axis - lead, size);
  }
  Tensor y = view_of(x, shape, detail::broadcast_strides(x, shape), x.offset());
  return record("expand", y, {x}, [](const Tensor& dy) { return Gradients{dy}; });
}

// Tile x: repeats (r0, r1, …) copies along each axis (x is padded with leading
// size-1 axes when repeats is longer).
// Through a view of shape (r0, s0, r1, s1, …) with stride 0 on every r axis;
// backward sums dy over the r axes of the same factorisation.
Tensor repeat(const Tensor& x, const Shape& repeats) {
  check_defined("repeat", x);
  check(repeats.ndim() >= x.dim(),
        "repeat: {} repeats for a tensor of {} dims; give at least one per axis", repeats.ndim(),
        x.dim());
  for (int64_t r : repeats) check(r >= 0, "repeat: repeat count {} is negative", r);
  const int64_t lead = repeats.ndim() - x.dim();
  Shape factored, result, sizes;
  Strides strides;
  std::vector<int64_t> repeat_axes;
  for (int64_t axis = 0; axis < repeats.ndim(); ++axis) {
    const int64_t size = axis < lead ? 1 : x.shape()[axis - lead];
    const int64_t stride = axis < lead ? 0 : x.strides()[axis - lead];
    repeat_axes.push_back(factored.ndim());
    factored.insert(factored.end(), {repeats[axis], size});
    strides.insert(strides.end(), {0, stride});
    result.push_back(repeats[axis] * size);
  }
  // The copy is made from a detached view: the recorded node below is the only history.
  Tensor y = reshape(view_of(detach(x), factored, strides, x.offset()).clone_data(), result);
  return record("repeat", y, {x}, [factored, repeat_axes, x_shape = x.shape()](const Tensor& dy) {
    return Gradients{reshape(sum(reshape(dy, factored), repeat_axes), x_shape)};
  });
}

// Each slice along `axis` repeated `repeats` times in place: [a, b] → [a, a, b, b].
// Through a view (…, n, repeats, …) with stride 0 on the new axis; backward sums it.
Tensor repeat_interleave(const Tensor& x, int64_t repeats, int64_t axis_in) {
  check_defined("repeat_interleave", x);
  const int64_t axis = normalize_axis("repeat_interleave", axis_in, x.dim());
  check(repeats >= 0, "repeat_interleave: repeat count {} is negative", repeats);
  Shape factored = x.shape();
  Strides strides = x.strides();
  factored.insert(factored.begin() + axis + 1, repeats);
  strides.insert(strides.begin() + axis + 1, 0);
  Shape result = x.shape();
  result[axis] *= repeats;
  Tensor y = reshape(view_of(detach(x), factored, strides, x.offset()).clone_data(), result);
  return record("repeat_interleave", y, {x},
                [factored, axis, x_shape = x.shape()](const Tensor& dy) {
                  return Gradients{reshape(sum(reshape(dy, factored), {axis + 1}), x_shape)};
                });
}

// Entries start, start+step, … (< end) along `axis`; negative start/end count
// from the end.     dx = zeros with dy written into the same entries
Tensor slice(const Tensor& x, int64_t axis_in, int64_t start, int64_t end, int64_t step) {
  check_defined("slice", x);
  const int64_t axis = normalize_axis("slice", axis_in, x.dim());
  const int64_t size = x.shape()[axis];
  check(step > 0, "slice: step must be positive, got {}", step);
  if (start < 0) start += size;
  if (end < 0) end += size;
  check(0 <= start && start <= end && end <= size,
        "slice: range [{}, {}) does not fit axis {} of shape {}: it needs 0 <= start <= end <= {} "
        "(negative values count from the end)",
        start, end, axis, x.shape(), size);
  auto window = [axis, start, end, step](const Tensor& t) {
    Shape shape = t.shape();
    Strides strides = t.strides();
    shape[axis] = (end - start + step - 1) / step;
    strides[axis] *= step;
    return t.as_strided(shape, strides, t.offset() + start * t.strides()[axis]);
  };
  return record("slice", window(x), {x},
                scatter_into_window("slice", x.shape(), window, [=](const Tensor& g) {
                  return slice(g, axis, start, end, step);
                }));
}

Tensor narrow(const Tensor& x, int64_t axis, int64_t start, int64_t length) {
  check_defined("narrow", x);
  check(start >= 0 && length >= 0, "narrow: start {} and length {} must be >= 0", start, length);
  const int64_t size = x.shape()[normalize_axis("narrow", axis, x.dim())];
  check(start + length <= size,
        "narrow: start {} + length {} runs past the end of axis {} of shape {} (size {})", start,
        length, axis, x.shape(), size);
  return slice(x, axis, start, start + length);
}

// The entry `index` along `axis`, with that axis removed (a view).
//   dx = zeros shaped like x, with dy at `index`
Tensor select(const Tensor& x, int64_t axis_in, int64_t index) {
  check_defined("select", x);
  const int64_t axis = normalize_axis("select", axis_in, x.dim());
  const int64_t size = x.shape()[axis];
  check(-size <= index && index < size, "select: index {} out of range for axis {} of size {}",
        index, axis, size);
  if (index < 0) index += size;
  // One view node, the slice of width 1 with its axis dropped.
  auto window = [axis, index](const Tensor& t) {
    Shape shape = t.shape();
    Strides strides = t.strides();
    const int64_t offset = t.offset() + index * strides[axis];
    shape.erase(shape.begin() + axis);
    strides.erase(strides.begin() + axis);
    return t.as_strided(shape, strides, offset);
  };
  return record("select", window(x), {x},
                scatter_into_window("select", x.shape(), window, [axis, index](const Tensor& g) {
                  return select(g, axis, index);
                }));
}

// Join along `axis`; all other sizes must agree.   each dx = its slice of dy
Tensor cat(const std::vector<Tensor>& tensors, int64_t axis_in) {
  check(!tensors.empty(), "cat: needs at least one tensor");
  for (const Tensor& t : tensors) check_defined("cat", t);
  const Tensor& first = tensors.front();
  const int64_t axis = normalize_axis("cat", axis_in, first.dim());
  Shape shape = first.shape();
  shape[axis] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    bool compatible = t.dim() == first.dim();
    for (int64_t d = 0; compatible && d < t.dim(); ++d) {
      compatible = d == axis || t.shape()[d] == first.shape()[d];
    }
    check(compatible,
          "cat: tensor {} has shape {} but tensor 0 has shape {}; all sizes except axis {} must "
          "match",
          i, t.shape(), first.shape(), axis);
    shape[axis] += t.shape()[axis];
  }
  Tensor y = Tensor::empty(shape);
  std::vector<int64_t> starts;
  int64_t start = 0;
  for (const Tensor& t : tensors) {
    starts.push_back(start);
    narrow(detach(y), axis, start, t.shape()[axis]).copy_from(t);
    start += t.shape()[axis];
  }
  std::vector<int64_t> lengths;
  for (const Tensor& t : tensors) lengths.push_back(t.shape()[axis]);
  return record("cat", y, tensors, [axis, starts, lengths](const Tensor& dy) {
    Gradients grads;
    for (size_t i = 0; i < starts.size(); ++i)
      grads.push_back(narrow(dy, axis, starts[i], lengths[i]));
    return grads;
  });
}

// Join along a new axis: stack([a, b], 0) has shape (2, …a.shape).
Tensor stack(const std::vector<Tensor>& tensors, int64_t axis_in) {
  check(!tensors.empty(), "stack: needs at least one tensor");
  for (const Tensor& t : tensors) check_defined("stack", t);
  for (size_t i = 1; i < tensors.size(); ++i) {
    check(tensors[i].shape() == tensors[0].shape(),
          "stack: tensor {} has shape {} but tensor 0 has shape {}; all must match", i,
          tensors[i].shape(), tensors[0].shape());
  }
  const int64_t axis = normalize_axis("stack", axis_in, tensors[0].dim() + 1);
  std::vector<Tensor> expanded;
  for (const Tensor& t : tensors) expanded.push_back(unsqueeze(t, axis));
  return cat(expanded, axis);
}

}  // namespace attograd
