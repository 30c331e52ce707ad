// tests/examples/test_divergence.cpp — the trainers' divergence checks
// (examples/common/divergence.hpp) on their own: the exact messages, where
// the loss-growth limit lies, and what each check leaves to the others. The
// programs are run against them in test_hostile_input_cli.cpp.
#include <catch2/catch.hpp>
#include <limits>
#include <string>

#include "examples/common/divergence.hpp"
#include "tensor/error.hpp"

namespace test_divergence {

namespace cli = attograd::cli;

TEST_CASE("check_loss_growth stops a loss over 100 times the first step's", "[cli][divergence]") {
  const std::string kept = "'out/checkpoint.safetensors' keeps the last good state";
  CHECK_NOTHROW(cli::check_loss_growth(1000, 10, "epoch 3", 0.5, kept));  // exactly 100×
  CHECK_THROWS_WITH(
      cli::check_loss_growth(1001, 10, "epoch 3", 0.5, kept),
      "training diverged at epoch 3: the loss is 1001, over 100 times the first step's 10 "
      "(learning rate 0.5); stopped before writing, so 'out/checkpoint.safetensors' keeps the "
      "last good state; try a smaller --lr, e.g. 0.05");
  CHECK_THROWS_WITH(cli::check_loss_growth(2.961e29, 0.336, "epoch 2", 1e30, "nothing was written"),
                    "training diverged at epoch 2: the loss is 2.961e+29, over 100 times the "
                    "first step's 0.336 (learning rate 1e+30); stopped before writing, so nothing "
                    "was written; try a smaller --lr, e.g. 1e+29");
}

TEST_CASE("check_loss_growth leaves NaN to the finite check and needs a first loss",
          "[cli][divergence]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double infinity = std::numeric_limits<double>::infinity();
  CHECK_NOTHROW(cli::check_loss_growth(nan, 1, "epoch 2", 0.1, "nothing was written"));
  CHECK_NOTHROW(cli::check_loss_growth(1e30, 0, "epoch 2", 0.1, "nothing was written"));
  CHECK_NOTHROW(cli::check_loss_growth(1e30, nan, "epoch 2", 0.1, "nothing was written"));
  CHECK_THROWS_WITH(cli::check_finite_training("loss", -nan, "iteration 7", 0.1, "x"),
                    "training diverged at iteration 7: the loss is nan (learning rate 0.1); "
                    "stopped before writing, so x; try a smaller --lr, e.g. 0.01");
  CHECK_THROWS_WITH(cli::check_finite_training("gradient norm", infinity, "epoch 1", 1, "x"),
                    "training diverged at epoch 1: the gradient norm is inf (learning rate 1); "
                    "stopped before writing, so x; try a smaller --lr, e.g. 0.1");
}

}  // namespace test_divergence
