// examples/fit_mlp.cpp — fit a small MLP with Adam, save it, load it back.
//
// The whole life of a model in one page: synthetic data y = sin(3x) + noise,
// an MLP 1 → H → H → 1 with tanh, Adam on the mean squared error, a
// safetensors checkpoint (which PyTorch can open), and a fresh model built
// from the checkpoint's metadata that must predict exactly what the trained
// one does.
//
//   fit_mlp                          # 1000 steps; fit_mlp.safetensors in this folder
//   fit_mlp --steps 300 --out runs   # runs/fit_mlp.safetensors
//
// Shapes: N samples, H hidden units; x, y: (N,1).
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>

#include "attograd.hpp"
#include "examples/common/cli.hpp"

using namespace attograd;

namespace {

// The limits of the flags that size the work: far above a demo's needs, they
// keep a mistyped value from asking for gigabytes (an activation is N × H
// floats: 40 MB at the limits) or hours (a step at the limits is about a
// GFLOP; the default run's 1000 steps take well under a second).
constexpr int kMaxSteps = 1000000;
constexpr int kMaxHidden = 1024;
constexpr int kMaxSamples = 10000;

struct Flags {
  std::int64_t seed = 0;
  int steps = 1000;
  int hidden = 32;
  int samples = 128;
  double lr = 0.01;
  double noise = 0.1;
  int print_every = 100;
  std::string out;  // folder for the checkpoint; "" is the current folder
};

// 1 → H → H → 1: parameters "0.weight" (H,1), "0.bias", "2.weight" (H,H), "2.bias",
// "4.weight" (1,H), "4.bias".
std::shared_ptr<nn::Sequential> make_mlp(int64_t hidden, Generator& generator) {
  auto mlp = std::make_shared<nn::Sequential>();
  mlp->push_back(std::make_shared<nn::Linear>(nn::LinearOptions(1, hidden), generator));
  mlp->push_back(std::make_shared<nn::Tanh>());
  mlp->push_back(std::make_shared<nn::Linear>(nn::LinearOptions(hidden, hidden), generator));
  mlp->push_back(std::make_shared<nn::Tanh>());
  mlp->push_back(std::make_shared<nn::Linear>(nn::LinearOptions(hidden, 1), generator));
  return mlp;
}

int run(const Flags& flags) {
  Generator generator(static_cast<uint64_t>(flags.seed));
  const int64_t n = flags.samples;
  const Tensor x = uniform({n, 1}, -1.0, 1.0, generator);                       // (N,1)
  const Tensor y = sin(x * 3.0) + normal({n, 1}, 0.0, flags.noise, generator);  // (N,1)

  auto model = make_mlp(flags.hidden, generator);
  fmt::print("{}\n{} parameters, {} samples, Adam lr {}\n\n", model->summary(),
             model->parameter_count(), n, flags.lr);

  nn::Adam adam(model->named_parameters(), nn::AdamOptions(flags.lr));
  double loss_value = 0;
  for (int step = 1; step <= flags.steps; ++step) {
    adam.zero_grad();
    Tensor loss = nn::mse_loss(model->forward(x), y);
    backward(loss);
    adam.step();
    loss_value = loss.item();
    if (step % flags.print_every == 0 || step == 1 || step == flags.steps) {
      fmt::print("step {:5d}  loss {:.5f}\n", step, loss_value);
    }
  }

  const std::filesystem::path folder = flags.out.empty() ? "." : flags.out;
  std::filesystem::create_directories(folder);
  const std::filesystem::path path = folder / "fit_mlp.safetensors";
  nn::save(*model, path,
           {{"hidden", std::to_string(flags.hidden)},
            {"steps", std::to_string(flags.steps)},
            {"seed", std::to_string(flags.seed)},
            {"final_loss", fmt::format("{:.6f}", loss_value)}});
  fmt::print("\nsaved {} ({} bytes)\n", path.string(), std::filesystem::file_size(path));

  // A fresh model, sized from the checkpoint's metadata and initialised with
  // another seed, so every value it ends up with must come from the file.
  const nn::Metadata metadata = nn::read_metadata(path);
  Generator other(static_cast<uint64_t>(flags.seed) + 1);
  auto reloaded = make_mlp(std::stoll(metadata.at("hidden")), other);
  nn::load(*reloaded, path);

  NoGradGuard no_grad;
  model->eval();
  reloaded->eval();
  const Tensor probe = reshape(linspace(-1, 1, 5), {5, 1});
  const std::vector<real> trained = model->forward(probe).to_vector();
  const std::vector<real> loaded = reloaded->forward(probe).to_vector();
  fmt::print("\n{:>6} {:>10} {:>10} {:>10}\n", "x", "sin(3x)", "trained", "reloaded");
  // Checkpoints hold float32, so a double build (-DATTOGRAD_REAL=double) may
  // differ by float rounding; the float build must match to the last bit.
  const double allowed = sizeof(real) == sizeof(float) ? 0.0 : 1e-5;
  bool identical = true;
  for (int64_t i = 0; i < probe.numel(); ++i) {
    const double at = probe.data()[i];
    fmt::print("{:6.2f} {:10.5f} {:10.5f} {:10.5f}\n", at, std::sin(3 * at), trained[i], loaded[i]);
    identical = identical && std::abs(double(trained[i]) - double(loaded[i])) <= allowed;
  }
  if (!identical) {
    fmt::print(stderr, "error: the reloaded model predicts differently from the trained one\n");
    return 1;
  }
  fmt::print("\nthe reloaded model predicts what the trained one does\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  cli::Parser parser("fit_mlp",
                     "Fit an MLP to y = sin(3x) + noise with Adam, save a safetensors "
                     "checkpoint and check that a reloaded model predicts the same.");
  parser.flag("seed", flags.seed, "random seed for data and initial weights")
      .flag("steps", flags.steps, "Adam steps", cli::size_at_most(kMaxSteps))
      .flag("hidden", flags.hidden, "hidden units per layer", cli::size_at_most(kMaxHidden))
      .flag("samples", flags.samples, "training samples", cli::size_at_most(kMaxSamples))
      .flag("lr", flags.lr, "learning rate", cli::positive())
      .flag("noise", flags.noise, "standard deviation of the noise", cli::non_negative())
      .flag("print-every", flags.print_every, "print the loss every this many steps",
            cli::positive())
      .flag("out", flags.out, "folder for fit_mlp.safetensors (default: the current folder)");
  return cli::run_main(parser, argc, argv, [&] { return run(flags); });
}
