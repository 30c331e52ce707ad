// nn/optim.cpp — SGD, Adam, their saved state, and gradient clipping.
//
// The update rules are elementwise loops over one parameter at a time: each
// reads a gradient and a few buffers once and writes the parameter once, so
// they are bound by memory and the compiler vectorises them as they stand.
#include "nn/optim.hpp"

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "autograd/engine.hpp"
#include "autograd/fast/deferred_gradient.hpp"
#include "autograd/inspect/profiler.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"
#include "tensor/kernels.hpp"

namespace attograd::nn {

namespace {

// "exp_avg.hidden.weight": what an optimizer keeps, then whose it is.
std::string state_name(const std::string& kind, const std::string& parameter) {
  return fmt::format("{}.{}", kind, parameter);
}

}  // namespace

NamedTensors named_parameters(std::initializer_list<NamedModule> modules) {
  NamedTensors out;
  for (const NamedModule& named : modules) {
    for (auto& [name, tensor] : named.module.named_parameters()) {
      out.emplace_back(named.prefix + "." + name, tensor);
    }
  }
  return out;
}

// ---- Optimizer ---------------------------------------------------------------

Optimizer::Optimizer(std::string type_name, std::vector<ParameterGroup> groups,
                     GroupDefaults defaults, std::vector<std::string> buffer_names,
                     bool saves_parameter_steps)
    : type_name_(std::move(type_name)),
      buffer_names_(std::move(buffer_names)),
      saves_parameter_steps_(saves_parameter_steps) {
  std::set<std::string> names;
  std::set<const TensorImpl*> tensors;
  for (size_t group = 0; group < groups.size(); ++group) {
    const double lr = groups[group].lr.value_or(defaults.lr);
    check(std::isfinite(lr) && lr >= 0, "{}: group {} has learning rate {}; it must be >= 0",
          type_name_, group, lr);
    group_lrs_.push_back(lr);
    const double weight_decay = groups[group].weight_decay.value_or(defaults.weight_decay);
    check(std::isfinite(weight_decay) && weight_decay >= 0,
          "{}: group {} has weight decay {}; it must be >= 0", type_name_, group, weight_decay);
    group_weight_decays_.push_back(weight_decay);
    for (auto& [name, parameter] : groups[group].parameters) {
      check(parameter.defined(), "{}: parameter '{}' is an undefined tensor", type_name_, name);
      check(names.insert(name).second,
            "{}: two parameters are named '{}'; when training several modules, prefix their "
            "names, e.g. nn::named_parameters({{\"encoder\", encoder}}, {{\"decoder\", decoder}})",
            type_name_, name);
      check(tensors.insert(&parameter.impl()).second,
            "{}: parameter '{}' is the same tensor as an earlier one; list each tensor once",
            type_name_, name);
      check(parameter.is_contiguous(),
            "{}: parameter '{}' of shape {} is a non-contiguous view; optimizers update "
            "parameters in place and need contiguous ones",
            type_name_, name, parameter.shape());
      states_.push_back({name, parameter, group, 0, {}});
    }
  }
  check(!states_.empty(),
        "{}: got no parameters to optimize (did the module register any with "
        "register_parameter?)",
        type_name_);
}

Optimizer::~Optimizer() = default;

void Optimizer::step() {
  const ProfileScope profile("optimizer.step");  // a row of Profiler's table when one is alive
  ++step_count_;
  for (ParameterState& state : states_) update_from_gradient(state);
}

void Optimizer::update_from_gradient(ParameterState& state) {
  NoGradGuard no_grad;
  const double lr = group_lrs_[state.group];
  // The fast path (autograd/fast/deferred_gradient.hpp): a rule that is linear
  // in the gradient adds a deferred part straight into the parameter, without
  // forming it; any dense part goes through update() as usual.
  std::shared_ptr<fast::DeferredGradient> deferred;
  if (applies_deferred_gradients()) deferred = fast::take_deferred_gradient(state.parameter);
  const Tensor gradient = grad(state.parameter);  // the whole gradient, unless taken above
  if (!gradient.defined() && !deferred) return;
  const Shape& shape = gradient.defined() ? gradient.shape() : deferred->shape();
  check(shape == state.parameter.shape(),
        "{}.step: parameter '{}' has shape {} but its gradient has shape {}", type_name_,
        state.name, state.parameter.shape(), shape);
  if (state.buffers.empty()) {
    for (size_t i = 0; i < buffer_names_.size(); ++i) {
      state.buffers.push_back(zeros(state.parameter.shape()));
    }
  }
  ++state.steps;
  if (gradient.defined()) update(state, gradient.contiguous_data(), lr);
  if (deferred) deferred->apply_scaled(state.parameter.data(), -real(lr));
}

void Optimizer::zero_grad() {
  for (const ParameterState& state : states_) attograd::zero_grad(state.parameter);
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (const ParameterState& state : states_) out.push_back(state.parameter);
  return out;
}

double Optimizer::lr(size_t group) const {
  check(group < group_lrs_.size(), "{}.lr: group {} does not exist (there are {})", type_name_,
        group, group_lrs_.size());
  return group_lrs_[group];
}

double Optimizer::weight_decay(size_t group) const {
  check(group < group_weight_decays_.size(),
        "{}.weight_decay: group {} does not exist (there are {})", type_name_, group,
        group_weight_decays_.size());
  return group_weight_decays_[group];
}

void Optimizer::set_lr(double lr) {
  for (size_t group = 0; group < group_lrs_.size(); ++group) set_lr(group, lr);
}

void Optimizer::set_lr(size_t group, double lr) {
  check(group < group_lrs_.size(), "{}.set_lr: group {} does not exist (there are {})", type_name_,
        group, group_lrs_.size());
  check(std::isfinite(lr) && lr >= 0, "{}.set_lr: learning rate {} must be >= 0", type_name_, lr);
  group_lrs_[group] = lr;
}

NamedTensors Optimizer::state() const {
  NamedTensors out;
  out.emplace_back("step", scalar(real(step_count_)));
  for (const ParameterState& state : states_) {
    if (state.steps == 0) continue;  // never updated: nothing to remember
    for (size_t i = 0; i < buffer_names_.size(); ++i) {
      out.emplace_back(state_name(buffer_names_[i], state.name), state.buffers[i].clone_data());
    }
    if (saves_parameter_steps_) {
      out.emplace_back(state_name("step", state.name), scalar(real(state.steps)));
    }
  }
  return out;
}

namespace {

// The whole number a one-element step tensor holds, if it holds one >= minimum.
std::optional<int64_t> step_value(const Tensor& tensor, int64_t minimum) {
  if (tensor.numel() != 1) return std::nullopt;
  const double value = tensor.contiguous_data().data()[0];
  if (!std::isfinite(value) || value < double(minimum) || value != std::floor(value)) {
    return std::nullopt;
  }
  return static_cast<int64_t>(value);
}

std::string describe_step(const Tensor& tensor) {
  if (tensor.numel() != 1) return fmt::format("a tensor of shape {}", tensor.shape());
  return fmt::format("{}", tensor.contiguous_data().data()[0]);
}

}  // namespace

std::vector<std::string> Optimizer::per_parameter_kinds() const {
  std::vector<std::string> kinds = buffer_names_;
  if (saves_parameter_steps_) kinds.push_back("step");
  return kinds;
}

std::vector<std::string> Optimizer::state_problems(const NamedTensors& state) const {
  // Every per-parameter name this optimizer can hold: (parameter, kind) where
  // kind indexes per_parameter_kinds(); the last kind is "step" if saved.
  const std::vector<std::string> kinds = per_parameter_kinds();
  std::map<std::string, std::pair<size_t, size_t>> expected;
  for (size_t p = 0; p < states_.size(); ++p) {
    for (size_t k = 0; k < kinds.size(); ++k)
      expected[state_name(kinds[k], states_[p].name)] = {p, k};
  }

  std::vector<std::string> problems;
  std::set<std::string> seen;
  std::vector<size_t> found_per_parameter(states_.size(), 0);
  for (const auto& [name, tensor] : state) {
    if (!seen.insert(name).second) {
      problems.push_back(fmt::format("optimizer state '{}' appears twice", name));
      continue;
    }
    if (!tensor.defined()) {
      problems.push_back(fmt::format("optimizer state '{}' is an undefined tensor", name));
      continue;
    }
    if (name == "step") {
      if (!step_value(tensor, 0)) {
        problems.push_back(
            fmt::format("optimizer state 'step' must hold one whole number >= 0, found {}",
                        describe_step(tensor)));
      }
      continue;
    }
    const auto where = expected.find(name);
    if (where == expected.end()) {
      problems.push_back(fmt::format("unexpected optimizer state '{}' ({} keeps 'step'{}{})", name,
                                     type_name_, kinds.empty() ? "" : " and, per parameter, ",
                                     fmt::join(kinds, ", ")));
      continue;
    }
    const auto [p, k] = where->second;
    ++found_per_parameter[p];
    if (saves_parameter_steps_ && k + 1 == kinds.size()) {  // "step.<parameter>"
      if (!step_value(tensor, 1)) {
        problems.push_back(
            fmt::format("optimizer state '{}' must hold one whole number >= 1, found {}", name,
                        describe_step(tensor)));
      }
    } else if (tensor.shape() != states_[p].parameter.shape()) {
      problems.push_back(
          fmt::format("optimizer state '{}' has shape {}, but parameter '{}' has shape {}", name,
                      tensor.shape(), states_[p].name, states_[p].parameter.shape()));
    }
  }
  if (!seen.count("step")) problems.push_back("missing optimizer state 'step'");

  // A parameter's state comes whole or not at all.
  for (size_t p = 0; p < states_.size(); ++p) {
    if (found_per_parameter[p] == 0 || found_per_parameter[p] == kinds.size()) continue;
    std::vector<std::string> missing;
    for (const std::string& kind : kinds) {
      if (!seen.count(state_name(kind, states_[p].name))) {
        missing.push_back(fmt::format("'{}'", state_name(kind, states_[p].name)));
      }
    }
    problems.push_back(fmt::format("incomplete optimizer state for parameter '{}': missing {}",
                                   states_[p].name, fmt::join(missing, ", ")));
  }
  return problems;
}

void Optimizer::load_state(const NamedTensors& state) {
  const std::vector<std::string> problems = state_problems(state);
  check(problems.empty(), "{}.load_state: {} problem{}, nothing was changed:\n  {}", type_name_,
        problems.size(), problems.size() == 1 ? "" : "s", fmt::join(problems, "\n  "));

  const std::map<std::string, Tensor> by_name(state.begin(), state.end());
  const std::vector<std::string> kinds = per_parameter_kinds();
  step_count_ = *step_value(by_name.at("step"), 0);
  for (ParameterState& parameter : states_) {
    parameter.buffers.clear();
    parameter.steps = 0;
    if (kinds.empty() || !by_name.count(state_name(kinds[0], parameter.name))) continue;
    for (const std::string& buffer : buffer_names_) {
      parameter.buffers.push_back(by_name.at(state_name(buffer, parameter.name)).clone_data());
    }
    // SGD keeps no per-parameter count; any positive value means "has state".
    parameter.steps =
        saves_parameter_steps_ ? *step_value(by_name.at(state_name("step", parameter.name)), 1) : 1;
  }
}

// ---- SGD -----------------------------------------------------------------------

namespace {

void check_sgd(const SGDOptions& options) {
  check(options.momentum() >= 0, "SGD: momentum {} must be >= 0", options.momentum());
  check(options.weight_decay() >= 0, "SGD: weight_decay {} must be >= 0", options.weight_decay());
}

std::vector<std::string> sgd_buffers(const SGDOptions& options) {
  check_sgd(options);
  if (options.momentum() == 0) return {};
  return {"momentum_buffer"};
}

}  // namespace

SGD::SGD(NamedTensors named_parameters, const SGDOptions& options)
    : SGD(std::vector<ParameterGroup>{{.parameters = std::move(named_parameters),
                                       .lr = std::nullopt,
                                       .weight_decay = std::nullopt}},
          options) {}

SGD::SGD(std::vector<ParameterGroup> groups, const SGDOptions& options)
    : Optimizer("SGD", std::move(groups),
                {.lr = options.lr(), .weight_decay = options.weight_decay()}, sgd_buffers(options),
                false),
      options_(options) {}

// d = g + wd·p;  b = μ·b + d;  p = p − lr·b   (b = d when μ = 0)
void SGD::update(ParameterState& state, const Tensor& gradient, double lr) {
  const auto rate = real(lr);
  const auto momentum = real(options_.momentum());
  const auto decay = real(weight_decay(state.group));
  real* p = state.parameter.data();
  const real* g = gradient.data();
  real* b = state.buffers.empty() ? nullptr : state.buffers[0].data();
  const int64_t n = state.parameter.numel();
  for (int64_t i = 0; i < n; ++i) {
    real d = g[i] + decay * p[i];
    if (b) {
      b[i] = momentum * b[i] + d;
      d = b[i];
    }
    // One rounding, written out rather than left to the compiler's
    // contraction, so that a deferred gradient's update (fast::DeferredGradient::
    // apply_scaled, an FMA per entry) is the same arithmetic in every build.
    p[i] = std::fma(-rate, d, p[i]);
  }
}

// Plain SGD, p −= lr·g, is linear in g: p −= lr·(g_dense + g_deferred) is
// applied as two updates, the deferred one without forming it.
bool SGD::applies_deferred_gradients() const {
  if (options_.momentum() != 0) return false;
  for (size_t group = 0; group < group_count(); ++group) {
    if (weight_decay(group) != 0) return false;
  }
  return true;
}

// ---- Adam ----------------------------------------------------------------------

namespace {

const AdamOptions& checked(const AdamOptions& options) {
  check(options.beta1() >= 0 && options.beta1() < 1, "Adam: beta1 = {} must be in [0, 1)",
        options.beta1());
  check(options.beta2() >= 0 && options.beta2() < 1, "Adam: beta2 = {} must be in [0, 1)",
        options.beta2());
  check(options.eps() >= 0, "Adam: eps = {} must be >= 0", options.eps());
  check(options.weight_decay() >= 0, "Adam: weight_decay = {} must be >= 0",
        options.weight_decay());
  return options;
}

}  // namespace

Adam::Adam(NamedTensors named_parameters, const AdamOptions& options)
    : Adam(std::vector<ParameterGroup>{{.parameters = std::move(named_parameters),
                                        .lr = std::nullopt,
                                        .weight_decay = std::nullopt}},
           options) {}

Adam::Adam(std::vector<ParameterGroup> groups, const AdamOptions& options)
    : Adam("Adam", std::move(groups), options) {}

Adam::Adam(std::string type_name, std::vector<ParameterGroup> groups, const AdamOptions& options)
    : Optimizer(std::move(type_name), std::move(groups),
                {.lr = checked(options).lr(), .weight_decay = options.weight_decay()},
                {"exp_avg", "exp_avg_sq"}, true),
      options_(options) {}

// d = g + wd·p;  m = β₁m + (1−β₁)d;  v = β₂v + (1−β₂)d²;
// p = p − (lr / (1−β₁ᵗ)) · m / (√v / √(1−β₂ᵗ) + ε)
// The bias corrections are folded into two scalars, as torch does. m moves
// toward d by (1−β₁)·(d − m), torch's lerp, which is the same average.
// kernels::adam_step runs the loop (tensor/kernels_optim.cpp).
void Adam::update(ParameterState& state, const Tensor& gradient, double lr) {
  adam_update(state, gradient, lr, weight_decay(state.group));
}

void Adam::adam_update(ParameterState& state, const Tensor& gradient, double lr, double l2) {
  const double t = double(state.steps);
  const kernels::AdamStep step{
      .step_size = real(lr / (1 - std::pow(options_.beta1(), t))),
      .sqrt_correction2 = real(std::sqrt(1 - std::pow(options_.beta2(), t))),
      .beta2 = real(options_.beta2()),
      .one_minus_beta1 = real(1 - options_.beta1()),
      .one_minus_beta2 = real(1 - options_.beta2()),
      .eps = real(options_.eps()),
      .weight_decay = real(l2)};
  kernels::adam_step(state.parameter.data(), state.buffers[0].data(), state.buffers[1].data(),
                     gradient.data(), state.parameter.numel(), step);
}

// ---- AdamW -----------------------------------------------------------------------

AdamW::AdamW(NamedTensors named_parameters, const AdamOptions& options)
    : AdamW(std::vector<ParameterGroup>{{.parameters = std::move(named_parameters),
                                         .lr = std::nullopt,
                                         .weight_decay = std::nullopt}},
            options) {}

AdamW::AdamW(std::vector<ParameterGroup> groups, const AdamOptions& options)
    : Adam("AdamW", std::move(groups), options) {}

// p = p·(1 − lr·λ), rounded once to a real as torch's param.mul_(1 − lr·λ);
// then Adam's rule with no L2 term.
void AdamW::update(ParameterState& state, const Tensor& gradient, double lr) {
  const auto shrink = real(1 - lr * weight_decay(state.group));
  if (shrink != real(1)) {
    kernels::binary_forward(kernels::Binary::mul, state.parameter.data(), state.parameter.data(), 1,
                            &shrink, 0, state.parameter.numel());
  }
  adam_update(state, gradient, lr, 0);
}

// ---- Gradient clipping -----------------------------------------------------------

NonFiniteNormError::NonFiniteNormError(double norm)
    : Error(fmt::format(
          "clip_grad_norm: the total norm of the gradients is {}, so they cannot be clipped (none "
          "was changed); lower the learning rate, or pass error_if_nonfinite = false to scale "
          "them anyway",
          norm)),
      norm_(norm) {}

double clip_grad_norm(const std::vector<Tensor>& parameters, double max_norm,
                      bool error_if_nonfinite) {
  check(max_norm >= 0, "clip_grad_norm: max_norm = {} must be >= 0", max_norm);
  std::vector<Tensor> gradients;
  double sum_of_squares = 0;  // in double: millions of float squares add up
  for (const Tensor& parameter : parameters) {
    Tensor gradient = grad(parameter);
    if (!gradient.defined()) continue;
    const Tensor values = gradient.contiguous_data();
    sum_of_squares += kernels::sum_of_squares(values.data(), values.numel());
    gradients.push_back(std::move(gradient));
  }
  const double norm = std::sqrt(sum_of_squares);
  if (error_if_nonfinite && !std::isfinite(norm)) {
    throw NonFiniteNormError(std::fabs(norm));  // the norm is >= 0 or NaN: "nan", not "-nan"
  }
  // PyTorch multiplies by min(coefficient, 1): a NaN norm makes every gradient NaN.
  const double coefficient = max_norm / (norm + 1e-6);
  if (coefficient < 1 || std::isnan(coefficient)) {
    const auto scale = real(coefficient);
    for (Tensor& gradient : gradients) {
      if (gradient.is_contiguous()) {
        kernels::binary_forward(kernels::Binary::mul, gradient.data(), gradient.data(), 1, &scale,
                                0, gradient.numel());
      } else {
        Tensor scaled = gradient.clone_data();
        kernels::binary_forward(kernels::Binary::mul, scaled.data(), scaled.data(), 1, &scale, 0,
                                scaled.numel());
        gradient.copy_from(scaled);
      }
    }
  }
  return norm;
}

}  // namespace attograd::nn
