// examples/autograd_basics.cpp — reverse-mode autodiff on one scalar expression.
//
// This is the worked example from the micrograd README, built from attograd
// ops. Every line below computes a value *and* records how to send a gradient
// back; backward(g) then visits those records from g to the leaves a and b.
//
//   a = −4, b = 2   →   g = 24.7041, dg/da = 138.8338, dg/db = 645.5773
//
//   autograd_basics --dot g.dot   # also draws the expression's graph, values
//                                 # and gradients (g.dot for Graphviz, g.svg drawn here)
#include <fmt/core.h>

#include <iostream>
#include <string>

#include "attograd.hpp"
#include "examples/common/cli.hpp"
#include "examples/common/inspect_tools.hpp"

using namespace attograd;

namespace {

int run(const std::string& dot_file) {
  Tensor a = requires_grad_(scalar(-4.0));
  Tensor b = requires_grad_(scalar(2.0));

  Tensor c = a + b;
  Tensor d = a * b + pow(b, 3);
  c = c + (c + 1.0);
  c = c + (1.0 + c + (-a));
  d = d + (d * 2.0 + relu(b + a));
  d = d + (3.0 * d + relu(b - a));
  Tensor e = c - d;
  Tensor f = pow(e, 2);
  Tensor g = f / 2.0;
  g = g + 10.0 / f;

  backward(g, Tensor(), {.retain_graph = !dot_file.empty()});  // kept for the picture
  if (!dot_file.empty()) {
    const DotOptions options = DotOptions().names({{"a", a}, {"b", b}}).show_values(true);
    cli::write_graph_files(dot_file, graph_picture(g, options), std::cout);
  }

  fmt::print("attograd: reverse-mode autodiff (kernels: {})\n", kernels::simd_description());
  fmt::print("The micrograd README expression with a = {}, b = {}:\n", a.item(), b.item());
  fmt::print("  g     = {:.4f}   (expected 24.7041)\n", g.item());
  fmt::print("  dg/da = {:.4f}  (expected 138.8338)\n", grad(a).item());
  fmt::print("  dg/db = {:.4f}  (expected 645.5773)\n", grad(b).item());

  // The same machinery on tensors: y = softmax(W x), one backward, dL/dW.
  manual_seed(0);
  Tensor W = requires_grad_(randn({3, 4}));
  Tensor x = randn({4, 1});
  Tensor y = softmax(matmul(W, x), 0);
  Tensor loss = -log(select(y, 0, 0));
  backward(sum(loss));
  fmt::print("\nA tensor example: loss = -log softmax(W x)[0]\n");
  fmt::print("W = {}\nsoftmax(W x) = {}\ndloss/dW = {}\n", W, y, grad(W));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  cli::InspectFlags flags;
  cli::Parser parser("autograd_basics",
                     "Reverse-mode autodiff on the micrograd README expression, then on a "
                     "small tensor expression.");
  cli::declare_inspect_flags(parser, flags, /*tools=*/false);
  return cli::run_main(parser, argc, argv, [&] { return run(flags.dot); });
}
