// examples/higher_order.cpp — gradients of gradients: what create_graph buys.
//
// autograd::grad(…, {.create_graph = true}) returns gradients that have graphs of
// their own, so they can be differentiated again. Four uses, each checked:
//
//   1. A Hessian-vector product H·v of an MLP's loss, the gradient of ⟨∇L, v⟩,
//      against central differences of gradients (∇L(θ + εv) − ∇L(θ − εv))/2ε.
//   2. The whole 2×2 Hessian of the Rosenbrock function, one double backward
//      per row, beside its closed form.
//   3. Newton's method on the learned width w of the Nadaraya–Watson model
//      (models/nw_regression/): L(w), L'(w) and L''(w) by double backward,
//      w ← w − L'/L'' (a line search keeps every step downhill), against the
//      seed's 100 epochs of SGD at lr 0.5; both losses drawn in one SVG.
//   4. A gradient penalty (‖∇ₓ f(x)‖², WGAN-GP's term with target norm 0)
//      trained on a toy regression, against the same training without it.
//
//   higher_order                           # the report; the picture in out/higher_order
//   higher_order --json                    # one summary line for scripts
//   higher_order --dot out/gradient.dot    # the graph of a gradient (and out/gradient.svg)
//
// Shapes: N samples, D input features (2), H hidden units (8); x: (N,D), y: (N,1).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "attograd.hpp"
#include "examples/common/cli.hpp"
#include "examples/common/inspect_tools.hpp"
#include "examples/common/output_folder.hpp"
#include "examples/common/paths_apart.hpp"
#include "models/nw_regression/nw_regression.hpp"
#include "plot/svg_plot.hpp"
#include "tensor/atomic_file.hpp"
#include "tensor/printable.hpp"

using namespace attograd;

namespace {

// The picture the program writes into --out.
constexpr const char* kPictureName = "newton_vs_sgd.svg";

// The limits of the flags that count work: 1000 times the defaults and more,
// so no real run meets them, and a mistyped 2000000000 is refused instead of
// running for hours.
constexpr int kMaxEpochs = 100000;
constexpr int kMaxSteps = 100000;

struct Flags {
  std::int64_t seed = 0;
  int epochs = 100;  // the seed's SGD schedule
  double lr = 0.5;
  int newton_steps = 20;  // at most
  double penalty = 0.1;   // λ
  int penalty_steps = 300;
  std::string out = "out/higher_order";
  std::string dot;
  bool json = false;
};

// The CPU time this thread has used, in microseconds (a busy machine does not inflate it).
double thread_cpu_us() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e6 + static_cast<double>(now.tv_nsec) * 1e-3;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// 2 → H → H → 1 with tanh, as examples/fit_mlp.cpp builds it.
std::shared_ptr<nn::Sequential> make_mlp(int64_t hidden, Generator& generator) {
  auto mlp = std::make_shared<nn::Sequential>();
  mlp->push_back(std::make_shared<nn::Linear>(nn::LinearOptions(2, hidden), generator));
  mlp->push_back(std::make_shared<nn::Tanh>());
  mlp->push_back(std::make_shared<nn::Linear>(nn::LinearOptions(hidden, hidden), generator));
  mlp->push_back(std::make_shared<nn::Tanh>());
  mlp->push_back(std::make_shared<nn::Linear>(nn::LinearOptions(hidden, 1), generator));
  return mlp;
}

// Σᵢ ⟨aᵢ, bᵢ⟩ over a list of tensors of matching shapes, as a recorded 0-d tensor.
Tensor inner_product(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  Tensor total = sum(a[0] * b[0]);
  for (size_t i = 1; i < a.size(); ++i) total = total + sum(a[i] * b[i]);
  return total;
}

// ---------------------------------------------------------------- 1. H·v of an MLP

struct HvpResult {
  int64_t parameters = 0;
  double epsilon = 0;
  double max_relative_error = 0;  // ‖Hv − FD‖∞ / ‖FD‖∞
  double hv_norm = 0;             // ‖Hv‖∞
  double backward_us = 0;         // a backward of the loss, median
  double backward_create_graph_us = 0;
  int timing_repeats = 0;
};

// The MLP's loss and its parameters, on fixed data.
struct MlpProblem {
  std::shared_ptr<nn::Sequential> model;
  std::vector<Tensor> parameters;
  Tensor x;  // (N,D)
  Tensor y;  // (N,1)

