// autograd/fast/tensor_numbering.hpp — numbering the tensors of one
// backward pass, in a flat hash table.
//
// The plain algorithm is std::unordered_map<const TensorImpl*, size_t>: the
// engine numbers the tensors of a graph so that their pending gradients can
// live in a plain vector. std::unordered_map allocates one node per tensor;
// this table allocates a handful of times per pass — in a graph of a few
// dozen small tensors those allocations cost more than the arithmetic.
//
// Where it is reached: GraphOrder::numbers (autograd/graph_order.hpp).
// What it saves: measured with the pooled blocks it lives in (NW's 100
// epochs, docs/fast_paths.md).
// Switch: none. It gives every tensor the number std::unordered_map would
// (the order of first sight), so a switch would change no result and no
// allocation that matters; tests/autograd/test_engine.cpp checks it against
// std::unordered_map.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/tensor.hpp"

namespace attograd::fast {

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

  ObjectVector<Slot> slots_;  // a power of two of them
  int bits_ = 0;              // log2(slots_.size())
  size_t count_ = 0;
};

}  // namespace attograd::fast
