// train_rms_norm.cpp — train a small model with the RMSNorm layer, draw its
// loss curve, save it, load it back (links attograd::attograd and attograd::plot).
//
// Data: y = sin(3·x₁) · cos(2·x₂) + noise on x ∈ [−1, 1]². Model:
// Linear(2 → H) → RMSNorm(H) → Tanh → Linear(H → 1), Adam on the mean
// squared error. Writes rms_norm_loss.svg and rms_norm_mlp.safetensors, then
// builds a fresh model from the checkpoint and checks it predicts exactly
// what the trained one does. Exits 0 on success, 1 if the loss did not fall
// or the reloaded model differs, 2 on bad arguments.
//
//   train_rms_norm                      # 400 steps, files in the current folder
//   train_rms_norm --steps 200 --out runs
//
// Shapes: N samples, H hidden units; x: (N,2), y: (N,1).
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "plot/svg_plot.hpp"
#include "rms_norm.hpp"

using namespace attograd;

namespace {

constexpr int64_t kHidden = 16;
constexpr int64_t kSamples = 256;

struct Flags {
  int steps = 400;
  std::filesystem::path out = ".";
};

constexpr std::string_view kUsage =
    "usage: train_rms_norm [--steps N] [--out FOLDER]\n"
    "Train Linear -> RMSNorm -> Tanh -> Linear on y = sin(3 x1) cos(2 x2) + noise,\n"
    "write rms_norm_loss.svg and rms_norm_mlp.safetensors to FOLDER (default: .)\n"
    "and check that the reloaded model predicts the same.\n";

// Parameters "0.weight" (H,2), "0.bias", "1.weight" (H) — the RMSNorm gain —,
// "3.weight" (1,H), "3.bias".
std::shared_ptr<nn::Sequential> make_model(Generator& generator) {
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Linear>(nn::LinearOptions(2, kHidden), generator));
  model->push_back(std::make_shared<extension::RMSNorm>(extension::RMSNormOptions(kHidden)));
  model->push_back(std::make_shared<nn::Tanh>());
  model->push_back(std::make_shared<nn::Linear>(nn::LinearOptions(kHidden, 1), generator));
  return model;
}

int train(const Flags& flags) {
  Generator generator(3);
  const Tensor x = uniform({kSamples, 2}, -1.0, 1.0, generator);  // (N,2)
  const Tensor y = sin(select(x, 1, 0) * 3.0) * cos(select(x, 1, 1) * 2.0);
  const Tensor target = reshape(y, {kSamples, 1}) + normal({kSamples, 1}, 0.0, 0.05, generator);

  auto model = make_model(generator);
  fmt::print("{}\n", model->summary());
  nn::Adam adam(model->named_parameters(), nn::AdamOptions(0.01));
  std::vector<double> steps, losses;
  for (int step = 1; step <= flags.steps; ++step) {
    adam.zero_grad();
    Tensor loss = nn::mse_loss(model->forward(x), target);
    backward(loss);
    adam.step();
    steps.push_back(step);
    losses.push_back(loss.item());
    if (step == 1 || step % 100 == 0 || step == flags.steps)
      fmt::print("step {:4d}  loss {:.5f}\n", step, losses.back());
  }

  std::filesystem::create_directories(flags.out);
  plot::LineChart chart;
  chart.title("Linear → RMSNorm → Tanh → Linear, Adam")
      .x_label("step")
      .y_label("mean squared error")
      .line("training loss", steps, losses);
  chart.save(flags.out / "rms_norm_loss.svg");
  const std::filesystem::path checkpoint = flags.out / "rms_norm_mlp.safetensors";
  nn::save(*model, checkpoint, {{"hidden", std::to_string(kHidden)}, {"layer", "RMSNorm"}});
  fmt::print("wrote {} and {}\n", (flags.out / "rms_norm_loss.svg").string(), checkpoint.string());

  if (!(losses.back() < 0.25 * losses.front())) {
    fmt::print(stderr,
               "error: the loss fell only from {:.5f} to {:.5f} (expected below a quarter)\n",
               losses.front(), losses.back());
    return 1;
  }

  // A fresh model with other initial weights: every value must come from the file.
  Generator other(4);
  auto reloaded = make_model(other);
  nn::load(*reloaded, checkpoint);
  NoGradGuard no_grad;
  const std::vector<real> trained = model->forward(x).to_vector();
  const std::vector<real> loaded = reloaded->forward(x).to_vector();
  // Checkpoints hold float32: a double build may differ by float rounding.
  const double allowed = sizeof(real) == sizeof(float) ? 0.0 : 1e-5;
  for (size_t i = 0; i < trained.size(); ++i) {
    if (std::abs(double(trained[i]) - double(loaded[i])) > allowed) {
      fmt::print(stderr, "error: sample {}: the reloaded model predicts {} , the trained one {}\n",
                 i, loaded[i], trained[i]);
      return 1;
    }
  }
  fmt::print("the reloaded model predicts what the trained one does on all {} samples\n",
             trained.size());
  return 0;
}

// Flags, or an error message for exit status 2.
bool parse(int argc, char** argv, Flags& flags, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      fmt::print("{}", kUsage);
      std::exit(0);
    }
    if ((flag != "--steps" && flag != "--out") || i + 1 == argc) {
      error = flag.starts_with("--") && i + 1 == argc ? fmt::format("{} needs a value", flag)
                                                      : fmt::format("unknown argument '{}'", flag);
      return false;
    }
    const std::string_view value = argv[++i];
    if (flag == "--out") {
      flags.out = std::string(value);
      continue;
    }
    const auto [end, status] =
        std::from_chars(value.data(), value.data() + value.size(), flags.steps);
    if (status != std::errc() || end != value.data() + value.size() || flags.steps < 1) {
      error = fmt::format("--steps takes a positive whole number, got '{}'", value);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  std::string error;
  if (!parse(argc, argv, flags, error)) {
    fmt::print(stderr, "train_rms_norm: {}\n{}", error, kUsage);
    return 2;
  }
  try {
    return train(flags);
  } catch (const Error& failure) {
    fmt::print(stderr, "train_rms_norm: {}\n", failure.what());
    return 1;
  }
}
