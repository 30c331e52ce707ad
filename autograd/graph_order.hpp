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
#include <vector>

#include "tensor/fast/pool.hpp"
#include "tensor/tensor.hpp"

namespace attograd::detail {

// The lists one backward pass keeps. They are small for the graphs of small
// models (a dozen tensors), so their blocks come from the per-thread pool
// rather than from malloc; a large graph's lists outgrow the pool's sizes
// and take ordinary heap blocks.
template <typename T>
using PassList = std::vector<T, pool::Allocator<T>>;

// Numbers the tensors of one backward pass 0, 1, 2, … in the order they are
// first seen. An open-addressing hash table: one flat array of (tensor,
// number) slots, searched from the pointer's hash onwards to the first empty
// slot, and doubled when half full. Unlike std::unordered_map, which
// allocates one node per tensor, it allocates a handful of times per pass —
// in a graph of a few dozen small tensors those allocations cost more than
// the arithmetic.
class TensorNumbering {
 public:
  static constexpr size_t npos = static_cast<size_t>(-1);

  // t's number, or npos if it has none.
  size_t find(const TensorImpl* t) const;
  // Gives t the next number; false (and no change) if it already has one.
  bool insert(const TensorImpl* t);
  size_t size() const { return count_; }

 private:
  struct Slot {
    const TensorImpl* tensor = nullptr;
    size_t number = 0;
  };
  size_t home(const TensorImpl* t) const;
  void grow();

  PassList<Slot> slots_;  // a power of two of them
  int bits_ = 0;          // log2(slots_.size())
  size_t count_ = 0;
};

// `order`: a post-order of the tensors below the root that require grad (a
// tensor comes after every input it depends on); `numbers` numbers the same
// tensors. Inputs are visited in order, so both are the same on every run.
struct GraphOrder {
  PassList<std::shared_ptr<TensorImpl>> order;
  TensorNumbering numbers;
};

GraphOrder topological_order(const Tensor& root);

}  // namespace attograd::detail
