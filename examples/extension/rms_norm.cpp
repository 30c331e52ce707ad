// rms_norm.cpp — RMSNorm's two versions and its layer (rms_norm.hpp).
//
// Letters: R rows (the product of the leading axes), C features (last axis).
#include "rms_norm.hpp"

#include <fmt/format.h>

#include <cmath>
#include <vector>

namespace extension {

using namespace attograd;

namespace {

// The checks both versions share: the message names the op, the shapes and
// what would fit.
void check_inputs(const char* op, const Tensor& x, const Tensor& gain, double eps) {
  check_defined(op, x);
  check_defined(op, gain);
  check(x.dim() >= 1, "{}: x must have at least one axis (the features), got a 0-d tensor", op);
  const int64_t features = x.shape()[x.dim() - 1];
  check(gain.dim() == 1 && gain.shape()[0] == features,
        "{}: gain has shape {} but x {} has {} features on its last axis; pass a gain of "
        "shape ({})",
        op, gain.shape(), x.shape(), features, features);
  check(eps > 0, "{}: eps must be positive, got {}", op, eps);
}

}  // namespace

// From ops: mean, sqrt and broadcasting division/multiplication. Each op
// records its own backward, so this function has none to write.
Tensor rms_norm_composed(const Tensor& x, const Tensor& gain, double eps) {
  check_inputs("rms_norm_composed", x, gain, eps);
  const Tensor mean_square = mean(x * x, {-1}, /*keepdim=*/true);  // (*, 1)
  return x / sqrt(mean_square + eps) * gain;                       // (*, C)
}

// Forward, per row:  r = √(Σ x²/C + ε),  x̂ = x / r,  y = x̂ ⊙ g.
// Backward, with dx̂ = dy ⊙ g:
//   dx = (dx̂ − x̂ · mean(dx̂ ⊙ x̂)) / r     (x̂ depends on x directly and through r:
//                                          ∂r/∂xⱼ = xⱼ / (C·r))
//   dg = Σ over rows of dy ⊙ x̂
Tensor rms_norm(const Tensor& x_in, const Tensor& gain_in, double eps) {
  check_inputs("rms_norm", x_in, gain_in, eps);
  // Fresh handles on row-major values: no history, safe for the closure to keep.
  const Tensor x = x_in.contiguous_data();
  const Tensor gain = gain_in.contiguous_data();
  const int64_t features = x.shape()[x.dim() - 1];
  const int64_t rows = features == 0 ? 0 : x.numel() / features;

  Tensor y = Tensor::empty(x.shape());
  Tensor inverse_rms = Tensor::empty({rows});  // 1/r per row, for the backward
  const real* xs = x.data();
  const real* g = gain.data();
  for (int64_t row = 0; row < rows; ++row) {
    const real* x_row = xs + row * features;
    double square_sum = 0;
    for (int64_t c = 0; c < features; ++c) square_sum += double(x_row[c]) * x_row[c];
    const double inverse = 1.0 / std::sqrt(square_sum / double(features) + eps);
    inverse_rms.data()[row] = real(inverse);
    real* y_row = y.data() + row * features;
    for (int64_t c = 0; c < features; ++c) y_row[c] = real(x_row[c] * inverse) * g[c];
  }

  // Under backward(…, create_graph) (grad_enabled() inside the closure) the
  // gradients must have history, so they are the composed version's, by
  // ops on the inputs as given; the loops below form the same numbers
  // without it.
  return record(
      "rms_norm", y, {x_in, gain_in},
      [x_in, gain_in, eps, x, gain, inverse_rms, rows,
       features](const Tensor& grad_output) -> Gradients {
        if (grad_enabled()) {
          return composed_gradients(
              [eps](const std::vector<Tensor>& in) { return rms_norm_composed(in[0], in[1], eps); },
              {x_in, gain_in}, grad_output);
        }
        const Tensor dy = grad_output.contiguous_data();
        Tensor dx = Tensor::empty(x.shape());
        Tensor dgain = zeros({features});
        std::vector<double> dx_hat(static_cast<size_t>(features));
        for (int64_t row = 0; row < rows; ++row) {
          const real* x_row = x.data() + row * features;
          const real* dy_row = dy.data() + row * features;
          const double inverse = inverse_rms.data()[row];
          double projection = 0;  // Σ dx̂ ⊙ x̂ over the row
          for (int64_t c = 0; c < features; ++c) {
            const double x_hat = x_row[c] * inverse;
            dx_hat[c] = double(dy_row[c]) * gain.data()[c];
            projection += dx_hat[c] * x_hat;
            dgain.data()[c] += real(dy_row[c] * x_hat);
          }
          const double mean_projection = projection / double(features);
          real* dx_row = dx.data() + row * features;
          for (int64_t c = 0; c < features; ++c) {
            dx_row[c] = real((dx_hat[c] - x_row[c] * inverse * mean_projection) * inverse);
          }
        }
        return Gradients{dx, dgain};
      });
}

RMSNorm::RMSNorm(const RMSNormOptions& options) : Layer("RMSNorm"), options_(options) {
  check(options.features() > 0, "RMSNorm: features must be positive, got {}", options.features());
  weight = register_parameter("weight", ones({options.features()}));
}

Tensor RMSNorm::forward(const Tensor& x) {
  return options_.fused() ? rms_norm(x, weight, options_.eps())
                          : rms_norm_composed(x, weight, options_.eps());
}

std::string RMSNorm::extra_repr() const {
  return fmt::format("({},), eps={}, fused={}", options_.features(), options_.eps(),
                     options_.fused());
}

}  // namespace extension
