// nn/loss.cpp — the losses, composed from ops: two of them are ops of their
// own in autograd/ops_loss.cpp (the squared errors of mse_loss, and picking
// the target's log-probability).
#include "nn/loss.hpp"

#include <memory>

#include "autograd/ops.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"

namespace attograd::nn {

namespace {

Tensor reduce_over_targets(const Tensor& losses, const std::vector<int64_t>& targets,
                           Reduction reduction, int64_t ignore_index) {
  if (reduction == Reduction::none) return losses;
  if (reduction == Reduction::sum) return sum(losses);
  int64_t counted = 0;
  for (int64_t y : targets) counted += y != ignore_index;
  // PyTorch's mean: over the targets that count (0/0 = NaN when none do).
  return sum(losses) / static_cast<real>(counted);
}

}  // namespace

// ℓ = (input − target)²            input, target: (*) -> () or (*)
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check(input.defined() && target.defined(), "mse_loss: input or target is undefined");
  check(input.shape() == target.shape(),
        "mse_loss: input {} and target {} must have the same shape (mse_loss does not "
        "broadcast; reshape one of them)",
        input.shape(), target.shape());
  return squared_errors(input, target, reduction);
}

// log_probs: (N,C) -> () or (N)
Tensor nll_loss(const Tensor& log_probs, const std::vector<int64_t>& targets, Reduction reduction,
                int64_t ignore_index) {
  const Tensor losses = negative_log_likelihood(log_probs, targets, ignore_index, "nll_loss");
  return reduce_over_targets(losses, targets, reduction, ignore_index);
}

// logits: (N,C) -> () or (N);  ℓ_i = −log_softmax(logits)[i, y_i]
Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets, Reduction reduction,
                     int64_t ignore_index) {
  check(logits.defined(), "cross_entropy: the logits are undefined");
  check(logits.dim() == 2, "cross_entropy: logits of shape {} must be (N,C)", logits.shape());
  const Tensor losses =
      negative_log_likelihood(log_softmax(logits, 1), targets, ignore_index, "cross_entropy");
  return reduce_over_targets(losses, targets, reduction, ignore_index);
}

// logits: (B,T,V) -> (B)
Tensor sequence_cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets,
                              const std::vector<int64_t>& valid_lens) {
  check(logits.defined(), "sequence_cross_entropy: the logits are undefined");
  check(logits.dim() == 3,
        "sequence_cross_entropy: logits of shape {} must be (B,T,V): batch, time, vocabulary",
        logits.shape());
  const int64_t B = logits.shape()[0], T = logits.shape()[1], V = logits.shape()[2];
  check(static_cast<int64_t>(targets.size()) == B * T,
        "sequence_cross_entropy: {} targets for logits {}; expected B·T = {} (row-major (B,T))",
        targets.size(), logits.shape(), B * T);
  check(static_cast<int64_t>(valid_lens.size()) == B,
        "sequence_cross_entropy: {} valid lengths for a batch of B = {}", valid_lens.size(), B);
  // Padding positions become "ignored" targets: they add exactly 0, and their
  // ids need not be valid. Any id outside [0, V) can mark them.
  constexpr int64_t padding = -1;
  std::vector<int64_t> masked(targets);
  for (int64_t b = 0; b < B; ++b) {
    check(0 <= valid_lens[b] && valid_lens[b] <= T,
          "sequence_cross_entropy: valid length {} of sequence {} is outside [0, T = {}]",
          valid_lens[b], b, T);
    for (int64_t t = 0; t < T; ++t) {
      const int64_t y = targets[b * T + t];
      if (t >= valid_lens[b]) {
        masked[b * T + t] = padding;
      } else {
        check(0 <= y && y < V,
              "sequence_cross_entropy: target {} at (b={}, t={}) is out of range for a "
              "vocabulary of {} (valid: 0..{}); only padding positions (t >= valid_len) may "
              "hold any id",
              y, b, t, V, V - 1);
      }
    }
  }
  const Tensor per_token =
      negative_log_likelihood(log_softmax(reshape(logits, {B * T, V}), 1), masked, padding,
                              "sequence_cross_entropy");  // (B·T)
  return mean(reshape(per_token, {B, T}), {1});           // d2l: .mean(dim=1), padding included
}

}  // namespace attograd::nn
