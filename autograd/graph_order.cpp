// autograd/graph_order.cpp — numbering and sorting a graph without recursion.
#include "autograd/graph_order.hpp"

#include "autograd/autograd_meta.hpp"
#include "autograd/node.hpp"

namespace attograd::detail {

// Depth-first with an explicit stack of (tensor, next input to visit).
GraphOrder topological_order(std::span<const Tensor> roots) {
  // Room for a small graph from the start, rather than growing 1, 2, 4, 8 ….
  constexpr size_t kSmallGraph = 16;
  GraphOrder graph;
  graph.order.reserve(kSmallGraph);
  struct Frame {
    std::shared_ptr<TensorImpl> impl;
    size_t next_input;
  };
  ObjectVector<Frame> stack;
  stack.reserve(kSmallGraph);
  for (const Tensor& root : roots) {
    if (graph.numbers.insert(root.impl_ptr().get())) stack.push_back({root.impl_ptr(), 0});
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
  }
  return graph;
}

}  // namespace attograd::detail
