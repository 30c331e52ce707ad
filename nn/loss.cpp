// nn/loss.cpp — the losses, composed from ops except for two written as
// their own ops below: the squared errors of mse_loss, and picking the
// target's log-probability.
#include "nn/loss.hpp"

#include <memory>

#include "autograd/ops.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"

namespace attograd::nn {

namespace {

Tensor reduce(const Tensor& losses, Reduction reduction) {
  switch (reduction) {
    case Reduction::none:
      return losses;
    case Reduction::sum:
      return sum(losses);
    case Reduction::mean:
      return mean(losses);
  }
  fail("loss: unknown Reduction value {}", static_cast<int>(reduction));
}

// ℓ = reduce((x − t)²)     dx = c · dℓ ⊙ (x − t),   dt = −dx
// (c = 2, or 2/n for the mean; dℓ is one number when reduced)
//
// One op rather than sub, square and the reduction: the difference is made
// once and kept for the backward, and a small loss (the kernel-regression
// example's 50 numbers) costs one graph node instead of two or three.
Tensor squared_errors(const Tensor& input, const Tensor& target, Reduction reduction) {
  Tensor difference, loss;
  {
    NoGradGuard values_only;
    difference = input - target;
    loss = reduce(difference * difference, reduction);
  }
  const double scale =
      reduction == Reduction::mean ? 2.0 / static_cast<double>(input.numel()) : 2.0;
  return record("mse_loss", loss, {input, target},
                [difference, scale, input_grad = input.requires_grad(),
                 target_grad = target.requires_grad()](const Tensor& dloss) {
                  const Tensor dinput = difference * (dloss * static_cast<real>(scale));
                  return std::vector<Tensor>{input_grad ? dinput : Tensor(),
                                             target_grad ? -dinput : Tensor()};
                });
}

// ℓ_i = −log_probs[i, y_i], and 0 where y_i = ignore_index
// dlog_probs[i, y_i] = −dℓ_i; every other entry (and every ignored row) gets 0
//
// One op rather than gather-then-mask: an ignored row is never read, so even a
// NaN there cannot leak into the loss (0 · NaN would be NaN), and nothing is
// ever gathered at a meaningless index.
Tensor negative_target_log_probs(const char* op, const Tensor& log_probs,
                                 const std::vector<int64_t>& targets, int64_t ignore_index) {
  check(log_probs.defined(), "{}: the input is undefined", op);
  check(log_probs.dim() == 2,
        "{}: input of shape {} must be (N,C): one row of class scores per sample", op,
        log_probs.shape());
  const int64_t N = log_probs.shape()[0], C = log_probs.shape()[1];
  check(static_cast<int64_t>(targets.size()) == N,
        "{}: {} targets for an input of shape {}; there must be one per row (N = {})", op,
        targets.size(), log_probs.shape(), N);
  for (int64_t i = 0; i < N; ++i) {
    const int64_t y = targets[i];
    check(y == ignore_index || (0 <= y && y < C),
          "{}: target {} (sample {}) is out of range for {} classes (valid: 0..{}, or "
          "ignore_index = {})",
          op, y, i, C, C - 1, ignore_index);
  }
  auto picked = std::make_shared<std::vector<int64_t>>(N, -1);  // column, or −1 if ignored
  for (int64_t i = 0; i < N; ++i) {
    if (targets[i] != ignore_index) (*picked)[i] = targets[i];
  }
  const Tensor values = log_probs.contiguous_data();
  Tensor losses = zeros({N});
  for (int64_t i = 0; i < N; ++i) {
    if ((*picked)[i] >= 0) losses.data()[i] = -values.data()[i * C + (*picked)[i]];
  }
  return record(op, losses, {log_probs}, [picked, N, C](const Tensor& dlosses_in) {
    const Tensor dlosses = dlosses_in.contiguous_data();
    Tensor dlog_probs = zeros({N, C});
    for (int64_t i = 0; i < N; ++i) {
      if ((*picked)[i] >= 0) dlog_probs.data()[i * C + (*picked)[i]] = -dlosses.data()[i];
    }
    return std::vector<Tensor>{dlog_probs};
  });
}

Tensor reduce_over_targets(const Tensor& losses, const std::vector<int64_t>& targets,
                           Reduction reduction, int64_t ignore_index) {
  if (reduction != Reduction::mean) return reduce(losses, reduction);
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
  const Tensor losses = negative_target_log_probs("nll_loss", log_probs, targets, ignore_index);
  return reduce_over_targets(losses, targets, reduction, ignore_index);
}

// logits: (N,C) -> () or (N);  ℓ_i = −log_softmax(logits)[i, y_i]
Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& targets, Reduction reduction,
                     int64_t ignore_index) {
  check(logits.defined(), "cross_entropy: the logits are undefined");
  check(logits.dim() == 2, "cross_entropy: logits of shape {} must be (N,C)", logits.shape());
  const Tensor losses =
      negative_target_log_probs("cross_entropy", log_softmax(logits, 1), targets, ignore_index);
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
  const Tensor per_token = negative_target_log_probs(
      "sequence_cross_entropy", log_softmax(reshape(logits, {B * T, V}), 1), masked,
      padding);                                  // (B·T)
  return mean(reshape(per_token, {B, T}), {1});  // d2l: .mean(dim=1), padding included
}

}  // namespace attograd::nn
