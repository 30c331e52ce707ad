// nn/gradient_penalty.cpp — P = (1/B) Σ_b ‖∇_{x_b} f(x)_b‖² (see the header).
#include "nn/gradient_penalty.hpp"

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "tensor/error.hpp"

namespace attograd::nn {

Tensor gradient_penalty(const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  check(x.defined() && x.dim() == 2, "gradient_penalty: x must be (B,D), got {}",
        x.defined() ? x.shape() : Shape{});
  check(grad_enabled(),
        "gradient_penalty: recording is off (inside a NoGradGuard?); the penalty needs the "
        "graph of f to differentiate it");
  const Tensor input = requires_grad(x) ? x : requires_grad_(detach(x));
  const Tensor output = f(input);  // (B) or (B,1)
  const int64_t batch = x.size(0);
  check(output.defined() && output.numel() == batch && output.size(0) == batch,
        "gradient_penalty: f must give one value per sample, (B) or (B,1) with B = {}; got {}",
        batch, output.defined() ? output.shape() : Shape{});
  // ∂(Σ_b f(x)_b)/∂x: row b is ∇_{x_b} f(x)_b. create_graph keeps its graph.
  const Tensor dx = autograd::grad({sum(output)}, {input}, {}, {.create_graph = true})[0];  // (B,D)
  return mean(sum(dx * dx, {1}));
}

}  // namespace attograd::nn
