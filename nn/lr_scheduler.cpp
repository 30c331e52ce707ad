// nn/lr_scheduler.cpp — the schedules' closed forms (see lr_scheduler.hpp).
#include "nn/lr_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "tensor/error.hpp"

namespace attograd::nn {

namespace {
constexpr const char* kEpochKey = "lr_scheduler.last_epoch";
constexpr double kPi = 3.14159265358979323846;
}  // namespace

LRSchedule LRSchedule::constant() {
  return LRSchedule([](int64_t, double base) { return base; }, /*constant=*/true);
}

LRSchedule LRSchedule::step(int64_t step_size, double gamma) {
  check(step_size >= 1, "LRSchedule::step: step_size is {}; it must be at least 1", step_size);
  return LRSchedule([step_size, gamma](int64_t epoch, double base) {
    return base * std::pow(gamma, static_cast<double>(epoch / step_size));
  });
}

LRSchedule LRSchedule::cosine(int64_t t_max, double eta_min) {
  check(t_max >= 1, "LRSchedule::cosine: t_max is {}; it must be at least 1", t_max);
  return LRSchedule([t_max, eta_min](int64_t epoch, double base) {
    const double phase = kPi * static_cast<double>(epoch) / static_cast<double>(t_max);
    return eta_min + (base - eta_min) * (1 + std::cos(phase)) / 2;
  });
}

LRSchedule LRSchedule::linear(double start_factor, double end_factor, int64_t total_iters) {
  check(start_factor > 0 && start_factor <= 1 && end_factor >= 0 && end_factor <= 1 &&
            total_iters >= 1,
        "LRSchedule::linear: start_factor {} must be in (0, 1], end_factor {} in [0, 1] and "
        "total_iters {} at least 1 (as torch.optim.lr_scheduler.LinearLR)",
        start_factor, end_factor, total_iters);
  return LRSchedule([start_factor, end_factor, total_iters](int64_t epoch, double base) {
    const double done =
        static_cast<double>(std::min(epoch, total_iters)) / static_cast<double>(total_iters);
    return base * (start_factor + (end_factor - start_factor) * done);
  });
}

LRSchedule LRSchedule::sequential(std::vector<LRSchedule> schedules,
                                  std::vector<int64_t> milestones) {
  check(!schedules.empty() && milestones.size() + 1 == schedules.size(),
        "LRSchedule::sequential: {} schedules need {} milestones, got {}", schedules.size(),
        schedules.empty() ? 0 : schedules.size() - 1, milestones.size());
  check(std::is_sorted(milestones.begin(), milestones.end()) &&
            (milestones.empty() || milestones.front() >= 1),
        "LRSchedule::sequential: milestones must be positive and ascending");
  return LRSchedule([schedules = std::move(schedules), milestones = std::move(milestones)](
                        int64_t epoch, double base) {
    // As SequentialLR's bisect_right: schedule i once epoch ≥ milestones[i−1].
    const size_t i = static_cast<size_t>(
        std::upper_bound(milestones.begin(), milestones.end(), epoch) - milestones.begin());
    return schedules[i].at(i == 0 ? epoch : epoch - milestones[i - 1], base);
  });
}

LRScheduler::LRScheduler(Optimizer& optimizer, LRSchedule schedule)
    : optimizer_(optimizer), schedule_(std::move(schedule)) {
  for (size_t group = 0; group < optimizer.group_count(); ++group) {
    base_lrs_.push_back(optimizer.lr(group));
  }
  apply();
}

void LRScheduler::step() {
  ++last_epoch_;
  apply();
}

void LRScheduler::apply() {
  for (size_t group = 0; group < base_lrs_.size(); ++group) {
    optimizer_.set_lr(group, schedule_.at(last_epoch_, base_lrs_[group]));
  }
}

void LRScheduler::save_state(Metadata& metadata) const {
  metadata[kEpochKey] = std::to_string(last_epoch_);
}

void LRScheduler::load_state(const Metadata& metadata) {
  const auto found = metadata.find(kEpochKey);
  check(found != metadata.end(),
        "LRScheduler::load_state: the checkpoint has no '{}'; it was saved without a learning-rate "
        "schedule",
        kEpochKey);
  const std::string& text = found->second;
  check(!text.empty() && text.size() < 19 &&
            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }),
        "LRScheduler::load_state: '{}' is \"{}\"; it must be a count of epochs", kEpochKey, text);
  last_epoch_ = std::stoll(text);
  apply();
}

}  // namespace attograd::nn
