// nn/optim.hpp — optimizers (SGD, Adam, AdamW) and gradient clipping.
//
// An optimizer holds the model's parameters by name and, on step(), moves
// each one against its gradient. The loop every example runs:
//
//   nn::Adam adam(model.named_parameters(), nn::AdamOptions(1e-3));
//   for (int iteration = 0; iteration < iterations; ++iteration) {
//     adam.zero_grad();
//     Tensor loss = nn::mse_loss(model.forward(x), y);
//     backward(loss);
//     nn::clip_grad_norm(model.parameters(), 1.0);  // optional
//     adam.step();
//   }
//
// The update rules are torch.optim's, so a run can be checked against
// PyTorch number for number. Parameters are updated in place — the tensors
// the model registered stay the same tensors — and nothing is recorded in the
// autograd graph.
//
// Parameters are named because the optimizer's state is: Adam's running
// averages for "decoder.out.weight" are saved as "exp_avg.decoder.out.weight",
// so a checkpoint (nn/checkpoint.hpp) can resume training exactly.
// Models with several top-level modules name theirs with a prefix:
//
//   nn::Adam adam(nn::named_parameters({{"encoder", *encoder}, {"decoder", *decoder}}),
//                 nn::AdamOptions(1e-3));
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/engine.hpp"
#include "nn/module.hpp"
#include "tensor/error.hpp"
#include "tensor/tensor.hpp"

namespace attograd::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// A module whose parameter names get `prefix` and a dot in front.
struct NamedModule {
  std::string prefix;
  const Module& module;
};
// The parameters of several modules as one list: {{"encoder", e}, {"decoder", d}}
// gives "encoder.embedding.weight", …, "decoder.out.bias".
NamedTensors named_parameters(std::initializer_list<NamedModule> modules);

// Parameters that train with a learning rate or weight decay of their own
// (torch's "param groups"). Without `lr` or `weight_decay` the group uses the
// optimizer options' value. nanoGPT decays its matrices only:
//
//   nn::AdamW adamw({{.parameters = matrices, .lr = {}, .weight_decay = {}},
//                    {.parameters = vectors, .lr = {}, .weight_decay = 0.0}},
//                   nn::AdamOptions(6e-4).betas(0.9, 0.99).weight_decay(0.1));
struct ParameterGroup {
  NamedTensors parameters;
  std::optional<double> lr;
  std::optional<double> weight_decay;
};

// ---- The common part ---------------------------------------------------------

class Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient. Parameters without one
  // (unused in this forward pass) are skipped: neither they nor their state
  // change. The step count grows by one either way.
  virtual void step();
  // Forget every parameter's gradient, so the next backward starts from zero.
  void zero_grad();
  // "SGD" or "Adam": checkpoints record it so state is never loaded into the
  // wrong kind of optimizer.
  const std::string& type_name() const { return type_name_; }
  // Calls of step() so far.
  int64_t step_count() const { return step_count_; }
  std::vector<Tensor> parameters() const;

  // Learning rates, for schedules. set_lr(lr) sets every group's.
  size_t group_count() const { return group_lrs_.size(); }
  // A group's weight decay: its own, or the options'.
  double weight_decay(size_t group = 0) const;
  double lr(size_t group = 0) const;
  void set_lr(double lr);
  void set_lr(size_t group, double lr);

  // Everything besides the hyperparameters that the next step() depends on,
  // as copies: "step" (a 0-d tensor holding step_count()) and, for each
  // parameter updated at least once, its buffers named "<buffer>.<parameter>"
  // (e.g. "exp_avg.hidden.weight"). Saving it and loading it into an
  // optimizer built the same way continues training exactly.
  virtual NamedTensors state() const;
  // Replaces the state by `state` (values are copied). Checks everything
  // first and throws one Error listing every problem — unknown or missing
  // names, wrong shapes, bad step counts — without changing anything.
  virtual void load_state(const NamedTensors& state);
  // The problems load_state would report (empty: it would succeed).
  std::vector<std::string> state_problems(const NamedTensors& state) const;

 protected:
  // A parameter and what the optimizer remembers about it.
  struct ParameterState {
    std::string name;
    Tensor parameter;  // contiguous; updated in place
    size_t group = 0;
    int64_t steps = 0;            // updates this parameter has had
    std::vector<Tensor> buffers;  // one per buffer name, zeros before the first update
  };

  // What a group without a value of its own uses: the options'.
  struct GroupDefaults {
    double lr;
    double weight_decay;
  };

  // `buffer_names` are the per-parameter tensors the rule keeps (each of the
  // parameter's shape); with `saves_parameter_steps` each parameter's own step
  // count is part of the state too, as "step.<parameter>".
  Optimizer(std::string type_name, std::vector<ParameterGroup> groups, GroupDefaults defaults,
            std::vector<std::string> buffer_names, bool saves_parameter_steps);

  // Updates state.parameter in place from `gradient` (contiguous, same shape).
  // state.steps already counts this update.
  virtual void update(ParameterState& state, const Tensor& gradient, double lr) = 0;

  // The update of one parameter from its gradient, if it has one: what
  // step() does for each parameter and a backward hook for one.
  void update_from_gradient(ParameterState& state);

  // Whether p −= lr·G is this rule's whole update, so that a gradient part
  // backward() left deferred (autograd/fast/deferred_gradient.hpp) can be
  // added into p without being formed; false unless overridden. Otherwise
  // step() reads grad(), which forms it.
  virtual bool applies_deferred_gradients() const { return false; }

 private:
  // buffer_names_, then "step" when each parameter's count is saved.
  std::vector<std::string> per_parameter_kinds() const;

  std::string type_name_;
  std::vector<double> group_lrs_;
  std::vector<double> group_weight_decays_;
  std::vector<std::string> buffer_names_;
  bool saves_parameter_steps_;
  std::vector<ParameterState> states_;
  int64_t step_count_ = 0;
};

// ---- SGD -------------------------------------------------------------------

struct SGDOptions {
  explicit SGDOptions(double lr) : lr_(lr) {}
  SGDOptions& lr(double value) {
    lr_ = value;
    return *this;
  }
  // μ: how much of the previous update is kept (default 0: plain SGD).
  SGDOptions& momentum(double value) {
    momentum_ = value;
    return *this;
  }
  // L2 penalty: wd·p is added to the gradient (default 0).
  SGDOptions& weight_decay(double value) {
    weight_decay_ = value;
    return *this;
  }

  double lr() const { return lr_; }
  double momentum() const { return momentum_; }
  double weight_decay() const { return weight_decay_; }

 private:
  double lr_;
  double momentum_ = 0;
  double weight_decay_ = 0;
};

// Stochastic gradient descent with momentum, as torch.optim.SGD:
//   d = g + wd·p
//   b = μ·b + d          (b starts at 0, so the first step has b = d)
//   p = p − lr·b         (p = p − lr·d when μ = 0)
// State: "momentum_buffer.<parameter>" when μ ≠ 0.
class SGD : public Optimizer {
 public:
  SGD(NamedTensors named_parameters, const SGDOptions& options);
  SGD(std::vector<ParameterGroup> groups, const SGDOptions& options);

  const SGDOptions& options() const { return options_; }

 protected:
  // Plain SGD (μ = 0, wd = 0): a deferred gradient goes straight into p.
  bool applies_deferred_gradients() const override;

 private:
  void update(ParameterState& state, const Tensor& gradient, double lr) override;

  SGDOptions options_;
};

// ---- Adam ------------------------------------------------------------------

struct AdamOptions {
  explicit AdamOptions(double lr = 1e-3) : lr_(lr) {}
  AdamOptions& lr(double value) {
    lr_ = value;
    return *this;
  }
  // β₁, β₂: decay rates of the running mean of g and of g² (default 0.9, 0.999).
  AdamOptions& betas(double beta1, double beta2) {
    beta1_ = beta1;
    beta2_ = beta2;
    return *this;
  }
  // ε: keeps the step finite where g² is tiny (default 1e-8).
  AdamOptions& eps(double value) {
    eps_ = value;
    return *this;
  }
  // L2 penalty added to the gradient, as torch.optim.Adam (not AdamW).
  AdamOptions& weight_decay(double value) {
    weight_decay_ = value;
    return *this;
  }

