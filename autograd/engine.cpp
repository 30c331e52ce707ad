#include "autograd/engine.hpp"

#include <algorithm>
#include <unordered_map>

#include "autograd/ops.hpp"
#include "tensor/factory.hpp"
#include "tensor/kernels.hpp"

namespace attograd {

// ---- Recording -------------------------------------------------------------

namespace {
thread_local bool grad_mode = true;
}  // namespace

bool grad_enabled() { return grad_mode; }

NoGradGuard::NoGradGuard() : previous_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = previous_; }

Tensor record(const char* name, Tensor output, std::vector<Tensor> inputs,
              Node::BackwardFn backward) {
  if (!grad_mode) return output;
  const bool any = std::any_of(inputs.begin(), inputs.end(),
                               [](const Tensor& t) { return t.defined() && t.requires_grad(); });
  if (!any) return output;
  auto node = std::make_shared<Node>();
  node->name = name;
  node->inputs = std::move(inputs);
  node->backward = std::move(backward);
  output.impl().requires_grad = true;
  output.impl().grad_fn = std::move(node);
  return output;
}

// A long chain (an unrolled RNN, a 100,000-step test) is a linked list
// tensor → node → tensor → node …; destroying it naively recurses once per
// link and overflows the stack. Instead, a dying node hands the nodes only it
// kept alive to a worklist that the outermost destructor drains in a loop.
Node::~Node() {
  thread_local std::vector<std::shared_ptr<Node>>* worklist = nullptr;
  std::vector<std::shared_ptr<Node>> local;
  std::vector<std::shared_ptr<Node>>& pending = worklist ? *worklist : local;
  for (Tensor& input : inputs) {
    const auto& impl = input.impl_ptr();
    if (impl && impl.use_count() == 1 && impl->grad_fn) pending.push_back(std::move(impl->grad_fn));
  }
  inputs.clear();
  if (worklist) return;  // an outer ~Node is draining
  worklist = &local;
  while (!local.empty()) {
    std::shared_ptr<Node> next = std::move(local.back());
    local.pop_back();
    next.reset();  // its destructor appends to `local` instead of recursing
  }
  worklist = nullptr;
}

// ---- Leaves and gradients ---------------------------------------------------

Tensor requires_grad_(Tensor t, bool enabled) {
  check(t.is_leaf() || enabled,
        "requires_grad_: only leaf tensors can stop requiring grad; use detach() on a result");
  t.impl().requires_grad = enabled;
  return t;
}

Tensor grad(const Tensor& t) { return t.impl().grad ? Tensor(t.impl().grad) : Tensor(); }

void zero_grad(const Tensor& t) { t.impl().grad.reset(); }

void retain_grad(const Tensor& t) {
  check(t.requires_grad(),
        "retain_grad: the tensor does not require grad, so it will never have a gradient");
  t.impl().retains_grad = true;
}

Tensor detach(const Tensor& t) {
  return t.as_strided(t.shape(), t.strides(), t.offset());
}

Tensor sum_to(const Tensor& gradient, const Shape& shape) {
  if (gradient.shape() == shape) return gradient;
  const int64_t leading = gradient.dim() - shape.ndim();
  check(leading >= 0, "sum_to: gradient of shape {} cannot be reduced to {}", gradient.shape(),
        shape);
  std::vector<int64_t> axes;
  for (int64_t axis = 0; axis < gradient.dim(); ++axis) {
    const bool added = axis < leading;
    if (added || (shape[axis - leading] == 1 && gradient.shape()[axis] != 1)) axes.push_back(axis);
  }
  Tensor summed = axes.empty() ? gradient : sum(gradient, axes, /*keepdim=*/true);
  return reshape(summed, shape);
}

// ---- Backward -----------------------------------------------------------------

