// autograd/engine.cpp — recording ops, the leaves' gradients, and backward().
//
// The graph's order lives in autograd/graph_order.cpp and a node's lifetime in
// autograd/node.cpp; this file is what happens to the gradients.
#include "autograd/engine.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <span>
#include <string>

#include "autograd/graph_order.hpp"
#include "autograd/inspect/hooks.hpp"  // DetectAnomaly, Profiler, GraphCapture
#include "autograd/ops.hpp"
#include "tensor/factory.hpp"

namespace attograd {

// ---- Recording -------------------------------------------------------------

namespace {
thread_local bool grad_mode = true;
thread_local const Node* running_node = nullptr;  // whose closure runs now (backward_inputs)
}  // namespace

bool grad_enabled() { return grad_mode; }

NoGradGuard::NoGradGuard() : previous_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = previous_; }

GradModeGuard::GradModeGuard(bool enabled) : previous_(grad_mode) { grad_mode = enabled; }
GradModeGuard::~GradModeGuard() { grad_mode = previous_; }

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

const Node::Inputs& backward_inputs() {
  check(running_node != nullptr,
        "backward_inputs: called outside a backward closure; only a closure the engine runs has "
        "a node whose inputs it can read");
  return running_node->inputs;
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

// The gradient `root` starts with: grad_output, or 1 for a one-element root.
// `who` names the caller and `which` the output in messages.
Tensor backward_seed(const char* who, const std::string& which, const Tensor& root,
                     const Tensor& grad_output, bool create_graph) {
  check(root.defined(), "{}: {} is an undefined tensor (default-constructed Tensor)", who, which);
  check(requires_grad(root),
        "{}: {} does not require grad — none of its inputs had requires_grad_(...) set, or it "
        "was computed under NoGradGuard",
        who, which);
  if (!grad_output.defined()) {
    check(root.numel() == 1,
          "{}: {} has shape {}; without an output gradient it must be a one-element tensor "
          "(reduce it first, e.g. sum), or pass a gradient of shape {}",
          who, which, root.shape(), root.shape());
    return ones(root.shape());
  }
  check(grad_output.shape() == root.shape(),
        "{}: the gradient given for {} has shape {} but {} has shape {}; they must match", who,
        which, grad_output.shape(), which, root.shape());
  // The caller's tensor is never written. Recorded, it is used as it is: its
  // own history (it may depend on parameters) is part of the new graph.
  return create_graph ? grad_output : grad_output.clone_data();
}

// Runs one node's closure with its output's gradient and adds what it returns
// into its inputs' pending sums.
void run_node(Node& node, const Tensor& gradient, const detail::GraphOrder& graph,
              ObjectVector<Gradient>& pending) {
  check(!node.released,
        "backward: the graph behind '{}' was already freed by an earlier backward(); pass "
        "retain_graph=true to that first call to backpropagate through it twice",
        node.name);
  struct Running {                     // what backward_inputs() reads while the closure runs
    const Node* outer = running_node;  // a closure may run a backward of its own
    explicit Running(const Node& node) { running_node = &node; }
    ~Running() { running_node = outer; }
  } running(node);
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

// Which tensors of the graph lead to one of `wanted` (are wanted, or have one
// below them), by number: only their closures need to run for autograd::grad.
std::vector<bool> leading_to(const detail::GraphOrder& graph, std::span<const Tensor> wanted) {
  std::vector<bool> leads(graph.numbers.size(), false);
  for (const Tensor& t : wanted) {
    const size_t number = graph.numbers.find(t.impl_ptr().get());
    if (number != graph.numbers.npos) leads[number] = true;
  }
  for (const auto& impl : graph.order) {  // inputs come before the tensors made from them
    const size_t number = graph.numbers.find(impl.get());
    const AutogradMeta& meta = *autograd_meta(*impl);
    if (leads[number] || !meta.grad_fn) continue;
    check(!meta.grad_fn->released,
          "autograd::grad: the graph behind '{}' was already freed by an earlier backward; pass "
          "retain_graph=true (or create_graph=true) to that first call to go through it again",
          meta.grad_fn->name);
    for (const Tensor& input : meta.grad_fn->inputs) {
      if (input.defined() && requires_grad(input) &&
          leads[graph.numbers.find(input.impl_ptr().get())]) {
        leads[number] = true;
        break;
      }
    }
  }
  return leads;
}

// One backward pass, for backward() and autograd::grad. Gradients flow from
// `roots`, which start with `seeds`. With `wanted` empty (backward()), each
// leaf adds what reaches it into its .grad. Otherwise (autograd::grad) no
// .grad changes: only the closures on a path to a wanted tensor run, and
// the pass returns the gradient that reached each wanted tensor (undefined
// for one no root depends on; zeros for one reached only by zeros).
std::vector<Gradient> run_backward(std::span<const Tensor> roots, std::span<const Tensor> seeds,
                                   bool retain_graph, bool create_graph,
                                   std::span<const Tensor> wanted) {
  const detail::InspectedPass inspected(roots.front());  // does nothing unless a tool is on
  // The closures' own arithmetic is recorded only when a graph is wanted.
  const GradModeGuard recording(create_graph);
  const detail::GraphOrder graph = detail::topological_order(roots);
  const bool returning = !wanted.empty();
  const std::vector<bool> leads = returning ? leading_to(graph, wanted) : std::vector<bool>();
  std::vector<bool> is_wanted(returning ? graph.numbers.size() : 0, false);
  for (const Tensor& t : wanted) {
    const size_t number = graph.numbers.find(t.impl_ptr().get());
    if (number != graph.numbers.npos) is_wanted[number] = true;
  }
  // pending[numbers.find(t)]: the sum of the gradients that reached tensor t so far.
  ObjectVector<Gradient> pending(graph.numbers.size());
  for (size_t r = 0; r < roots.size(); ++r) {
    pending[graph.numbers.find(roots[r].impl_ptr().get())] += Gradient(seeds[r]);
  }

  // Reverse post-order: each tensor is processed after everything that uses it.
  for (auto it = graph.order.rbegin(); it != graph.order.rend(); ++it) {
    TensorImpl& impl = **it;
    AutogradMeta& meta = *autograd_meta(impl);
    const size_t number = graph.numbers.find(&impl);
    Gradient& slot = pending[number];
    if (!slot.defined()) continue;  // no gradient reached it
    if (returning) {
      // autograd::grad: a wanted tensor keeps its sum in its slot for the
      // caller; what leads to no wanted tensor is not run.
      if (!leads[number]) continue;
      slot.form();
      if (!meta.grad_fn) continue;
    } else if (!meta.grad_fn) {  // a leaf: this is where gradients are kept
      accumulate_grad(meta, std::move(slot));
      continue;
    }
    slot.form();
    const Tensor gradient = slot.dense();  // any layout; closures must not assume contiguity
    if (!returning || !is_wanted[number]) slot = Gradient();
    if (!returning && meta.retains_grad) accumulate_grad(meta, gradient);
    Node& node = *meta.grad_fn;
    run_node(node, gradient, graph, pending);
    if (!retain_graph && !create_graph) {
      node.backward = nullptr;  // frees the saved tensors
      node.inputs.clear();
      node.released = true;
    }
  }

  std::vector<Gradient> reached;
  for (const Tensor& t : wanted) {
    const size_t number = graph.numbers.find(t.impl_ptr().get());
    if (number == graph.numbers.npos) {
      reached.emplace_back();  // no root depends on t
    } else if (!pending[number].defined()) {
      reached.emplace_back(zeros(t.shape()));  // in the graph, but every path gave it zero
    } else {
      reached.push_back(pending[number]);
    }
  }
  return reached;
}

}  // namespace

void backward(const Tensor& root, const Tensor& grad_output, const BackwardOptions& options) {
  const Tensor seed =
      backward_seed("backward", "the output", root, grad_output, options.create_graph);
  run_backward({&root, 1}, {&seed, 1}, options.retain_graph, options.create_graph, {});
}

namespace autograd {

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, const GradOptions& options) {
  const auto [retain_graph, create_graph, allow_unused] = options;
  check(!outputs.empty(), "autograd::grad: no outputs given; pass the tensors to differentiate");
  check(!inputs.empty(),
        "autograd::grad: no inputs given; pass the tensors to differentiate with respect to");
  check(grad_outputs.empty() || grad_outputs.size() == outputs.size(),
        "autograd::grad: {} grad_outputs for {} outputs; give one per output (an undefined "
        "Tensor for a one-element output), or none",
        grad_outputs.size(), outputs.size());
  std::vector<Tensor> seeds;
  for (size_t i = 0; i < outputs.size(); ++i) {
    seeds.push_back(backward_seed("autograd::grad", fmt::format("output {}", i), outputs[i],
                                  grad_outputs.empty() ? Tensor() : grad_outputs[i], create_graph));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    check(inputs[i].defined() && requires_grad(inputs[i]),
          "autograd::grad: input {} {}; gradients are taken with respect to tensors that "
          "require grad (requires_grad_(...) on a leaf, or a result computed from one)",
          i, inputs[i].defined() ? "does not require grad" : "is an undefined tensor");
  }
  std::vector<Gradient> reached = run_backward(outputs, seeds, retain_graph, create_graph, inputs);
  std::vector<Tensor> gradients;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Gradient& g = reached[i];
    if (!g.defined()) {
      check(allow_unused,
            "autograd::grad: input {} (shape {}) is not used by the outputs' graph, so it has "
            "no gradient; pass allow_unused=true to get an undefined Tensor for it",
            i, inputs[i].shape());
      gradients.emplace_back();
      continue;
    }
    g.form();
    gradients.push_back(g.dense());
  }
  return gradients;
}

}  // namespace autograd

}  // namespace attograd
