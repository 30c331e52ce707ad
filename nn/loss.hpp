// nn/loss.hpp — loss functions: tensors in, a differentiable loss out.
//
// Legend: N samples, C classes, B sequences, T time steps, V vocabulary.
// Targets that are class ids come as std::vector<int64_t>, like token ids.
//
//   mse_loss        ℓ_i = (input_i − target_i)²
//   nll_loss        ℓ_i = −log_probs[i, y_i]
//   cross_entropy   ℓ_i = −log softmax(logits_i)[y_i] = log Σ_c e^{z_ic} − z_{i,y_i}
//   sequence_cross_entropy   d2l's MaskedSoftmaxCELoss, one value per sequence
//
// `Reduction` says what to do with the per-element ℓ: keep them (none), add
// them up (sum), or average them (mean, the default). For nll_loss and
// cross_entropy the mean is over the targets that are not ignore_index, as
// in PyTorch (so with every target ignored it is 0/0 = NaN, as in PyTorch).
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/ops.hpp"
#include "tensor/tensor.hpp"

namespace attograd::nn {

// none, mean or sum (autograd/ops.hpp, where the loss ops live).
using attograd::Reduction;

// input, target: the same shape (*) -> () for mean/sum, (*) for none.
// Shapes must match exactly (no broadcasting, which would silently average
// the wrong pairs); target may require grad too.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);

// log_probs: (N,C), targets: N ids in [0, C) or ignore_index -> () or (N).
// With Reduction::none an ignored target's loss is 0.
Tensor nll_loss(const Tensor& log_probs, const std::vector<int64_t>& targets,
                Reduction reduction = Reduction::mean, int64_t ignore_index = -100);

// logits: (N,C), targets: N ids -> () or (N). Equal to
// nll_loss(log_softmax(logits, 1), …); log_softmax subtracts the row maximum
// before exponentiating, so logits of 1000 are fine.
Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets,
                     Reduction reduction = Reduction::mean, int64_t ignore_index = -100);

// logits: (B,T,V), targets: B·T ids row-major (targets[b·T + t]), valid_lens: B
// lengths in [0, T] -> (B).
//
//   loss_b = (1/T) Σ_{t < valid_lens[b]} −log softmax(logits[b,t])[targets[b·T+t]]
//
// Positions t ≥ valid_lens[b] are padding: they contribute exactly 0 (their
// targets are not even range-checked, and their logits get a zero gradient).
// As in d2l's MaskedSoftmaxCELoss the division is by T, padding included,
// not by the valid length; the caller sums or averages over the batch, e.g.
// d2l's training loop backpropagates sum(loss).
Tensor sequence_cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets,
                              const std::vector<int64_t>& valid_lens);

}  // namespace attograd::nn
