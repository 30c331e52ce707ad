// bench/bench_ops.cpp — attograd's public ops against PyTorch, in the same run.
//
//   ./build/bench/bench_ops [--rounds N] [--no-torch]
//
// The operations a seq2seq model with attention spends its time in, each
// called through the public API exactly as a model calls it (ops and nn
// layers, autograd recording where training records): matrix products, the
// attention bmm, a GRU over a sequence forward and backward, softmax rows,
// a matrix–vector product, a GRUCell step and an output layer with its loss
// at batch 1. bench/reference/ops.py does the same work in PyTorch.
//
// Rounds alternate: attograd's cases, then the PyTorch script (when
// /usr/bin/python3 imports torch), then attograd again, so both sides see
// the same minutes of a shared host. Each figure of a round is the median of
// 7 samples of at least 20 ms of the thread's CPU time; the table gives the
// median over rounds, and the speed ratio (PyTorch's time ÷ attograd's,
// above 1 is faster) beside the goal docs/kernels.md states for it. One thread on
// both sides. Timings are for reading, never for pass/fail.
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "attograd.hpp"
#include "bench/pytorch.hpp"
#include "bench/timing.hpp"
#include "tensor/parallel.hpp"

using namespace attograd;

namespace {

using bench::kSamples;
using bench::median;
using bench::median_seconds;

struct Case {
  std::string name;  // as bench/reference/ops.py spells it
  double target;     // the speed ratio over PyTorch aimed for (docs/kernels.md)
  std::function<void()> work;
};

// Forms every parameter's gradient, as PyTorch's backward does: attograd may
// keep a weight's gradient as factors until grad() asks for it
// (autograd/fast/deferred_gradient.hpp), and that work belongs in the time.
void form_gradients(const nn::Module& module) {
  for (const Tensor& parameter : module.parameters()) (void)grad(parameter);
}

std::vector<Case> make_cases(Generator& generator) {
  std::vector<Case> cases;
  for (int64_t n : {256, 512, 1024}) {
    const Tensor a = uniform({n, n}, -1, 1, generator), b = uniform({n, n}, -1, 1, generator);
    cases.push_back({fmt::format("matmul {}^3", n), 0.95, [a, b] {
                       const NoGradGuard no_grad;
                       (void)matmul(a, b);
                     }});
  }
  {
    const Tensor a = uniform({64, 10, 256}, -1, 1, generator);
    const Tensor b = uniform({64, 256, 10}, -1, 1, generator);
    cases.push_back({"bmm (64,10,256)@(64,256,10)", 1.5, [a, b] {
                       const NoGradGuard no_grad;
                       (void)bmm(a, b);
                     }});
  }
  {
    auto gru = std::make_shared<nn::GRU>(nn::GRUOptions(256, 256), generator);
    const Tensor x = requires_grad_(randn({10, 64, 256}, generator));
    cases.push_back({"GRU fwd+bwd T10 B64 H256", 1.5, [gru, x] {
                       gru->zero_grad();
                       zero_grad(x);
                       backward(sum(gru->forward(x).output));
                       form_gradients(*gru);
                       (void)grad(x);
                     }});
  }
  {
    const Tensor logits = randn({640, 2297}, generator);
    cases.push_back({"softmax rows (640,2297)", 5, [logits] {
                       const NoGradGuard no_grad;
                       (void)softmax(logits, 1);
                     }});
    cases.push_back({"log_softmax rows (640,2297)", 5, [logits] {
                       const NoGradGuard no_grad;
                       (void)log_softmax(logits, 1);
                     }});
  }
  {
    const Tensor weight = randn({2297, 256}, generator), vector = randn({256, 1}, generator);
    cases.push_back({"matvec (2297,256)@(256)", 2.4, [weight, vector] {
                       const NoGradGuard no_grad;
                       (void)matmul(weight, vector);
                     }});
  }
  {
    auto cell = std::make_shared<nn::GRUCell>(nn::GRUCellOptions(256, 256), generator);
    const Tensor x = randn({1, 256}, generator), h = randn({1, 256}, generator);
    cases.push_back({"GRUCell forward B1 H256", 3, [cell, x, h] { (void)cell->forward(x, h); }});
  }
  {
    auto linear = std::make_shared<nn::Linear>(nn::LinearOptions(256, 2297), generator);
    const Tensor x = requires_grad_(randn({1, 256}, generator));
    cases.push_back({"Linear(256,2297)+log_softmax fwd+bwd B1", 3, [linear, x] {
                       linear->zero_grad();
                       zero_grad(x);
                       backward(nn::nll_loss(log_softmax(linear->forward(x), 1), {7}));
                       form_gradients(*linear);
                       (void)grad(x);
                     }});
  }
  return cases;
}

// PyTorch's microseconds per case, by name, from one run of the reference
// script; empty when it fails.
std::map<std::string, double> run_pytorch() {
  std::map<std::string, double> times;
  if (const auto json = bench::run_reference("ops.py", "")) {
    for (const auto& [name, micros] : json->items()) times[name] = micros.get<double>();
  }
  return times;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3;
  bool torch = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--no-torch") {
      torch = false;
    } else {
      fmt::print(stderr, "usage: bench_ops [--rounds N] [--no-torch]\n");
      return 2;
    }
  }
  torch = torch && bench::have_pytorch();
  parallel::set_num_threads(1);
  const bench::PinnedToOneCpu pinned;  // both sides on the same core
  Generator generator(1);
  const std::vector<Case> cases = make_cases(generator);

  std::map<std::string, std::vector<double>> ours, theirs;
  for (int round = 0; round < rounds; ++round) {
    for (const Case& c : cases) ours[c.name].push_back(1e6 * median_seconds(c.work));
    if (!torch) continue;
    for (const auto& [name, micros] : run_pytorch()) theirs[name].push_back(micros);
  }

  fmt::print(
      "attograd public ops against PyTorch{} (one thread, {}, {}; medians of {} round(s))\n\n",
      torch ? "" : " (not run: /usr/bin/python3 has no torch)", kernels::simd_description(),
      pinned.describe(), rounds);
  fmt::print("{:<42} {:>12} {:>12} {:>8} {:>8}\n", "operation", "attograd us", "PyTorch us",
             "speed", "target");
  for (const Case& c : cases) {
    const double our = median(ours[c.name]);
    const auto found = theirs.find(c.name);
    if (found == theirs.end()) {
      fmt::print("{:<42} {:>12.1f} {:>12} {:>8} {:>8}\n", c.name, our, "-", "-", "-");
      continue;
    }
    const double their = median(found->second);
    fmt::print("{:<42} {:>12.1f} {:>12.1f} {:>7.2f}x {:>7.2f}x\n", c.name, our, their, their / our,
               c.target);
  }
  fmt::print("\nspeed = PyTorch's time / attograd's; target: the goal docs/kernels.md states.\n");
  return 0;
}
