// autograd/graph_order.cpp — numbering and sorting a graph without recursion.
#include "autograd/graph_order.hpp"

#include "autograd/autograd_meta.hpp"
#include "autograd/node.hpp"

namespace attograd::detail {

size_t TensorNumbering::find(const TensorImpl* t) const {
  if (slots_.empty()) return npos;
  for (size_t i = home(t);; i = (i + 1) & (slots_.size() - 1)) {
    if (slots_[i].tensor == t) return slots_[i].number;
    if (slots_[i].tensor == nullptr) return npos;
  }
}

bool TensorNumbering::insert(const TensorImpl* t) {
  if (2 * (count_ + 1) > slots_.size()) grow();
  for (size_t i = home(t);; i = (i + 1) & (slots_.size() - 1)) {
    if (slots_[i].tensor == t) return false;
    if (slots_[i].tensor == nullptr) {
      slots_[i] = {t, count_++};
      return true;
    }
  }
}

// Where t's search starts. Heap addresses share their low bits (alignment)
// and high bits (the heap's region); multiplying by 2^64/φ (Fibonacci
// hashing) mixes every bit into the top ones, which pick the slot.
size_t TensorNumbering::home(const TensorImpl* t) const {
  const uint64_t mixed = reinterpret_cast<uintptr_t>(t) * uint64_t(0x9E3779B97F4A7C15);
  return static_cast<size_t>(mixed >> (64 - bits_));
}

void TensorNumbering::grow() {
  PassList<Slot> old = std::move(slots_);
  bits_ = old.empty() ? 5 : bits_ + 1;  // 32 slots (512 bytes, one pool block) hold 16 tensors
  slots_.assign(size_t(1) << bits_, Slot{});
  for (const Slot& slot : old) {
    if (slot.tensor == nullptr) continue;
    size_t i = home(slot.tensor);
    while (slots_[i].tensor != nullptr) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = slot;
  }
}

// Depth-first with an explicit stack of (tensor, next input to visit).
GraphOrder topological_order(const Tensor& root) {
  // Room for a small graph from the start, rather than growing 1, 2, 4, 8 …
  // (16 handles or frames fit in the pool's blocks of at most 512 bytes).
  constexpr size_t kSmallGraph = 16;
  GraphOrder graph;
  graph.order.reserve(kSmallGraph);
  struct Frame {
    std::shared_ptr<TensorImpl> impl;
    size_t next_input;
  };
  PassList<Frame> stack;
  stack.reserve(kSmallGraph);
  stack.push_back({root.impl_ptr(), 0});
  graph.numbers.insert(root.impl_ptr().get());
  while (!stack.empty()) {
    Frame& frame = stack.back();
    const AutogradMeta* meta = autograd_meta(*frame.impl);
    const Node* node = meta != nullptr ? meta->grad_fn.get() : nullptr;
    if (node != nullptr && frame.next_input < node->inputs.size()) {
      const Tensor& input = node->inputs[frame.next_input++];
      if (!input.defined() || !requires_grad(input)) continue;
      if (graph.numbers.insert(input.impl_ptr().get())) {
        stack.push_back({input.impl_ptr(), 0});  // invalidates `frame`; loop re-reads it
      }
      continue;
    }
    graph.order.push_back(std::move(frame.impl));
    stack.pop_back();
  }
  return graph;
}

}  // namespace attograd::detail
