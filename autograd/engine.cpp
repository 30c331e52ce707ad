// autograd/engine.cpp — recording ops, the leaves' gradients, and backward().
//
// The graph's order lives in autograd/graph_order.cpp and a node's lifetime in
// autograd/node.cpp; this file is what happens to the gradients.
#include "autograd/engine.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "autograd/graph_order.hpp"
#include "autograd/inspect/hooks.hpp"  // DetectAnomaly, Profiler, DotCapture
#include "autograd/ops.hpp"
#include "tensor/factory.hpp"

namespace attograd {

// ---- Recording -------------------------------------------------------------

namespace {
thread_local bool grad_mode = true;
}  // namespace

bool grad_enabled() { return grad_mode; }

NoGradGuard::NoGradGuard() : previous_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = previous_; }

namespace {

bool any_requires_grad(const Tensor* first, const Tensor* last) {
  return grad_mode &&
         std::any_of(first, last, [](const Tensor& t) { return t.defined() && requires_grad(t); });
}

}  // namespace

bool should_record(std::initializer_list<Tensor> inputs) {
  return any_requires_grad(inputs.begin(), inputs.end());
}

bool should_record(const std::vector<Tensor>& inputs) {
  return any_requires_grad(inputs.data(), inputs.data() + inputs.size());
}

Tensor record(const char* name, Tensor output, std::vector<Tensor> inputs,
              Node::BackwardFn backward) {
  if (!should_record(inputs)) return output;
  return attach_node(
      name, std::move(output),
      Node::Inputs(std::make_move_iterator(inputs.begin()), std::make_move_iterator(inputs.end())),
      std::move(backward));
}

AutogradMeta& attach_autograd_meta(const Tensor& t) {
  TensorImpl& impl = t.impl();
  if (!impl.attachment) impl.attachment = make_object<AutogradMeta>();
  return *autograd_meta(impl);
}

Tensor attach_node(const char* name, Tensor output, Node::Inputs inputs,
                   Node::BackwardFn backward) {
  auto node = make_object<Node>();
  node->name = name;
  node->inputs = std::move(inputs);
  node->backward = std::move(backward);
  AutogradMeta& meta = attach_autograd_meta(output);
  meta.requires_grad = true;
  meta.grad_fn = std::move(node);
  if (detail::inspecting()) detail::on_record(*meta.grad_fn, output);
  return output;
}

// ---- Leaves and gradients ---------------------------------------------------

Tensor requires_grad_(Tensor t, bool enabled) {
  check(is_leaf(t) || enabled,
        "requires_grad_: only leaf tensors can stop requiring grad; use detach() on a result");
  if (!enabled && autograd_meta(t) == nullptr) return t;
  attach_autograd_meta(t).requires_grad = enabled;
  return t;
}

namespace {

// Adds `gradient` into a tensor's own .grad: the first is copied (the leaf
// keeps a tensor of its own, which an optimizer may write), later ones are
// added in place.
void accumulate_grad(AutogradMeta& meta, Gradient gradient) {
  meta.grad += std::move(gradient);
  meta.grad.own();
}

}  // namespace

Tensor grad(const Tensor& t) {
  AutogradMeta* meta = autograd_meta(t);
  if (meta == nullptr) return Tensor();
  meta->grad.form();  // a part kept unformed is formed on request, then kept like any other
  meta->grad.own();
  return meta->grad.dense();
}

void zero_grad(const Tensor& t) {
  if (AutogradMeta* meta = autograd_meta(t)) meta->grad = Gradient();
}

void add_to_grad(const Tensor& t, const Tensor& gradient) {
  check(requires_grad(t),
        "add_to_grad: the tensor does not require grad, so it has no gradient to add to; call "
        "requires_grad_ on it first");
  check(gradient.shape() == t.shape(),
        "add_to_grad: the gradient's shape {} is not the tensor's {}; give one gradient entry "
        "per entry of the tensor",
        gradient.shape(), t.shape());
  accumulate_grad(*autograd_meta(t), gradient);
}

void retain_grad(const Tensor& t) {
  check(requires_grad(t),
        "retain_grad: the tensor does not require grad, so it will never have a gradient");
  autograd_meta(t)->retains_grad = true;
}

Tensor detach(const Tensor& t) { return t.as_strided(t.shape(), t.strides(), t.offset()); }

Tensor saved_output(const Tensor& y) { return grad_enabled() ? detach(y) : Tensor(); }

