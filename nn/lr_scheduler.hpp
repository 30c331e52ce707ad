// nn/lr_scheduler.hpp — learning-rate schedules, with PyTorch's values.
//
//   nn::Adam adam(model.named_parameters(), nn::AdamOptions(0.005));
//   nn::LRScheduler scheduler(adam, nn::LRSchedule::sequential(
//       {nn::LRSchedule::linear(0.1, 1.0, 10), nn::LRSchedule::cosine(90)}, {10}));
//   for (int epoch = 0; epoch < 100; ++epoch) {
//     train_one_epoch(adam);
//     scheduler.step();
//   }
//
// A schedule is a curve: the learning rate at epoch e (the number of step()
// calls so far) from the rate the optimizer was built with ("base"). The
// curves are the closed forms of torch.optim.lr_scheduler's classes, and an
// LRScheduler sets exactly the rates PyTorch's would after the same number of
// step() calls, its construction included (PyTorch's initial step):
//
//   step(s, γ)             StepLR:            base · γ^⌊e/s⌋
//   cosine(T, η)           CosineAnnealingLR: η + (base − η)(1 + cos(π e/T))/2
//   linear(f₀, f₁, n)      LinearLR:          base · (f₀ + (f₁ − f₀) · min(e, n)/n)
//   sequential(c, m)       SequentialLR:      c[i] at e − m[i−1] for m[i−1] ≤ e < m[i]
//
// (PyTorch computes CosineAnnealingLR and LinearLR recursively, which
// differs from the closed form only by rounding.) The scheduler's whole
// state is the epoch count, so saving it with the optimizer's state
// (save_state into a checkpoint's metadata) and loading it into a scheduler
// built the same way continues the schedule exactly.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "nn/optim.hpp"
#include "nn/safetensors.hpp"

namespace attograd::nn {

class LRSchedule {
 public:
  // The learning rate at `epoch` (≥ 0) of a group whose base rate is `base`.
  double at(int64_t epoch, double base) const { return curve_(epoch, base); }

  static LRSchedule constant();
  static LRSchedule step(int64_t step_size, double gamma = 0.1);
  static LRSchedule cosine(int64_t t_max, double eta_min = 0);
  static LRSchedule linear(double start_factor = 1.0 / 3, double end_factor = 1.0,
                           int64_t total_iters = 5);
  // schedules[i] runs from milestones[i−1] (0 for the first), each starting
  // again at its own epoch 0; milestones ascend and there is one fewer than
  // there are schedules.
  static LRSchedule sequential(std::vector<LRSchedule> schedules, std::vector<int64_t> milestones);

  // Whether this is constant(): every epoch at the base rate.
  bool is_constant() const { return constant_; }

 private:
  explicit LRSchedule(std::function<double(int64_t, double)> curve, bool constant = false)
      : curve_(std::move(curve)), constant_(constant) {}
  std::function<double(int64_t, double)> curve_;
  bool constant_ = false;
};

class LRScheduler {
 public:
  // Takes each group's current rate as its base and sets the epoch-0 rate.
  LRScheduler(Optimizer& optimizer, LRSchedule schedule);

  // One epoch on: every group's rate becomes the schedule's at last_epoch() + 1.
  void step();
  int64_t last_epoch() const { return last_epoch_; }
  double base_lr(size_t group = 0) const { return base_lrs_.at(group); }

  // The state as checkpoint metadata: "lr_scheduler.last_epoch".
  void save_state(Metadata& metadata) const;
  // Restores the epoch from `metadata` and sets the rates it implies; throws
  // Error naming the key when it is missing or not a count.
  void load_state(const Metadata& metadata);

 private:
  void apply();

  Optimizer& optimizer_;
  LRSchedule schedule_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = 0;
};

}  // namespace attograd::nn
