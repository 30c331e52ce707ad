// nn/gradient_penalty.hpp — a loss term on the gradient of a function with
// respect to its input, which differentiates the function twice.
//
// Legend: B samples, D input features.
//
//   P = (1/B) Σ_b ‖∇_{x_b} f(x)_b‖²
//
// each sample's squared input-gradient norm, averaged: WGAN-GP's penalty
// (Gulrajani et al. 2017, there (‖∇‖ − 1)² at points between real and fake
// samples) with the target norm 0, which is Drucker & LeCun's "double
// backpropagation" (1992): a smoother f, less sensitive to its input. The
// gradient is taken with autograd::grad(…, {.create_graph = true}), so P has a
// graph through that gradient back to f's parameters and backward(loss + λP)
// differentiates f twice.
//
//   Tensor penalty = nn::gradient_penalty([&](const Tensor& x) { return mlp->forward(x); }, x);
//   backward(nn::mse_loss(mlp->forward(x), y) + 0.1 * penalty);
#pragma once

#include <functional>

#include "tensor/tensor.hpp"

namespace attograd::nn {

// f: (B,D) -> (B) or (B,1), each output from its own row of x (as an MLP
// applied row by row is), so the gradient of Σ_b f(x)_b with respect to x
// has ∇_{x_b} f(x)_b as its row b.  x: (B,D) -> ().
// When x requires grad, P's gradient reaches x too; otherwise f is applied to
// a leaf of x's values that requires grad (x's own history is not needed).
Tensor gradient_penalty(const std::function<Tensor(const Tensor&)>& f, const Tensor& x);

}  // namespace attograd::nn