namespace {

// Can a gradient of shape `from` be summed down to `to`? Only if `to`
// broadcasts to `from`: no more axes, and each trailing axis equal or 1 in `to`.
bool reducible(const Shape& from, const Shape& to) {
  const int64_t leading = from.ndim() - to.ndim();
  if (leading < 0) return false;
  for (int64_t axis = 0; axis < to.ndim(); ++axis) {
    if (to[axis] != 1 && to[axis] != from[axis + leading]) return false;
  }
  return true;
}

}  // namespace

Tensor sum_to(const Tensor& gradient, const Shape& shape) {
  if (gradient.shape() == shape) return gradient;
  check(reducible(gradient.shape(), shape),
        "sum_to: gradient of shape {} cannot be reduced to {} ({} does not broadcast to {})",
        gradient.shape(), shape, shape, gradient.shape());
  const int64_t leading = gradient.dim() - shape.ndim();
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

Tensor backward_seed(const Tensor& root, const Tensor& grad_output) {
  check(requires_grad(root),
        "backward: this tensor does not require grad — none of its inputs had "
        "requires_grad_(...) set, or it was computed under NoGradGuard");
  if (!grad_output.defined()) {
    check(root.numel() == 1,
          "backward: output has shape {}; without an output gradient backward() needs a "
          "one-element tensor (reduce it first, e.g. sum), or pass grad_output of shape {}",
          root.shape(), root.shape());
    return ones(root.shape());
  }
  check(grad_output.shape() == root.shape(),
        "backward: grad_output has shape {} but the output has shape {}; they must match",
        grad_output.shape(), root.shape());
  return grad_output.clone_data();  // the caller's tensor is never written
}

// Runs one node's closure with its output's gradient and adds what it returns
// into its inputs' pending sums.
void run_node(Node& node, const Tensor& gradient, const detail::GraphOrder& graph,
              ObjectVector<Gradient>& pending) {
  check(!node.released,
        "backward: the graph behind '{}' was already freed by an earlier backward(); pass "
        "retain_graph=true to that first call to backpropagate through it twice",
        node.name);
  const Gradients input_grads = detail::inspecting() ? detail::inspected_call(node, gradient, graph)
                                                     : node.backward(gradient);
  check(input_grads.size() == node.inputs.size(),
        "backward: op '{}' returned {} gradients for {} inputs (a bug in the op)", node.name,
        input_grads.size(), node.inputs.size());
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Tensor& input = node.inputs[i];
    const Gradient& g = input_grads[i];
    if (!input.defined() || !requires_grad(input) || !g.defined()) continue;
    Gradient& slot = pending[graph.numbers.find(input.impl_ptr().get())];
    if (g.dense().defined()) {
      check(reducible(g.dense().shape(), input.shape()),
            "backward: op '{}' returned a gradient of shape {} for its input {} of shape {} (a "
            "bug in the op: the gradient must have the input's shape or broadcast from it)",
            node.name, g.dense().shape(), i, input.shape());
      slot += sum_to(g.dense(), input.shape());
    } else {
      check(g.shape() == input.shape(),
            "backward: op '{}' returned an unformed gradient of shape {} for its input {} of "
            "shape {} (a bug in the op: an unformed gradient has the input's exact shape)",
            node.name, g.shape(), i, input.shape());
      slot += g;
    }
  }
}

}  // namespace

void backward(const Tensor& root, const Tensor& grad_output, bool retain_graph) {
  const Tensor seed = backward_seed(root, grad_output);
  const detail::InspectedPass inspected(root);  // does nothing unless a tool is on
  NoGradGuard no_grad;                          // the closures' own arithmetic is not recorded
  const detail::GraphOrder graph = detail::topological_order(root);
  // pending[numbers.find(t)]: the sum of the gradients that reached tensor t so far.
  ObjectVector<Gradient> pending(graph.numbers.size());
  pending[graph.numbers.find(root.impl_ptr().get())] = Gradient(seed);

  // Reverse post-order: each tensor is processed after everything that uses it.
  for (auto it = graph.order.rbegin(); it != graph.order.rend(); ++it) {
    TensorImpl& impl = **it;
    AutogradMeta& meta = *autograd_meta(impl);
    Gradient& slot = pending[graph.numbers.find(&impl)];
    if (!slot.defined()) continue;  // no gradient reached it
    if (!meta.grad_fn) {            // a leaf: this is where gradients are kept
      accumulate_grad(meta, std::move(slot));
      continue;
    }
    slot.form();
    const Tensor gradient = slot.dense();  // any layout; closures must not assume contiguity
    slot = Gradient();
    if (meta.retains_grad) accumulate_grad(meta, gradient);
    Node& node = *meta.grad_fn;
    run_node(node, gradient, graph, pending);
    if (!retain_graph) {
      node.backward = nullptr;  // frees the saved tensors
      node.inputs.clear();
      node.released = true;
    }
  }
}

}  // namespace attograd
