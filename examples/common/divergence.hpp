// examples/common/divergence.hpp — stopping a training run the moment it
// diverges, before it can overwrite good results with NaN.
//
// A learning rate that is too large makes the loss (or a gradient, and with
// it the weights) overflow to infinity and then NaN; from there every step
// stays NaN. The trainers check the loss of every step they see and the
// weights before every save, and stop with an Error (exit status 2):
//
//   check_finite_training("loss", loss, "iteration 1200", flags.lr, kept);
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

// Throws when `value` (the quantity named `what`, seen at `when`) is NaN or
// infinite. `kept` says what was left untouched ("'out/x' keeps …").
inline void check_finite_training(const std::string& what, double value, const std::string& when,
                                  double lr, const std::string& kept) {
  if (std::isfinite(value)) return;
  fail(
      "training diverged at {}: the {} is {} (learning rate {:g}); stopped before writing, so {}; "
      "try a smaller --lr, e.g. {:g}",
      when, what, value, lr, kept, lr / 10);
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

// "so 'out/checkpoint.safetensors' keeps the last good state" or, when there
// is none yet, that nothing was written.
inline std::string kept_text(const std::string& path, bool exists) {
  return exists ? fmt::format("'{}' keeps the last good state", nn::printable(path, 300))
                : std::string("nothing was written");
}

}  // namespace attograd::cli
