// autograd/op_helpers.cpp — the way out of a fused kernel under create_graph.
#include "autograd/op_helpers.hpp"

namespace attograd {

namespace {

// The same values as x, one recorded step away from it (its gradient is dy).
// A fresh tensor that nothing else in any graph uses.
Tensor alias(const Tensor& x) {
  return attach_node("alias", detach(x), {x},
                     Node::BackwardFn([](const Tensor& dy) { return Gradients{dy}; }));
}

}  // namespace

// dx = ∂⟨composition(x), dy⟩/∂x by a nested autograd::grad, recorded. These
// are partial derivatives: the op's inputs may depend on each other (a GRU
// step's h was made with the same weights), and the op's gradient with
// respect to each holds the others fixed. So the composition runs on aliases
// of the inputs, whose own histories hold none of the aliases: the nested
// pass stops at them, and the gradients it forms still reach the inputs
// through them.
Gradients composed_gradients(const std::function<Tensor(const std::vector<Tensor>&)>& composition,
                             const std::vector<Tensor>& inputs, const Tensor& dy) {
  const GradModeGuard recording(true);
  std::vector<Tensor> stand_ins;       // the inputs the composition runs on
  std::vector<Tensor> differentiable;  // the aliases a gradient is wanted for
  for (const Tensor& t : inputs) {
    const bool wanted = t.defined() && requires_grad(t);
    stand_ins.push_back(wanted ? alias(t) : t);
    if (wanted) differentiable.push_back(stand_ins.back());
  }
  Gradients gradients(inputs.size());
  if (differentiable.empty()) return gradients;
  const Tensor y = composition(stand_ins);
  check(y.defined() && y.shape() == dy.shape(),
        "composed_gradients: the composition's output has shape {} but the gradient {}; the "
        "composition must compute the op it stands for",
        y.defined() ? y.shape().str() : std::string("(undefined)"), dy.shape());
  if (!requires_grad(y)) return gradients;
  const std::vector<Tensor> found =
      autograd::grad({y}, differentiable, {dy}, {.create_graph = true, .allow_unused = true});
  size_t next = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && requires_grad(inputs[i])) gradients[i] = found[next++];
  }
  return gradients;
}

}  // namespace attograd