namespace {

// Adds `gradient` into the tensor slot `slot` (creating it on first use). The
// first gradient is copied so that later in-place accumulation can never write
// into a tensor some closure still reads.
void accumulate_into(std::shared_ptr<TensorImpl>& slot, const Tensor& gradient) {
  if (!slot) {
    slot = gradient.clone_data().impl_ptr();
    return;
  }
  Tensor target(slot);
  const Tensor source = gradient.contiguous_data();
  kernels::accumulate(target.data(), source.data(), target.numel());
}

// Post-order of the graph below `root` without recursion: a tensor comes after
// every input it depends on. Inputs are visited in order, so the result is the
// same on every run.
std::vector<std::shared_ptr<TensorImpl>> topological_order(const Tensor& root) {
  std::vector<std::shared_ptr<TensorImpl>> order;
  std::unordered_map<TensorImpl*, bool> seen;
  struct Frame {
    std::shared_ptr<TensorImpl> impl;
    size_t next_input;
  };
  std::vector<Frame> stack{{root.impl_ptr(), 0}};
  seen[root.impl_ptr().get()] = true;
  while (!stack.empty()) {
    Frame& frame = stack.back();
    const auto& node = frame.impl->grad_fn;
    if (node && frame.next_input < node->inputs.size()) {
      const Tensor& input = node->inputs[frame.next_input++];
      if (input.defined() && input.requires_grad() && !seen[input.impl_ptr().get()]) {
        seen[input.impl_ptr().get()] = true;
        stack.push_back({input.impl_ptr(), 0});  // invalidates `frame`; loop re-reads it
      }
      continue;
    }
    order.push_back(std::move(frame.impl));
    stack.pop_back();
  }
  return order;
}

}  // namespace

void backward(const Tensor& root, const Tensor& grad_output, bool retain_graph) {
  check(root.requires_grad(),
        "backward: this tensor does not require grad — none of its inputs had "
        "requires_grad_(...) set, or it was computed under NoGradGuard");
  Tensor seed = grad_output;
  if (!seed.defined()) {
    check(root.numel() == 1,
          "backward: output has shape {}; without an output gradient backward() needs a "
          "one-element tensor (reduce it first, e.g. sum), or pass grad_output of shape {}",
          root.shape(), root.shape());
    seed = ones(root.shape());
  }
  check(seed.shape() == root.shape(),
        "backward: grad_output has shape {} but the output has shape {}; they must match",
        seed.shape(), root.shape());

  NoGradGuard no_grad;  // the closures' own arithmetic is not recorded
  std::vector<std::shared_ptr<TensorImpl>> order = topological_order(root);
  std::unordered_map<TensorImpl*, std::shared_ptr<TensorImpl>> pending;
  pending[root.impl_ptr().get()] = seed.clone_data().impl_ptr();

  // Reverse post-order: each tensor is processed after everything that uses it.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    TensorImpl& impl = **it;
    auto found = pending.find(&impl);
    if (found == pending.end()) continue;  // no gradient reached it
    const Tensor gradient(std::move(found->second));
    pending.erase(found);

    if (!impl.grad_fn) {  // a leaf: this is where gradients are kept
      accumulate_into(impl.grad, gradient);
      continue;
    }
    if (impl.retains_grad) accumulate_into(impl.grad, gradient);
    Node& node = *impl.grad_fn;
    check(!node.released,
          "backward: the graph behind '{}' was already freed by an earlier backward(); pass "
          "retain_graph=true to that first call to backpropagate through it twice",
          node.name);
    std::vector<Tensor> input_grads = node.backward(gradient);
    check(input_grads.size() == node.inputs.size(),
          "backward: op '{}' returned {} gradients for {} inputs (a bug in the op)", node.name,
          input_grads.size(), node.inputs.size());
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const Tensor& input = node.inputs[i];
      if (!input.defined() || !input.requires_grad() || !input_grads[i].defined()) continue;
      accumulate_into(pending[input.impl_ptr().get()], sum_to(input_grads[i], input.shape()));
    }
    if (!retain_graph) {
      node.backward = nullptr;  // frees the saved tensors
      node.inputs.clear();
      node.released = true;
    }
  }
}

}  // namespace attograd
