// autograd/graph_order.hpp — the order backward() visits a graph in (used by
// autograd/engine.cpp; not public API).
//
// A post-order of the graph below the root, made without recursion (an
// unrolled RNN is deeper than any stack), and a numbering of the same tensors
// so that their pending gradients can live in a plain vector.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "autograd/fast/tensor_numbering.hpp"
#include "tensor/tensor.hpp"

namespace attograd::detail {

// `order`: a post-order of the tensors below the roots that require grad (a
// tensor comes after every input it depends on); `numbers` numbers the same
// tensors. Inputs are visited in order, so both are the same on every run.
struct GraphOrder {
  ObjectVector<std::shared_ptr<TensorImpl>> order;
  fast::TensorNumbering numbers;
};

GraphOrder topological_order(std::span<const Tensor> roots);

}  // namespace attograd::detail
