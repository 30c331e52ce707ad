#include "autograd/gradcheck.hpp"

#include <cmath>
#include <type_traits>

#include "autograd/ops.hpp"
#include "tensor/factory.hpp"

namespace attograd {

namespace {

// L(x) = Σ f(x) ⊙ R, computed in double, recording nothing.
double projected(const GradcheckFunction& fn, const std::vector<Tensor>& inputs,
                 const std::vector<real>& projection) {
  NoGradGuard no_grad;
  const std::vector<real> out = fn(inputs).to_vector();
  double total = 0;
  for (size_t i = 0; i < out.size(); ++i) total += double(out[i]) * double(projection[i]);
  return total;
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFunction& fn, const std::vector<Tensor>& inputs_in,
                          const GradcheckOptions& options) {
  check(std::is_same_v<real, double>,
        "gradcheck: this library was built with float; finite differences need the double "
        "build (configure with -DATTOGRAD_REAL=double, as the tests' attograd_f64 does)");
  std::vector<Tensor> inputs;
  for (const Tensor& t : inputs_in) inputs.push_back(requires_grad_(t.clone_data()));

  // Analytic: one backward of L = Σ f(x) ⊙ R.
  const Tensor output = fn(inputs);
  Generator generator(options.seed);
  const Tensor projection = randn(output.shape(), generator);
  check(requires_grad(output),
        "gradcheck: the function's output does not depend on any input that requires grad");
  backward(sum(mul(output, projection)));
  const std::vector<real> r = projection.to_vector();

  GradcheckResult result;
  double worst_ratio = -1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor& x = inputs[i];
    const Tensor g = grad(x);
    for (int64_t k = 0; k < x.numel(); ++k) {
      const real original = x.data()[k];
      x.data()[k] = original + options.epsilon;
      const double plus = projected(fn, inputs, r);
      x.data()[k] = original - options.epsilon;
      const double minus = projected(fn, inputs, r);
      x.data()[k] = original;
      const double numeric = (plus - minus) / (2 * options.epsilon);
      const double analytic = g.defined() ? double(g.data()[k]) : 0.0;
      const double error = std::abs(analytic - numeric);
      const double tolerance = options.absolute + options.relative * std::abs(numeric);
      const double ratio = error / tolerance;
      ++result.elements_checked;
      if (ratio > worst_ratio || std::isnan(error)) {
        worst_ratio = std::isnan(error) ? INFINITY : ratio;
        result.input = static_cast<int64_t>(i);
        result.element = k;
        result.analytic = analytic;
        result.numeric = numeric;
        result.error = error;
      }
    }
  }
  result.passed = worst_ratio <= 1.0;
  result.report = fmt::format(
      "{} {}: {} elements; worst is input {} element {}: analytic {:.10g}, numeric "
      "{:.10g}, |difference| {:.3g} ({:.3g}x the tolerance)",
      options.name, result.passed ? "passed" : "FAILED", result.elements_checked, result.input,
      result.element, result.analytic, result.numeric, result.error, worst_ratio);
  return result;
}

GradcheckResult gradgradcheck(const GradcheckFunction& fn, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options) {
  // The output gradient R is an input of G too: G is linear in R, and its
  // derivative along R is the first derivative itself, which is only right
  // if every closure keeps the history of the gradient it is given (a view's
  // backward that copies dy into plain numbers would pass for x alone).
  Tensor output_gradient;
  {
    NoGradGuard no_grad;
    Generator generator(options.seed ^ 0x9e3779b97f4a7c15ULL);
    output_gradient = randn(fn(inputs).shape(), generator);
  }
  // G(x, R): the first derivatives of Σ fn(x) ⊙ R, with their graph.
  // Recording is turned on inside, because gradcheck evaluates its function
  // under NoGradGuard for the finite differences.
  const GradcheckFunction first_derivatives = [fn](const std::vector<Tensor>& x_and_r) {
    const GradModeGuard recording(true);
    const std::vector<Tensor> x(x_and_r.begin(), x_and_r.end() - 1);
    const Tensor& r = x_and_r.back();
    const Tensor output = fn(x);
    check(requires_grad(output),
          "gradgradcheck: the function's output does not depend on any input that requires grad");
    const std::vector<Tensor> gradients =
        autograd::grad({sum(mul(output, r))}, x, {}, {.create_graph = true, .allow_unused = true});
    std::vector<Tensor> flat;
    for (size_t i = 0; i < x.size(); ++i) {
      flat.push_back(reshape(gradients[i].defined() ? gradients[i] : zeros(x[i].shape()), {-1}));
    }
    Tensor all = cat(flat, 0);
    // A gradient with no history at all: its analytic derivatives are then
    // zero, and the numeric side checks that they are.
    if (!requires_grad(all)) all = add(all, mul(sum(r), scalar(0)));
    return all;
  };
  std::vector<Tensor> inputs_and_r = inputs;
  inputs_and_r.push_back(output_gradient);
  GradcheckOptions second = options;
  second.name = "gradgradcheck";
  return gradcheck(first_derivatives, inputs_and_r, second);
}

}  // namespace attograd