  Tensor loss() const { return nn::mse_loss(model->forward(x), y); }
};

MlpProblem make_mlp_problem(Generator& generator) {
  MlpProblem problem;
  const int64_t n = 32;
  problem.x = uniform({n, 2}, -1.0, 1.0, generator);
  const Tensor x0 = slice(problem.x, 1, 0, 1), x1 = slice(problem.x, 1, 1, 2);  // (N,1) each
  problem.y = sin(x0 * 2.0) * x1 + 0.5 * x1 * x1;                               // (N,1)
  problem.model = make_mlp(8, generator);
  problem.parameters = problem.model->parameters();
  return problem;
}

// H·v = ∂⟨∇L(θ), v⟩/∂θ: one backward that records (create_graph), one through it.
std::vector<Tensor> hessian_vector_product(const MlpProblem& problem,
                                           const std::vector<Tensor>& v) {
  const std::vector<Tensor> g =
      autograd::grad({problem.loss()}, problem.parameters, {}, {.create_graph = true});
  return autograd::grad({inner_product(g, v)}, problem.parameters);
}

// ∇L at θ + shift·v (θ is restored afterwards from `theta`, a copy).
std::vector<Tensor> gradient_at(const MlpProblem& problem, const std::vector<Tensor>& theta,
                                const std::vector<Tensor>& v, double shift) {
  for (size_t i = 0; i < theta.size(); ++i) {
    Tensor parameter = problem.parameters[i];  // a handle: writes reach the model
    real* p = parameter.data();
    for (int64_t k = 0; k < theta[i].numel(); ++k) {
      p[k] = static_cast<real>(theta[i].data()[k] + shift * v[i].data()[k]);
    }
  }
  std::vector<Tensor> g = autograd::grad({problem.loss()}, problem.parameters);
  for (size_t i = 0; i < theta.size(); ++i) {
    Tensor parameter = problem.parameters[i];
    std::copy_n(theta[i].data(), theta[i].numel(), parameter.data());
  }
  return g;
}

HvpResult check_hessian_vector_product(Generator& generator) {
  const MlpProblem problem = make_mlp_problem(generator);
  std::vector<Tensor> v, theta;
  HvpResult result;
  for (const Tensor& p : problem.parameters) {
    v.push_back(randn(p.shape(), generator));
    theta.push_back(p.clone_data());
    result.parameters += p.numel();
  }
  const std::vector<Tensor> hv = hessian_vector_product(problem, v);

  // Central differences: truncation error ~ε², rounding ~u/ε, so ε = ∛u balances
  // them (u = the element type's epsilon: 4.9e-3 in float, 6.1e-6 in double).
  result.epsilon = std::cbrt(static_cast<double>(std::numeric_limits<real>::epsilon()));
  const std::vector<Tensor> plus = gradient_at(problem, theta, v, result.epsilon);
  const std::vector<Tensor> minus = gradient_at(problem, theta, v, -result.epsilon);
  double largest = 0, worst = 0;
  for (size_t i = 0; i < hv.size(); ++i) {
    for (int64_t k = 0; k < hv[i].numel(); ++k) {
      const double numeric =
          (static_cast<double>(plus[i].data()[k]) - minus[i].data()[k]) / (2 * result.epsilon);
      largest = std::max(largest, std::abs(numeric));
      result.hv_norm = std::max(result.hv_norm, std::abs(static_cast<double>(hv[i].data()[k])));
      worst = std::max(worst, std::abs(hv[i].data()[k] - numeric));
    }
  }
  result.max_relative_error = worst / largest;

  // What create_graph costs: the same backward of the same loss, without and
  // with recording, timed alone (the forward is rebuilt, untimed, each time).
  result.timing_repeats = 201;
  std::vector<double> plain, recording;
  for (int repeat = 0; repeat < result.timing_repeats; ++repeat) {
    for (const bool create_graph : {false, true}) {
      const Tensor loss = problem.loss();
      const double start = thread_cpu_us();
      const std::vector<Tensor> g =
          autograd::grad({loss}, problem.parameters, {}, {.create_graph = create_graph});
      (create_graph ? recording : plain).push_back(thread_cpu_us() - start);
    }
  }
  result.backward_us = median(plain);
  result.backward_create_graph_us = median(recording);
  return result;
}

// ---------------------------------------------------------------- 2. Rosenbrock's Hessian

struct HessianResult {
  double a = -1.2, b = 1.0;  // the classic starting point
  double value = 0;
  double hessian[2][2] = {};
  double closed_form[2][2] = {};
  double max_abs_error = 0;
};

// f(a, b) = (1 − a)² + 100 (b − a²)²
Tensor rosenbrock(const Tensor& a, const Tensor& b) {
  return pow(1.0 - a, 2) + 100.0 * pow(b - pow(a, 2), 2);
}

// Row i of H is the gradient of ∂f/∂(a, b)ᵢ: one double backward per row.
// `picture` receives the graph of ∂f/∂a, the backward's own ops.
HessianResult rosenbrock_hessian(GraphPicture* picture) {
  HessianResult result;
  const Tensor a = requires_grad_(scalar(static_cast<real>(result.a)));
  const Tensor b = requires_grad_(scalar(static_cast<real>(result.b)));
  const Tensor f = rosenbrock(a, b);
  result.value = f.item();
  const std::vector<Tensor> g = autograd::grad({f}, {a, b}, {}, {.create_graph = true});
  if (picture) *picture = graph_picture(g[0], DotOptions().names({{"a", a}, {"b", b}}));
  for (int row = 0; row < 2; ++row) {
    const std::vector<Tensor> h = autograd::grad({g[row]}, {a, b}, {}, {.retain_graph = row == 0});
    for (int column = 0; column < 2; ++column) result.hessian[row][column] = h[column].item();
  }
  // ∂²f/∂a² = 2 − 400 (b − a²) + 800 a², ∂²f/∂a∂b = −400 a, ∂²f/∂b² = 200.
  const double a0 = result.a, b0 = result.b;
  result.closed_form[0][0] = 2 - 400 * (b0 - a0 * a0) + 800 * a0 * a0;
  result.closed_form[0][1] = result.closed_form[1][0] = -400 * a0;
  result.closed_form[1][1] = 200;
  for (int row = 0; row < 2; ++row) {
    for (int column = 0; column < 2; ++column) {
      result.max_abs_error =
          std::max(result.max_abs_error,
                   std::abs(result.hessian[row][column] - result.closed_form[row][column]));
    }
  }
  return result;
}

// ---------------------------------------------------------------- 3. Newton on NW's width

struct NewtonStep {
  double w = 0, loss = 0, first = 0, second = 0;
  std::string kind;  // how the step from here was taken
};

struct NewtonResult {
  std::vector<double> sgd_losses;  // L(w_k), k = 0 … epochs
  double sgd_w = 0;
  std::vector<NewtonStep> newton;  // one row per iterate, k = 0 … steps taken
  int steps_to_sgd_loss = -1;      // first k with L(w_k) ≤ SGD's final loss; −1: never
};

// L(w), L'(w), L''(w) at the model's current w: the loss, a backward that
// records (create_graph), and a backward through that gradient.
NewtonStep derivatives(nw_regression::NWKernelRegression& model,
                       const nw_regression::TrainingLoss& training_loss) {
  const Tensor loss = training_loss(model);
  const Tensor first = autograd::grad({loss}, {model.w}, {}, {.create_graph = true})[0];
  const Tensor second = autograd::grad({first}, {model.w})[0];
  return {model.w.item(), loss.item(), first.item(), second.item(), ""};
}

double loss_at(nw_regression::NWKernelRegression& model,
               const nw_regression::TrainingLoss& training_loss, double w) {
  NoGradGuard no_grad;
  model.w.fill_(static_cast<real>(w));
  return training_loss(model).item();
}

// Newton's step −L'/L'' where L'' > 0; where L'' ≤ 0 the quadratic model has
// no minimum, and the step is −L'/|L''| (downhill, at the curvature's scale).
// Either way a backtracking line search halves it until the loss falls by at
// least a small fraction of what the slope promises (Armijo's rule), so every
// step goes downhill. Stops after max_steps, or where no step lowers the loss.
std::vector<NewtonStep> newton(nw_regression::NWKernelRegression& model,
                               const nw_regression::TrainingLoss& training_loss, int max_steps) {
  std::vector<NewtonStep> steps;
  for (int k = 0;; ++k) {
    NewtonStep here = derivatives(model, training_loss);
    if (k == max_steps || here.first == 0) {
      steps.push_back(here);
      break;
    }
    const double curvature = std::abs(here.second) > 0 ? std::abs(here.second) : 1.0;
    double step = -here.first / curvature;
    here.kind = here.second > 0 ? "Newton" : "L'' <= 0: -L'/|L''|";
    // Halve until the loss falls enough, or until w + step rounds to w (then
    // no representable step lowers the loss: w is a minimum at this precision).
    int halvings = 0;
    bool moved = false;
    for (;; step /= 2, ++halvings) {
      if (static_cast<real>(here.w + step) == static_cast<real>(here.w)) break;
      if (loss_at(model, training_loss, here.w + step) <= here.loss + 1e-4 * here.first * step) {
        moved = true;
        break;
      }
    }
    if (!moved) {
      model.w.fill_(static_cast<real>(here.w));
      here.kind = "";
      steps.push_back(here);
      break;
    }
    if (halvings > 0) here.kind += fmt::format(", step halved {}×", halvings);
    steps.push_back(here);
  }
  return steps;
}

NewtonResult newton_against_sgd(const Flags& flags) {
  using namespace nw_regression;
  // The seed's data and initial w, drawn as nw_regression draws them.
  Generator generator(static_cast<uint64_t>(flags.seed));
  const Dataset data = make_dataset(generator);
  NWKernelRegression sgd_model(NWKernelRegressionOptions(1), generator);
  NWKernelRegression newton_model(NWKernelRegressionOptions(1));
  newton_model.w.fill_(sgd_model.w.item());  // both start from the same w
  const TrainingLoss training_loss(data.x_train, data.y_train);

  NewtonResult result;
  result.sgd_losses = train(sgd_model, data.x_train, data.y_train,
                            TrainOptions().epochs(flags.epochs).lr(flags.lr))
                          .losses;  // L(w_k) before each step: k = 0 … epochs − 1
  {
    NoGradGuard no_grad;
    result.sgd_losses.push_back(training_loss(sgd_model).item());  // after the last step
  }
  result.sgd_w = sgd_model.w.item();
  for (double loss : result.sgd_losses) {
    check(std::isfinite(loss), "SGD's loss became {} at lr {}; try a smaller --lr", loss, flags.lr);
  }

  result.newton = newton(newton_model, training_loss, flags.newton_steps);
  for (size_t k = 0; k < result.newton.size(); ++k) {
    if (result.newton[k].loss <= result.sgd_losses.back()) {
      result.steps_to_sgd_loss = static_cast<int>(k);
      break;
    }
  }
  return result;
}

plot::LineChart newton_chart(const Flags& flags, const NewtonResult& result) {
  std::vector<double> sgd_x, newton_x, newton_y;
  for (size_t k = 0; k < result.sgd_losses.size(); ++k) sgd_x.push_back(static_cast<double>(k));
  for (size_t k = 0; k < result.newton.size(); ++k) {
    newton_x.push_back(static_cast<double>(k));
    newton_y.push_back(result.newton[k].loss);
  }
  const std::string reached =
      result.steps_to_sgd_loss >= 0
          ? fmt::format("Newton reaches SGD's final loss in {} steps", result.steps_to_sgd_loss)
          : std::string("Newton does not reach SGD's final loss");
  plot::LineChart chart;
  chart.title(fmt::format("Nadaraya–Watson width w: {}", reached))
      .x_label("Step (Newton) or epoch (SGD)")
      .y_label("Σ squared error (leave-one-out)")
      .legend(plot::LegendPosition::upper_right)
      .line(fmt::format("SGD, lr {:g}", flags.lr), sgd_x, result.sgd_losses)
      .line("Newton (L', L'' by double backward)", newton_x, newton_y)
      .scatter("Newton iterates", newton_x, newton_y);
  return chart;
}

// ---------------------------------------------------------------- 4. A gradient penalty

struct PenaltyRun {
  double data_loss = 0;       // mean squared error at the end
  double gradient_norm2 = 0;  // (1/N) Σ ‖∇ₓ f(xᵢ)‖² at the end
};

struct PenaltyResult {
  PenaltyRun plain, penalised;
};

// A step function y = sign(x₀) sampled at N points: fitting it exactly needs
// a steep f, which the penalty resists.
PenaltyRun train_with_penalty(const Flags& flags, double lambda) {
  Generator generator(static_cast<uint64_t>(flags.seed) + 1);
  const int64_t n = 64;
  const Tensor x = uniform({n, 2}, -1.0, 1.0, generator);  // (N,2)
  std::vector<real> targets;
  for (int64_t i = 0; i < n; ++i) targets.push_back(x.data()[2 * i] > 0 ? real(1) : real(-1));
  const Tensor y = from_vector(targets, {n, 1});  // (N,1)
  auto model = make_mlp(16, generator);
  const auto f = [&model](const Tensor& input) { return model->forward(input); };

  nn::Adam adam(model->named_parameters(), nn::AdamOptions(0.01));
  for (int step = 0; step < flags.penalty_steps; ++step) {
    adam.zero_grad();
    Tensor loss = nn::mse_loss(f(x), y);
    if (lambda > 0) loss = loss + static_cast<real>(lambda) * nn::gradient_penalty(f, x);
    backward(loss);
    adam.step();
  }
  PenaltyRun run;
  run.gradient_norm2 = nn::gradient_penalty(f, x).item();
  NoGradGuard no_grad;
  run.data_loss = nn::mse_loss(f(x), y).item();
  return run;
}

// ---------------------------------------------------------------- the report

void print_report(const Flags& flags, const HvpResult& hvp, const HessianResult& hessian,
                  const NewtonResult& newton, const PenaltyResult& penalty,
                  const std::filesystem::path& picture) {
  fmt::print(
      "1. Hessian-vector product of an MLP's loss (2 → 8 → 8 → 1, tanh, 32 samples, {} "
      "parameters)\n",
      hvp.parameters);
  fmt::print("   H·v by double backward against central differences of gradients, ε = {:.2g}:\n",
             hvp.epsilon);
  fmt::print("   max relative error {:.2e}  (‖Hv − FD‖∞ / ‖FD‖∞; ‖Hv‖∞ = {:.4g})\n",
             hvp.max_relative_error, hvp.hv_norm);
  fmt::print("   a backward of this loss: {:.1f} µs; with create_graph: {:.1f} µs ({:.2f}×)\n",
             hvp.backward_us, hvp.backward_create_graph_us,
             hvp.backward_create_graph_us / hvp.backward_us);
  fmt::print("   (thread CPU time, median of {} of each)\n\n", hvp.timing_repeats);

  fmt::print(
      "2. Hessian of Rosenbrock's f(a, b) = (1 − a)² + 100 (b − a²)² at ({:g}, {:g}), "
      "f = {:g}\n",
      hessian.a, hessian.b, hessian.value);
  fmt::print("   {:<12} {:>16} {:>14}\n", "", "double backward", "closed form");
  const char* names[2][2] = {{"∂²f/∂a²", "∂²f/∂a∂b"}, {"∂²f/∂b∂a", "∂²f/∂b²"}};
  for (int row = 0; row < 2; ++row) {
    for (int column = 0; column < 2; ++column) {
      fmt::print("   {:<12} {:>16.6g} {:>14.6g}\n", names[row][column],
                 hessian.hessian[row][column], hessian.closed_form[row][column]);
    }
  }
  fmt::print("   largest difference {:.3g}\n\n", hessian.max_abs_error);

  fmt::print(
      "3. Newton's method on the Nadaraya–Watson width w (seed {}, the seed's data and "
      "leave-one-out loss)\n",
      flags.seed);
  fmt::print("   {:>4} {:>10} {:>12} {:>12} {:>12}  {}\n", "step", "w", "L(w)", "L'(w)", "L''(w)",
             "step taken");
  for (size_t k = 0; k < newton.newton.size(); ++k) {
    const NewtonStep& s = newton.newton[k];
    fmt::print("   {:>4} {:>10.5f} {:>12.6f} {:>12.4g} {:>12.4g}  {}\n", k, s.w, s.loss, s.first,
               s.second, s.kind);
  }
  fmt::print("   SGD, lr {:g}: after {} epochs w = {:.5f}, L = {:.6f}\n", flags.lr, flags.epochs,
             newton.sgd_w, newton.sgd_losses.back());
  if (newton.steps_to_sgd_loss >= 0) {
    fmt::print("   Newton reaches SGD's final loss in {} steps (its final L = {:.6f})\n\n",
               newton.steps_to_sgd_loss, newton.newton.back().loss);
  } else {
    fmt::print("   Newton does not reach SGD's final loss in {} steps (its final L = {:.6f})\n\n",
               newton.newton.size() - 1, newton.newton.back().loss);
  }

  fmt::print(
      "4. Gradient penalty λ·(1/N) Σ ‖∇ₓ f(xᵢ)‖² on a step function (MLP 2 → 16 → 16 → 1, "
      "64 samples, {} Adam steps)\n",
      flags.penalty_steps);
  fmt::print("   {:<18} {:>12} {:>16}\n", "", "data MSE", "mean ‖∇ₓ f‖²");
  fmt::print("   {:<18} {:>12.5f} {:>16.5f}\n", "without", penalty.plain.data_loss,
             penalty.plain.gradient_norm2);
  fmt::print("   {:<18} {:>12.5f} {:>16.5f}\n\n", fmt::format("with λ = {:g}", flags.penalty),
             penalty.penalised.data_loss, penalty.penalised.gradient_norm2);
  fmt::print("picture: {}\n", printable(picture.string(), 300));
}

void print_json_summary(const Flags& flags, const HvpResult& hvp, const HessianResult& hessian,
                        const NewtonResult& newton, const PenaltyResult& penalty,
                        const std::filesystem::path& picture) {
  nlohmann::json summary = {
      {"seed", flags.seed},
      {"newton_steps",
       newton.steps_to_sgd_loss >= 0 ? nlohmann::json(newton.steps_to_sgd_loss) : nullptr},
      {"newton_steps_run", newton.newton.size() - 1},
      {"newton_final_loss", newton.newton.back().loss},
      {"newton_w", newton.newton.back().w},
      {"sgd_epochs", flags.epochs},
      {"sgd_lr", flags.lr},
      {"sgd_final_loss", newton.sgd_losses.back()},
      {"sgd_w", newton.sgd_w},
      {"hvp_max_relative_error", hvp.max_relative_error},
      {"hvp_epsilon", hvp.epsilon},
      {"hvp_parameters", hvp.parameters},
      {"backward_us", hvp.backward_us},
      {"backward_create_graph_us", hvp.backward_create_graph_us},
      {"hessian",
       {{hessian.hessian[0][0], hessian.hessian[0][1]},
        {hessian.hessian[1][0], hessian.hessian[1][1]}}},
      {"hessian_closed_form",
       {{hessian.closed_form[0][0], hessian.closed_form[0][1]},
        {hessian.closed_form[1][0], hessian.closed_form[1][1]}}},
      {"hessian_max_abs_error", hessian.max_abs_error},
      {"penalty_lambda", flags.penalty},
      {"penalty_steps", flags.penalty_steps},
      {"penalty_data_loss", penalty.penalised.data_loss},
      {"penalty_gradient_norm2", penalty.penalised.gradient_norm2},
      {"plain_data_loss", penalty.plain.data_loss},
      {"plain_gradient_norm2", penalty.plain.gradient_norm2},
      {"picture", picture.string()},
  };
  fmt::print("{}\n", summary.dump());
}

int run(const Flags& flags) {
  const std::filesystem::path out = flags.out;
  cli::PathsApart paths;  // before any work: the picture and --dot's files are three files
  paths.writes("--out", out / kPictureName);
  cli::add_dot_outputs(paths, flags.dot);
  paths.check();
  cli::prepare_output_folder("--out", out);  // before any work: fail fast

  Generator generator(static_cast<uint64_t>(flags.seed));
  const HvpResult hvp = check_hessian_vector_product(generator);
  GraphPicture gradient_graph;
  const HessianResult hessian = rosenbrock_hessian(flags.dot.empty() ? nullptr : &gradient_graph);
  const NewtonResult newton = newton_against_sgd(flags);
  const PenaltyResult penalty{train_with_penalty(flags, 0.0),
                              train_with_penalty(flags, flags.penalty)};

  const std::string svg = newton_chart(flags, newton).to_svg();  // drawn before anything is written
  cli::OutputSet set(out);
  write_file_atomically(set.staged(kPictureName), svg);
  set.commit();
  if (!flags.dot.empty())
    cli::write_graph_files(flags.dot, gradient_graph, flags.json ? std::cerr : std::cout);

  if (flags.json) {
    print_json_summary(flags, hvp, hessian, newton, penalty, out / kPictureName);
  } else {
    print_report(flags, hvp, hessian, newton, penalty, out / kPictureName);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  cli::Parser parser(
      "higher_order",
      "Gradients of gradients (autograd::grad with create_graph): a Hessian-vector\n"
      "product of an MLP's loss checked against finite differences, the Hessian of\n"
      "Rosenbrock's function, Newton's method on the Nadaraya-Watson width w against\n"
      "the seed's SGD (one SVG), and a gradient penalty on a toy regression.");
  parser
      .flag("seed", flags.seed, "random seed for the data and the initial weights",
            cli::non_negative())
      .flag("epochs", flags.epochs, "SGD epochs on the Nadaraya-Watson width (the seed's 100)",
            cli::size_at_most(kMaxEpochs))
      .flag("lr", flags.lr, "SGD learning rate (the seed's 0.5)", cli::positive())
      .flag("newton-steps", flags.newton_steps, "at most this many Newton steps",
            cli::size_at_most(kMaxSteps))
      .flag("penalty", flags.penalty, "weight lambda of the gradient penalty", cli::positive())
      .flag("penalty-steps", flags.penalty_steps, "Adam steps of each gradient-penalty training",
            cli::size_at_most(kMaxSteps))
      .flag("out", flags.out, "folder for the picture newton_vs_sgd.svg (created if missing)")
      .flag("dot", flags.dot,
            "write the graph of the gradient df/da of Rosenbrock's f to this file in Graphviz DOT "
            "and as an SVG picture beside it (FILE.svg; drawn without Graphviz)")
      .flag("json", flags.json, "print one JSON summary line instead of the report");
  return cli::run_main(parser, argc, argv, [&] { return run(flags); });
}
