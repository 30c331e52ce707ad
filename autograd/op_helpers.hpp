// autograd/op_helpers.hpp — what writing an op takes.
//
// Public: everything a layer author outside the library needs to write an op
// with its own backward (docs/extending.md walks through one):
//   check_defined(op, x)     an undefined input is an Error naming the op
//   check(cond, fmt, …)      any other bad input (tensor/error.hpp)
//   x.contiguous_data()      a handle whose data() is the row-major values
//   Tensor::empty(shape)     the output, filled by the forward loop
//   record(name, y, {inputs}, backward)   attach the backward (autograd/engine.hpp)
//   saved_output(y)          y's numbers for the backward, without y's history
//   adjoint(…), composed_gradients(…)   a closure's gradient under create_graph
//                            (gradients of gradients; docs/autograd.md)
//
// Library-internal (namespace detail, may change): the broadcasting helpers
// the built-in ops share.
#pragma once

#include <functional>
#include <vector>

#include "autograd/engine.hpp"
#include "tensor/error.hpp"
#include "tensor/kernels.hpp"
#include "tensor/tensor.hpp"

namespace attograd {

// Throws Error "OP: got an undefined tensor (default-constructed Tensor)"
// unless x is defined, so an undefined tensor never gets as far as a null
// dereference.
void check_defined(const char* op, const Tensor& x);

// ---- Gradients of gradients ------------------------------------------------
//
// Under backward(…, create_graph = true) a closure runs with recording on
// (grad_enabled() is true inside it) and must return gradients with history:
// made of recorded ops, from the op's inputs as given (not contiguous_data()
// copies, not saved_output(y), which have none) and from dy. A closure whose
// maths is already ops is done. One that forms its gradient with a kernel
// takes one of two ways out:

// For a linear op y = A(x) — a view, a copy, a gather, a sum — whose closure
// forms dx = Aᵀ(dy) with a kernel (`formed`): dx is itself linear in dy, and
// the backward of dy ↦ Aᵀ(dy) is A again. So when recording, `formed` is
// recorded as a node with the single input dy whose backward is apply(g) =
// A(g), the forward op itself (recorded, so this holds to any order).
// Otherwise `formed` is returned as it is.
//   return Gradients{adjoint("index_select_backward", dx, dy,
//                            [=](const Tensor& g) { return index_select(g, axis, ids); })};
template <typename Apply>
Tensor adjoint(const char* name, Tensor formed, const Tensor& dy, Apply apply) {
  return record(name, std::move(formed), {dy},
                [apply = std::move(apply)](const Tensor& g) { return Gradients{apply(g)}; });
}

// For a fused op (one kernel where the definition is several ops): the
// gradients, at dy, of `composition` — the plain ops that define the op, on
// the same inputs — with respect to `inputs` (the op's own inputs as given),
// each recorded. An input that is undefined or does not require grad gets an
// undefined Gradient. It runs the composition forward again and a nested
// autograd::grad through it, so it costs a forward and a backward; call it
// only when grad_enabled() in a closure.
//   if (grad_enabled()) return composed_gradients(layer_norm_composed_of, {x, gain, bias}, dy);
Gradients composed_gradients(const std::function<Tensor(const std::vector<Tensor>&)>& composition,
                             const std::vector<Tensor>& inputs, const Tensor& dy);

}  // namespace attograd

namespace attograd::detail {

// Strides that let `t` be read as if it had `shape` (which t broadcasts to):
// axes t lacks or has size 1 get stride 0.
Strides broadcast_strides(const Tensor& t, const Shape& shape);

// Calls fn(out_row_start, a_offset, b_offset) for every row (last axis) of
// `shape`, where a and b are read through strides `a_strides`, `b_strides`
// (storage offsets include each tensor's own offset).
template <typename Fn>
void for_each_row(const Shape& shape, const Tensor& a, const Strides& a_strides, const Tensor& b,
                  const Strides& b_strides, Fn&& fn) {
  const int64_t ndim = shape.ndim();
  const int64_t row = ndim == 0 ? 1 : shape[ndim - 1];
  const int64_t rows = row == 0 ? 0 : shape.numel() / row;
  Dims index(static_cast<size_t>(ndim > 0 ? ndim - 1 : 0), 0);
  int64_t a_offset = a.offset();
  int64_t b_offset = b.offset();
  for (int64_t r = 0; r < rows; ++r) {
    fn(r * row, a_offset, b_offset);
    for (int64_t axis = ndim - 2; axis >= 0; --axis) {
      if (++index[axis] < shape[axis]) {
        a_offset += a_strides[axis];
        b_offset += b_strides[axis];
        break;
      }
      a_offset -= a_strides[axis] * (shape[axis] - 1);
      b_offset -= b_strides[axis] * (shape[axis] - 1);
      index[axis] = 0;
    }
  }
}

// If `shape` broadcasts to `full` along leading axes only — once its leading
// 1s are dropped, its sizes are full's last ones, as a scalar's or a row's
// are — the number of elements of that block (shape.numel()); otherwise, or
// when shape equals full or is empty, −1. A contiguous tensor of `shape` is
// then full.numel() / block copies of one block, back to back.
int64_t leading_broadcast_block(const Shape& shape, const Shape& full);

// a ∘ b with broadcasting, as a new contiguous tensor (no autograd).
Tensor binary_values(kernels::Binary op, const char* name, const Tensor& a, const Tensor& b);

}  // namespace attograd::detail
