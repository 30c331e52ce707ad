// autograd/engine.hpp — recording the graph and running it backwards.
//
// Every op in autograd/ops.hpp computes its output, then calls record(…) with
// its backward closure. backward(loss) walks the recorded graph from the loss
// to the leaves in reverse topological order, calls each node's closure once
// with the sum of all gradients that reached it, and adds the results into the
// leaves' .grad. A tensor used twice therefore gets both contributions: the
// engine accumulates, it never overwrites.
//
// Gradients of gradients: with create_graph the closures run with recording
// on, so every gradient backward forms is a tensor with a graph of its own,
// which autograd::grad or backward can differentiate again (docs/autograd.md,
// "Gradients of gradients").
#pragma once

#include <initializer_list>
#include <vector>

#include "autograd/autograd_meta.hpp"
#include "autograd/node.hpp"
#include "tensor/tensor.hpp"

namespace attograd {

// ---- Recording -----------------------------------------------------------

// Is the current thread recording? (false inside a NoGradGuard)
bool grad_enabled();

// While alive, ops record nothing: for evaluation, optimizer steps, and the
// backward closures themselves (unless backward was asked to create_graph).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// While alive, recording is on or off as `enabled` says; restores the previous
// state when it ends. backward(…, create_graph) turns recording on for the
// closures; gradgradcheck turns it on inside the function it differentiates.
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled);
  ~GradModeGuard();
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

// Would an op on these inputs be recorded: is recording on, and does some
// input require grad?
bool should_record(std::initializer_list<Tensor> inputs);
bool should_record(const std::vector<Tensor>& inputs);

// Attach a Node to `output` when recording is on and some input requires grad;
// otherwise return `output` unchanged. `output` must be freshly made by the op.
Tensor record(const char* name, Tensor output, std::vector<Tensor> inputs,
              Node::BackwardFn backward);

// What record() does once it has decided to record: a Node with these
// inputs and this closure becomes output's grad_fn.
Tensor attach_node(const char* name, Tensor output, Node::Inputs inputs, Node::BackwardFn backward);

// The same for the usual call, record("mul", y, {a, b}, [a, b](…) {…}): the
// input list and the closure become a Node's Inputs and BackwardFn (two
// allocations) only when the op is recorded. Under NoGradGuard — inside every
// backward closure, in evaluation — an op then allocates nothing for its graph.
template <typename Backward>
Tensor record(const char* name, Tensor output, std::initializer_list<Tensor> inputs,
              Backward&& backward) {
  if (!should_record(inputs)) return output;
  return attach_node(name, std::move(output), Node::Inputs(inputs),
                     Node::BackwardFn(std::forward<Backward>(backward)));
}

// Inside a backward closure: the inputs of the node being run, as the op was
// given them (with their histories), in record's order. A closure that needs
// them only under create_graph reads them here rather than keeping a second
// reference to each on every step of every training.
const Node::Inputs& backward_inputs();

// ---- Leaves and gradients -------------------------------------------------

// Mark a leaf as trainable (returns it, so `auto w = requires_grad_(randn({3}))`).
Tensor requires_grad_(Tensor t, bool enabled = true);
// The accumulated gradient of t (undefined until a backward reaches it). A
// part backward() kept unformed (autograd/gradient.hpp) is formed now and
// added in, so the result is always the whole dense gradient.
Tensor grad(const Tensor& t);
// Forget t's gradient (the next backward starts from zero).
void zero_grad(const Tensor& t);
// Add `gradient` (t's shape) into t's gradient, as a backward() reaching t
// would: gradients that several graphs computed for one tensor (copies of
// a model that each took part of a batch) end up summed in one place.
void add_to_grad(const Tensor& t, const Tensor& gradient);
// Keep the gradient of a non-leaf tensor after backward (like torch's retain_grad).
void retain_grad(const Tensor& t);
// Same values, same storage, no history: gradients stop here.
Tensor detach(const Tensor& t);
// What an op's backward closure keeps of the op's own output y: detach(y),
// y's numbers without y's node (a closure holding y itself would make the
// cycle y → node → closure → y, and the graph would never be freed). Under
// NoGradGuard no closure is kept, so no view is made and the result is an
// undefined Tensor: `[y = saved_output(y)](…) {…}` costs nothing there.
Tensor saved_output(const Tensor& y);

// ---- Backward -------------------------------------------------------------

// Backpropagate from `root`. Without grad_output, root must hold one element
// (a loss) and its gradient is 1. The graph is freed afterwards unless
// retain_graph is true; going backward through a freed graph throws.
//
// With create_graph the closures run with recording on (inside a closure,
// grad_enabled() is then true): the gradients added into the leaves have
// graphs of their own and can be differentiated again. It implies
// retain_graph (the new graph reads the old one's saved tensors).
struct BackwardOptions {
  bool retain_graph = false;  // keep the graph for another backward
  bool create_graph = false;  // record the backward itself (implies retain_graph)
};
void backward(const Tensor& root, const Tensor& grad_output = Tensor(),
              const BackwardOptions& options = {});

namespace autograd {

struct GradOptions {
  bool retain_graph = false;  // keep the graph for another backward
  bool create_graph = false;  // record the results' graphs (implies retain_graph)
  bool allow_unused = false;  // an input no output depends on gets an undefined Tensor
};

// The gradients of `outputs` with respect to `inputs`, returned (one per
// input, in order) rather than added into anyone's .grad, as
// torch::autograd::grad does. grad_outputs gives each output's gradient
// (empty: every output must hold one element, and its gradient is 1). With
// create_graph the results are recorded and can be differentiated again:
//   const Tensor g = autograd::grad({y}, {x}, {}, {.create_graph = true})[0];  // dy/dx, with a
//   graph const Tensor h = autograd::grad({g}, {x})[0];                  // d²y/dx²
// create_graph implies retain_graph, as PyTorch's default has it. An input
// that no output depends on is an error, or an undefined Tensor with
// allow_unused; one the outputs depend on only through zero gradients gets zeros.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {},
                         const GradOptions& options = {});

}  // namespace autograd

// Sum `gradient` down to `shape`, undoing NumPy broadcasting: leading axes
// that broadcasting added are summed away, and axes where `shape` has size 1
// are summed with keepdim. The single place where broadcasting is undone.
Tensor sum_to(const Tensor& gradient, const Shape& shape);

}  // namespace attograd
