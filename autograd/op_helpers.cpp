// autograd/op_helpers.cpp — the way out of a fused kernel under create_graph.
#include "autograd/op_helpers.hpp"

namespace attograd {

// dx = ∂⟨composition(x), dy⟩/∂x by a nested autograd::grad, recorded.
Gradients composed_gradients(const std::function<Tensor(const std::vector<Tensor>&)>& composition,
                             const std::vector<Tensor>& inputs, const Tensor& dy) {
  std::vector<Tensor> differentiable;  // the inputs a gradient is wanted for
  for (const Tensor& t : inputs) {
    if (t.defined() && requires_grad(t)) differentiable.push_back(t);
  }
  Gradients gradients(inputs.size());
  if (differentiable.empty()) return gradients;
  const GradModeGuard recording(true);
  const Tensor y = composition(inputs);
  check(y.defined() && y.shape() == dy.shape(),
        "composed_gradients: the composition's output has shape {} but the gradient {}; the "
        "composition must compute the op it stands for",
        y.defined() ? y.shape().str() : std::string("(undefined)"), dy.shape());
  if (!requires_grad(y)) return gradients;
  const std::vector<Tensor> found =
      autograd::grad({y}, differentiable, {dy}, /*retain_graph=*/false,
                     /*create_graph=*/true, /*allow_unused=*/true);
  size_t next = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && requires_grad(inputs[i])) gradients[i] = found[next++];
  }
  return gradients;
}

}  // namespace attograd
