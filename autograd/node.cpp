// autograd/node.cpp — how a graph dies without overflowing the stack.
//
// A long chain (an unrolled RNN, a 100,000-step test) is a linked list
// tensor → node → tensor → node …; destroying it naively recurses once per
// link and overflows the stack. A node owns the rest of the graph through two
// members: its inputs and its backward closure (which may hold the very same
// input handles, as mul's does). So the outermost dying node becomes a
// collector: any node destroyed while it runs hands both members over and
// returns at once, and the collector releases them one at a time in a loop.
#include "autograd/node.hpp"

#include <array>
#include <vector>

namespace attograd {

namespace {

// A stack whose first N entries live inside it: a dying graph of one node or
// a few (an op recorded and dropped without backward(), in evaluation with
// recording on) hands over its inputs and closure without a heap allocation;
// a long chain spills the rest into the vector.
template <typename T, size_t N>
class SmallStack {
 public:
  bool empty() const { return size_ == 0 && spilled_.empty(); }
  void push(T value) {
    if (size_ < N) {
      inline_[size_++] = std::move(value);
    } else {
      spilled_.push_back(std::move(value));
    }
  }
  // The newest entry, moved out (the caller's copy releases it).
  T pop() {
    if (!spilled_.empty()) {
      T value = std::move(spilled_.back());
      spilled_.pop_back();
      return value;
    }
    return std::move(inline_[--size_]);
  }

 private:
  std::array<T, N> inline_;
  size_t size_ = 0;
  std::vector<T> spilled_;
};

struct GraphLeftovers {
  SmallStack<Tensor, 8> tensors;
  SmallStack<Node::BackwardFn, 4> closures;
};
thread_local GraphLeftovers* leftovers = nullptr;  // the collector's list, if one is running

}  // namespace

Node::~Node() {
  const bool collector = leftovers == nullptr;
  if (collector && inputs.empty() && !backward)
    return;  // released by backward(): nothing to hand over
  GraphLeftovers local;
  if (collector) leftovers = &local;
  for (Tensor& input : inputs) leftovers->tensors.push(std::move(input));
  inputs.clear();
  if (backward) leftovers->closures.push(std::move(backward));
  backward = nullptr;
  if (!collector) return;
  // Releasing one item may destroy further nodes, which push onto `local`.
  while (!local.tensors.empty() || !local.closures.empty()) {
    if (!local.closures.empty()) {
      const Node::BackwardFn closure = local.closures.pop();
    } else {
      const Tensor tensor = local.tensors.pop();
    }
  }
  leftovers = nullptr;
}

}  // namespace attograd
