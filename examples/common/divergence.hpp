// examples/common/divergence.hpp — stopping a training run the moment it
// diverges, before it can overwrite good results with a useless model.
//
// A learning rate that is too large shows in two ways. The loss (or a
// gradient, and with it the weights) may overflow to infinity and then NaN;
// from there every step stays NaN. Or the loss explodes and stays finite:
// Adam at --lr 1e30 takes the batched recipe's loss from 0.53 at its first
// step to 1.4e30 over its first epoch. The trainers stop with an Error (exit
// status 2) at the first of:
//
//   - a loss or gradient norm that is NaN or infinite (every step's loss
//     counts; the batched loop's clip_grad_norm throws on a non-finite norm);
//   - a reported loss (the tutorial's average over --print-every iterations,
//     an epoch's loss in the other recipes and nw_regression) more than
//     kDivergenceFactor = 100 times the loss of the run's first step, the
//     untrained model's (check_loss_growth);
//   - a weight that is NaN or infinite, checked before every save.
//
//   check_finite_training("loss", loss, "iteration 1200", flags.lr, kept);
//   check_loss_growth(average_loss, first_loss, "iteration 1200", flags.lr, kept);
//   check_finite_parameters(model.named_parameters(), "iteration 1200", flags.lr, kept);
//
//   error: training diverged at iteration 1200: the loss is nan (learning rate
//   1e+30); stopped before writing, so 'out/checkpoint.safetensors' keeps the
//   last good state; try a smaller --lr, e.g. 1e+29
//
// Header-only, because examples/common is linked without the library.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "nn/optim.hpp"
#include "nn/safetensors_messages.hpp"
#include "tensor/error.hpp"

namespace attograd::cli {

// How far above its first step's loss a reported loss may go. A working
// run's reported losses never exceed its first step's: the default runs'
// loss tables and curves (docs/translation.md, docs/attention.md,
// docs/nw_regression.md) start at 0.34–1 times it and stay below it, and
// none of the 10,000 one-iteration losses of a default tutorial run is above
// it. 100× leaves two orders of magnitude.
inline constexpr double kDivergenceFactor = 100;

// Throws the message every check here ends with: what was `seen` at `when`,
// the learning rate, what was left untouched (`kept`: "'out/x' keeps …") and
// a smaller rate to try.
[[noreturn]] inline void fail_diverged(const std::string& when, const std::string& seen, double lr,
                                       const std::string& kept) {
  fail(
      "training diverged at {}: {} (learning rate {:g}); stopped before writing, so {}; try a "
      "smaller --lr, e.g. {:g}",
      when, seen, lr, kept, lr / 10);
}

// Throws when `value` (the quantity named `what`, seen at `when`) is NaN or
// infinite.
inline void check_finite_training(const std::string& what, double value, const std::string& when,
                                  double lr, const std::string& kept) {
  if (std::isfinite(value)) return;
  // fabs: "nan", not "-nan"; an infinity keeps its sign
  fail_diverged(when,
                fmt::format("the {} is {}", what, std::isnan(value) ? std::fabs(value) : value), lr,
                kept);
}

// Throws when a reported `loss` is more than kDivergenceFactor times
// `first_loss`, the loss of the run's first step. A first loss that is not
// positive (none yet) checks nothing; a NaN loss is check_finite_training's.
inline void check_loss_growth(double loss, double first_loss, const std::string& when, double lr,
                              const std::string& kept) {
  if (!(first_loss > 0) || !(loss > kDivergenceFactor * first_loss)) return;
  fail_diverged(when,
                fmt::format("the loss is {:.4g}, over {:g} times the first step's {:.4g}", loss,
                            kDivergenceFactor, first_loss),
                lr, kept);
}

// The same for the weights: throws naming the first parameter holding NaN or
// infinity and the flat index of the value.
inline void check_finite_parameters(const nn::NamedTensors& parameters, const std::string& when,
                                    double lr, const std::string& kept) {
  for (const auto& [name, parameter] : parameters) {
    const Tensor values = parameter.contiguous_data();
    for (int64_t i = 0; i < values.numel(); ++i) {
      const double value = values.data()[i];
      if (std::isfinite(value)) continue;
      check_finite_training(fmt::format("weight {}[{}]", nn::printable(name), i), value, when, lr,
                            kept);
    }
  }
}

// The --lr flag's help: `rate` ("Adam learning rate") and what a rate far too
// large does.
inline std::string learning_rate_help(const std::string& rate) {
  return rate +
         "; if the loss turns NaN or passes 100 times its first step's, training stops with "
         "status 2 before writing";
}

// "so 'out/checkpoint.safetensors' keeps the last good state" or, when there
// is none yet, that nothing was written.
inline std::string kept_text(const std::string& path, bool exists) {
  return exists ? fmt::format("'{}' keeps the last good state", nn::printable(path, 300))
                : std::string("nothing was written");
}

}  // namespace attograd::cli
