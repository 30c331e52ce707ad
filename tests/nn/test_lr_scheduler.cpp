// tests/nn/test_lr_scheduler.cpp — schedules give PyTorch's rates, and a
// resumed schedule continues exactly.
//
// The expected rates are torch.optim.lr_scheduler's, worked out by hand from
// its formulas for base rate 0.1 (and checked against torch 1.13, which
// prints the same numbers up to the last digit or two of rounding).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "attograd.hpp"

namespace test_lr_scheduler {

using namespace attograd;
namespace fs = std::filesystem;

namespace {

// The rate before each of `epochs` epochs: read, then step(), as a PyTorch
// loop does.
std::vector<double> rates(const nn::LRSchedule& schedule, int epochs) {
  Tensor w = requires_grad_(zeros({1}));
  nn::SGD sgd({{"w", w}}, nn::SGDOptions(0.1));
  nn::LRScheduler scheduler(sgd, schedule);
  std::vector<double> out;
  for (int e = 0; e < epochs; ++e) {
    out.push_back(sgd.lr());
    scheduler.step();
  }
  return out;
}

void check_rates(const std::vector<double>& actual, const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t e = 0; e < expected.size(); ++e) {
    INFO("epoch " << e);
    CHECK(actual[e] == Approx(expected[e]).epsilon(1e-12).margin(1e-15));
  }
}

}  // namespace

TEST_CASE("StepLR: the rate times gamma every step_size epochs", "[lr_scheduler]") {
  // StepLR(step_size=3, gamma=0.5): 0.1 · 0.5^⌊e/3⌋.
  check_rates(rates(nn::LRSchedule::step(3, 0.5), 8),
              {0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025});
}

TEST_CASE("CosineAnnealingLR: half a cosine from the base rate to eta_min", "[lr_scheduler]") {
  // T_max = 10, η = 0.001: η + 0.0495 (1 + cos(π e/10)); cos 18° = 0.9510565163,
  // cos 36° = 0.8090169944, cos 54° = 0.5877852523, cos 72° = 0.3090169944.
  check_rates(rates(nn::LRSchedule::cosine(10, 0.001), 13),
              {0.1, 0.001 + 0.0495 * 1.9510565162951536, 0.001 + 0.0495 * 1.8090169943749475,
               0.001 + 0.0495 * 1.5877852522924731, 0.001 + 0.0495 * 1.3090169943749475, 0.0505,
               0.001 + 0.0495 * 0.6909830056250525, 0.001 + 0.0495 * 0.4122147477075269,
               0.001 + 0.0495 * 0.1909830056250525, 0.001 + 0.0495 * 0.0489434837048464, 0.001,
               // past T_max the cosine comes back up, as PyTorch's does
               0.001 + 0.0495 * 0.0489434837048464, 0.001 + 0.0495 * 0.1909830056250525});
}

TEST_CASE("LinearLR: from start_factor to end_factor over total_iters, then flat",
          "[lr_scheduler]") {
  // LinearLR(0.25, 1.0, total_iters=4): 0.1 · (0.25 + 0.75 · min(e, 4)/4).
  check_rates(rates(nn::LRSchedule::linear(0.25, 1.0, 4), 7),
              {0.025, 0.04375, 0.0625, 0.08125, 0.1, 0.1, 0.1});
}

TEST_CASE("SequentialLR: warm-up, then cosine started afresh at the milestone", "[lr_scheduler]") {
  // LinearLR(0.1, 1, 3) for epochs 0–2, then CosineAnnealingLR(T_max=5) at
  // its own epoch e − 3: 0.05 (1 + cos(π (e−3)/5)).
  check_rates(
      rates(nn::LRSchedule::sequential(
                {nn::LRSchedule::linear(0.1, 1.0, 3), nn::LRSchedule::cosine(5)}, {3}),
            10),
      {0.01, 0.04, 0.07, 0.1, 0.05 * 1.8090169943749475, 0.05 * 1.3090169943749475,
       0.05 * 0.6909830056250525, 0.05 * 0.1909830056250525, 0.0, 0.05 * 0.1909830056250525});
}

TEST_CASE("Schedules refuse settings PyTorch refuses, saying which", "[lr_scheduler]") {
  CHECK_THROWS_WITH(nn::LRSchedule::step(0),
                    "LRSchedule::step: step_size is 0; it must be at least 1");
  CHECK_THROWS_WITH(nn::LRSchedule::sequential({nn::LRSchedule::constant()}, {3}),
                    "LRSchedule::sequential: 1 schedules need 0 milestones, got 1");
  Tensor w = requires_grad_(zeros({1}));
  nn::SGD sgd({{"w", w}}, nn::SGDOptions(0.1));
  nn::LRScheduler scheduler(sgd, nn::LRSchedule::constant());
  CHECK_THROWS_WITH(scheduler.load_state({{"lr_scheduler.last_epoch", "x1"}}),
                    "LRScheduler::load_state: 'lr_scheduler.last_epoch' is \"x1\"; it must be a "
                    "count of epochs");
}

namespace {

// Adam on (w − 1)², the schedule stepped after every update.
void train(nn::Adam& adam, nn::LRScheduler& scheduler, const Tensor& w, int steps) {
  for (int i = 0; i < steps; ++i) {
    adam.zero_grad();
    backward(sum(pow(w - 1.0, 2)));
    adam.step();
    scheduler.step();
  }
}

nn::LRSchedule warmup_cosine() {
  return nn::LRSchedule::sequential(
      {nn::LRSchedule::linear(0.2, 1.0, 3), nn::LRSchedule::cosine(7)}, {3});
}

}  // namespace

TEST_CASE("A schedule saved with the optimizer resumes exactly", "[lr_scheduler][checkpoint]") {
  const fs::path path =
      fs::temp_directory_path() / ("attograd_lr_" + std::to_string(getpid()) + ".safetensors");
  const nn::AdamOptions options(0.05);

  Tensor w_all = requires_grad_(from_vector({0.5, -2.0, 3.0}, {3}));
  nn::Adam adam_all({{"w", w_all}}, options);
  nn::LRScheduler all(adam_all, warmup_cosine());
  train(adam_all, all, w_all, 8);

  Tensor w_first = requires_grad_(from_vector({0.5, -2.0, 3.0}, {3}));
  nn::Adam adam_first({{"w", w_first}}, options);
  nn::LRScheduler first(adam_first, warmup_cosine());
  train(adam_first, first, w_first, 4);
  nn::Metadata metadata;
  first.save_state(metadata);
  nn::save_training_state(path, {{"w", w_first}}, &adam_first, metadata);

  Tensor w_resumed = requires_grad_(zeros({3}));
  nn::Adam adam_resumed({{"w", w_resumed}}, options);
  nn::LRScheduler resumed(adam_resumed, warmup_cosine());
  resumed.load_state(nn::load_training_state(path, {{"w", w_resumed}}, &adam_resumed));
  fs::remove(path);
  CHECK(resumed.last_epoch() == 4);
  CHECK(adam_resumed.lr() == adam_first.lr());
  train(adam_resumed, resumed, w_resumed, 4);

  CHECK(adam_resumed.lr() == adam_all.lr());
  const std::vector<real> expected = w_all.to_vector();
  const std::vector<real> actual = w_resumed.to_vector();
  for (size_t i = 0; i < expected.size(); ++i) {
    if constexpr (sizeof(real) == sizeof(float)) {
      CHECK(actual[i] == expected[i]);  // the file holds exactly what memory held
    } else {
      CHECK(actual[i] == Approx(expected[i]).margin(1e-5));  // the file rounds to float
    }
  }
}

}  // namespace test_lr_scheduler
