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

#include <vector>

namespace attograd {

namespace {

struct GraphLeftovers {
  std::vector<Tensor> tensors;
  std::vector<Node::BackwardFn> closures;
};
thread_local GraphLeftovers* leftovers = nullptr;  // the collector's list, if one is running

}  // namespace

Node::~Node() {
  const bool collector = leftovers == nullptr;
  GraphLeftovers local;
  if (collector) leftovers = &local;
  for (Tensor& input : inputs) leftovers->tensors.push_back(std::move(input));
  inputs.clear();
  if (backward) leftovers->closures.push_back(std::move(backward));
  backward = nullptr;
  if (!collector) return;
  // Releasing one item may destroy further nodes, which append to `local`.
  while (!local.tensors.empty() || !local.closures.empty()) {
    if (!local.closures.empty()) {
      Node::BackwardFn closure = std::move(local.closures.back());
      local.closures.pop_back();
    } else {
      Tensor tensor = std::move(local.tensors.back());
      local.tensors.pop_back();
    }
  }
  leftovers = nullptr;
}

}  // namespace attograd
