// autograd/ops_loss.cpp — the two loss terms written as ops of their own
// (nn/loss.hpp composes the losses from them).
#include <memory>

#include "autograd/op_helpers.hpp"
#include "autograd/ops.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"

namespace attograd {

using kernels::Binary;

// ℓ = reduce((x − t)²)     dx = c · dℓ ⊙ (x − t),   dt = −dx
// (c = 2, or 2/n for the mean; dℓ is one number when reduced)
//
// One op rather than sub, square and the reduction: the difference is made
// once and kept for the backward, and a small loss (the kernel-regression
// example's 50 numbers) costs one graph node and two tensors instead of three
// nodes and five tensors.
Tensor squared_errors(const Tensor& input, const Tensor& target, Reduction reduction) {
  const Tensor difference = detail::binary_values(Binary::sub, "mse_loss", input, target);
  const int64_t n = difference.numel();
  const real* d = difference.data();
  Tensor loss;
  if (reduction == Reduction::none) {
    loss = Tensor::empty(difference.shape());
    kernels::binary_forward(Binary::mul, loss.data(), d, 1, d, 1, n);
  } else {
    check(reduction == Reduction::sum || reduction == Reduction::mean,
          "mse_loss: unknown Reduction value {}", static_cast<int>(reduction));
    check(reduction == Reduction::sum || n > 0,
          "mse_loss: cannot average an empty tensor of shape {}", difference.shape());
    real total = 0;  // Σ (x − t)², one dot product of the difference with itself
    kernels::column_dots(&total, d, d, n, 1);
    loss = full({}, reduction == Reduction::mean ? total / static_cast<real>(n) : total);
  }
  const auto scale =
      static_cast<real>(reduction == Reduction::mean ? 2.0 / static_cast<double>(n) : 2.0);
  return record(
      "mse_loss", loss, {input, target},
      [difference, scale, reduced = reduction != Reduction::none, input_grad = requires_grad(input),
       target_grad = requires_grad(target)](const Tensor& dloss) {
        Tensor dinput;
        if (grad_enabled()) {  // recording (create_graph): the difference made again, with ops
          const Node::Inputs& given = backward_inputs();  // input, target
          dinput = (given[0] - given[1]) * (dloss * scale);
        } else if (reduced) {  // dℓ is one number: one pass, c·dℓ times the difference
          const real factor = dloss.item() * scale;
          dinput = Tensor::empty(difference.shape());
          kernels::binary_forward(Binary::mul, dinput.data(), difference.data(), 1, &factor, 0,
                                  difference.numel());
        } else {
          dinput = difference * (dloss * scale);
        }
        return Gradients{input_grad ? dinput : Tensor(), target_grad ? -dinput : Tensor()};
      });
}

// ℓ_i = −log_probs[i, y_i], and 0 where y_i = ignore_index
// dlog_probs[i, y_i] = −dℓ_i; every other entry (and every ignored row) gets 0
//
// One op rather than gather-then-mask: an ignored row is never read, so even a
// NaN there cannot leak into the loss (0 · NaN would be NaN), and nothing is
// ever gathered at a meaningless index.
Tensor negative_log_likelihood(const Tensor& log_probs, const std::vector<int64_t>& targets,
                               int64_t ignore_index, const char* op) {
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
  // The op is linear in log_probs, so the backward of its backward is the op
  // itself, on the picked columns (−1 ignored): adjoint records it so.
  return record(op, losses, {log_probs}, [picked, N, C, op](const Tensor& dlosses_in) {
    const Tensor dlosses = dlosses_in.contiguous_data();
    Tensor dlog_probs = zeros({N, C});
    for (int64_t i = 0; i < N; ++i) {
      if ((*picked)[i] >= 0) dlog_probs.data()[i * C + (*picked)[i]] = -dlosses.data()[i];
    }
    return Gradients{adjoint(op, dlog_probs, dlosses_in, [picked, op](const Tensor& g) {
      return negative_log_likelihood(g, *picked, -1, op);
    })};
  });
}

}  // namespace attograd
