// tests/nn/test_torch_optim.cpp — the GPT recipe's two new pieces against
// PyTorch's, in double: AdamW (nanoGPT's settings, two parameter groups, the
// second without weight decay) step for step against torch.optim.AdamW, and
// GELU's tanh form, its gradient and its second derivative against
// torch.nn.functional.gelu(approximate="tanh").
//
// The test writes the problem as JSON (doubles in 17 digits),
// tests/support/torch_optim.py answers with one thread, and the comparison
// is made here. Tagged [f64][torch-double] like test_torch_higher_order.cpp:
// the double binary runs it; without torch each case returns (CI requires
// torch, tests/support/python.hpp).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "nn/module.hpp"
#include "nn/optim.hpp"
#include "tensor/factory.hpp"
#include "tensor/random.hpp"
#include "tests/support/program.hpp"
#include "tests/support/python.hpp"

namespace test_torch_optim {

using namespace attograd;
using namespace attograd::testing;
using nlohmann::json;

namespace {

const std::filesystem::path kScript =
    std::filesystem::path(ATTOGRAD_SOURCE_DIR) / "tests" / "support" / "torch_optim.py";

json to_json(const std::string& name, const Tensor& t) {
  std::vector<double> values;
  for (real x : t.to_vector()) values.push_back(static_cast<double>(x));
  return {{"name", name}, {"shape", t.shape().to_vector()}, {"values", values}};
}

json torch_answer(const json& problem) {
  const TemporaryFolder scratch("attograd_torch_optim");
  const std::filesystem::path in = scratch.path / "problem.json",
                              out = scratch.path / "answer.json";
  write_file(in, problem.dump());
  const ProgramRun run =
      run_program(kPython, {kScript.string(), in.string(), out.string()}, scratch.path);
  INFO("python3 torch_optim.py failed:\n" << run.err);
  REQUIRE(run.status == 0);
  return json::parse(read_file(out));
}

// The largest |ours − theirs| relative to the largest |theirs|.
double relative_difference(const Tensor& ours, const json& theirs) {
  const std::vector<double> expected = theirs.get<std::vector<double>>();
  const std::vector<real> got = ours.to_vector();
  REQUIRE(got.size() == expected.size());
  double worst = 0, largest = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(double(got[i]) - expected[i]));
    largest = std::max(largest, std::abs(expected[i]));
  }
  return worst / std::max(largest, 1e-300);
}

struct TwoGroups : nn::Module {
  Tensor weight, bias;
  explicit TwoGroups(Generator& generator) : nn::Module("TwoGroups") {
    weight = register_parameter("weight", randn({3, 4}, generator));
    bias = register_parameter("bias", randn({4}, generator));
  }
};

}  // namespace

TEST_CASE("AdamW against torch.optim.AdamW step for step (nanoGPT's settings, two groups)",
          "[optim][f64][torch-double]") {
  if (!torch_installed()) return;
  Generator generator(49);
  TwoGroups model(generator);
  const double lr = 6e-3, eps = 1e-8;
  nn::AdamW adamw({{.parameters = {{"weight", model.weight}}, .lr = {}, .weight_decay = {}},
                   {.parameters = {{"bias", model.bias}}, .lr = {}, .weight_decay = 0.0}},
                  nn::AdamOptions(lr).betas(0.9, 0.99).eps(eps).weight_decay(0.1));
  json problem = {{"kind", "adamw"},
                  {"lr", lr},
                  {"betas", {0.9, 0.99}},
                  {"eps", eps},
                  {"parameters", {to_json("weight", model.weight), to_json("bias", model.bias)}},
                  {"groups",
                   {{{"names", {"weight"}}, {"weight_decay", 0.1}},
                    {{"names", {"bias"}}, {"weight_decay", 0.0}}}},
                  {"gradients", json::array()}};
  std::vector<std::pair<Tensor, Tensor>> after;  // (weight, bias) after each step
  for (int step = 0; step < 6; ++step) {
    // A gradient of its own each step, some entries large, some small.
    const Tensor gw = randn({3, 4}, generator) * real(step % 2 == 0 ? 1.0 : 1e-3);
    const Tensor gb = randn({4}, generator);
    problem["gradients"].push_back({to_json("weight", gw), to_json("bias", gb)});
    adamw.zero_grad();
    backward(add(sum(mul(model.weight, gw)), sum(mul(model.bias, gb))));
    adamw.step();
    after.emplace_back(model.weight.clone_data(), model.bias.clone_data());
  }
  const json answer = torch_answer(problem);
  REQUIRE(answer["steps"].size() == after.size());
  for (size_t step = 0; step < after.size(); ++step) {
    INFO("step " << step + 1);
    // torch forms m as β₁m + (1 − β₁)g, the kernel as m + (1 − β₁)(g − m):
    // the same number but for an ulp of double at each step.
    CHECK(relative_difference(after[step].first, answer["steps"][step]["weight"]) < 1e-13);
    CHECK(relative_difference(after[step].second, answer["steps"][step]["bias"]) < 1e-13);
  }
}

TEST_CASE("gelu, its gradient and its second derivative against PyTorch's tanh form",
          "[autograd][f64][torch-double]") {
  if (!torch_installed()) return;
  Generator generator(50);
  // −6 … 6 across the bend, sizes past a SIMD tail.
  const Tensor x = (rand({37}, generator) - real(0.5)) * real(12);
  const Tensor w = randn({37}, generator), u = randn({37}, generator);
  const Tensor xv = requires_grad_(x.clone_data());
  const Tensor y = gelu(xv);
  const Tensor dx = autograd::grad({sum(mul(w, y))}, {xv}, {}, {.create_graph = true})[0];
  const Tensor ddx = autograd::grad({sum(mul(u, dx))}, {xv})[0];
  const json answer = torch_answer(
      {{"kind", "gelu"}, {"x", to_json("x", x)}, {"w", to_json("w", w)}, {"u", to_json("u", u)}});
  // One tanh and a handful of products each: a few ulp of double.
  CHECK(relative_difference(y, answer["y"]) < 1e-14);
  CHECK(relative_difference(dx, answer["dx"]) < 1e-14);
  CHECK(relative_difference(ddx, answer["ddx"]) < 1e-13);
}

}  // namespace test_torch_optim