  double lr() const { return lr_; }
  double beta1() const { return beta1_; }
  double beta2() const { return beta2_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }

 private:
  double lr_;
  double beta1_ = 0.9;
  double beta2_ = 0.999;
  double eps_ = 1e-8;
  double weight_decay_ = 0;
};

// Adam (Kingma & Ba, 2015), as torch.optim.Adam. At a parameter's t-th update
// (wd: its group's weight decay):
//   d = g + wd·p
//   m = β₁·m + (1 − β₁)·d            running mean of the gradient
//   v = β₂·v + (1 − β₂)·d²           running mean of its square
//   m̂ = m / (1 − β₁ᵗ),  v̂ = v / (1 − β₂ᵗ)   bias correction: m and v start at 0
//   p = p − lr · m̂ / (√v̂ + ε)
// State: "exp_avg.<parameter>" (m), "exp_avg_sq.<parameter>" (v) and
// "step.<parameter>" (t, a 0-d tensor; exact up to 2²⁴ updates in a float file).
class Adam : public Optimizer {
 public:
  Adam(NamedTensors named_parameters, const AdamOptions& options);
  Adam(std::vector<ParameterGroup> groups, const AdamOptions& options);

  const AdamOptions& options() const { return options_; }

 protected:
  // AdamW's: the same buffers under another type name.
  Adam(std::string type_name, std::vector<ParameterGroup> groups, const AdamOptions& options);
  // The rule above with `l2` as wd.
  void adam_update(ParameterState& state, const Tensor& gradient, double lr, double l2);

 private:
  void update(ParameterState& state, const Tensor& gradient, double lr) override;

  AdamOptions options_;
};

// ---- AdamW ------------------------------------------------------------------

// AdamW (Loshchilov & Hutter, 2019), as torch.optim.AdamW: the weight decay
// λ (the group's, else AdamOptions' weight_decay) shrinks the parameter
// itself instead of entering the gradient, so it is not divided by √v̂:
//   p = p · (1 − lr·λ)
//   then Adam's update above with wd = 0.
// torch.optim.AdamW's default λ is 0.01; AdamOptions' is 0, so pass it. The
// state is Adam's; checkpoints name the optimizer "AdamW", so an Adam state
// is not loaded into it by mistake.
class AdamW : public Adam {
 public:
  AdamW(NamedTensors named_parameters, const AdamOptions& options);
  AdamW(std::vector<ParameterGroup> groups, const AdamOptions& options);

 private:
  void update(ParameterState& state, const Tensor& gradient, double lr) override;
};

// ---- Gradient clipping -----------------------------------------------------

// Returns the L2 norm of all the gradients together, ‖(g₁, g₂, …)‖, and when
// it exceeds max_norm scales every gradient by max_norm / (norm + 1e-6), as
// torch.nn.utils.clip_grad_norm_. Parameters without a gradient are skipped.
//
// An overflowed loss or weight makes the norm NaN or infinite. By default
// the gradients are then scaled anyway, as PyTorch's are: by 0 when the norm
// is infinite (an infinite entry becomes NaN), by NaN when it is NaN. With
// error_if_nonfinite (PyTorch's error_if_nonfinite=True) it throws
// NonFiniteNormError instead, before any gradient is changed, so a training
// loop stops before the optimizer's step:
//
//   nn::clip_grad_norm(model.parameters(), 1.0, /*error_if_nonfinite=*/true);
double clip_grad_norm(const std::vector<Tensor>& parameters, double max_norm,
                      bool error_if_nonfinite = false);

// What clip_grad_norm throws for a NaN or infinite norm: an Error whose
// message names the norm and the remedy, and which keeps the norm for a
// caller that reports where training stopped.
class NonFiniteNormError : public Error {
 public:
  explicit NonFiniteNormError(double norm);
  double norm() const { return norm_; }

 private:
  double norm_;
};

}  // namespace attograd::nn
