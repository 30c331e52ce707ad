// autograd/ops_gru.hpp — GRU steps that share their weights over a sequence.
//
// A sentence runs the same GRU cell at every time step, so each weight's
// gradient is a sum over the steps of outer products, dW_hh = Σ_t dgh_tᵀ h_t−1.
// Formed step by step (ops.hpp's gru_cell), every step writes a fresh
// (3H,in) matrix and the engine adds it into the running sum: T passes over
// the largest matrices of a translator for a rank-1 update each. Here the
// steps instead hand their factors (dgh_t, h_t−1) to the sequence's weights,
// and the weights' own node forms each gradient once, as one product
// (T,3H)ᵀ @ (T,in): the same sum, in one pass.
//
//   GruWeights weights = gru_weights(W_ih, W_hh, b_ih, b_hh);  // once per sequence
//   h = gru_cell(x_t, h, weights);                             // every step
//
// How: gru_weights records a node whose output is a one-element token; every
// step lists the token among its inputs and returns 0 as its gradient, so the
// engine runs the token's node after all the steps (it runs a node after
// everything that uses its output), when the factors are complete.
#pragma once

#include <memory>
#include <vector>

#include "autograd/ops_linear.hpp"
#include "tensor/tensor.hpp"

namespace attograd {

// The factors the steps of one sequence hand over (autograd/ops_linear.hpp).
struct GruGradientFactors {
  WeightGradientRows ih;  // rows of dgi (3H) and of x (in): dW_ih = dgiᵀ @ x
  WeightGradientRows hh;  // rows of dgh (3H) and of h (H):  dW_hh = dghᵀ @ h
};

struct GruWeights {
  Tensor weight_ih, weight_hh;  // (3H,in), (3H,H)
  Tensor bias_ih, bias_hh;      // (3H) each, or undefined for none
  // While recording (and a weight requires grad): the token, and where the
  // steps put their factors. Undefined/null otherwise, and gru_cell then
  // takes the plain per-step path.
  Tensor token;
  std::shared_ptr<GruGradientFactors> factors;
};

// The weights of one GRU layer, prepared for one sequence of steps.
GruWeights gru_weights(const Tensor& weight_ih, const Tensor& weight_hh, const Tensor& bias_ih,
                       const Tensor& bias_hh);

// The same step as gru_cell(x, h, W_ih, W_hh, b_ih, b_hh), the same values and
// gradients up to float rounding; the weight gradients go through `weights`.
// x: (B,in), h: (B,H) -> h': (B,H)
Tensor gru_cell(const Tensor& x, const Tensor& h, const GruWeights& weights);

// The same step when the input's projection for the whole sequence was made
// beforehand as one product, gi = X W_ihᵀ + b_ih (T·B,3H), and this step gets
// its rows: gi (B,3H), h (B,H) -> h' (B,H). Reading W_ih once per sequence
// rather than once per step is what nn::GRU::forward does with it; W_hh's
// gradient still goes through `weights`.
Tensor gru_cell_projected(const Tensor& gi, const Tensor& h, const GruWeights& weights);

}  // namespace attograd
