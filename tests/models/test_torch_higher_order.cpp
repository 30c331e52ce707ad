// tests/models/test_torch_higher_order.cpp — second derivatives against
// PyTorch's, in double: Hessian-vector products of a small MLP's loss and of
// the NW model's training loss (scalar and vector w) against
// torch.autograd.functional.hvp, and the gradient of the gradient penalty
// ‖∂L/∂θ‖² of a tiny tutorial seq2seq step (both decoders) against
// torch.autograd.grad twice. Each product is formed on the fast path and
// under fast::ReferencePath.
//
// The test writes the weights, the data and the direction as JSON (doubles
// in 17 digits, so they reach Python exactly), tests/support/torch_higher_order.py
// computes in PyTorch with one thread and writes JSON back, and the
// comparison is made here.
//
// Tagged [f64] and [torch-double], not [torch]: the comparison needs the
// double build, and the double binary runs everything but [torch]. Needs
// /usr/bin/python3 with torch; without it each case warns "skipped: torch not
// installed" and passes.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/fast/fast.hpp"
#include "autograd/ops.hpp"
#include "models/nw_regression/nw_regression.hpp"
#include "models/seq2seq/seq2seq.hpp"
#include "nn/linear.hpp"
#include "nn/loss.hpp"
#include "tensor/factory.hpp"
#include "tensor/random.hpp"
#include "tests/support/program.hpp"
#include "tests/support/python.hpp"

namespace test_torch_higher_order {

using namespace attograd;
using namespace attograd::testing;
using nlohmann::json;

namespace {

const std::filesystem::path kScript =
    std::filesystem::path(ATTOGRAD_SOURCE_DIR) / "tests" / "support" / "torch_higher_order.py";

// PyTorch and attograd compute the same function with the same double
// rounding per op but not the same order of every sum (a GRU gate's
// products, a softmax's normaliser): 1e-10 relative to the largest entry
// is the bar and leaves six digits of room over double rounding.
constexpr double kTolerance = 1e-10;

using Named = std::vector<std::pair<std::string, Tensor>>;

json to_json(const std::string& name, const Tensor& t) {
  std::vector<double> values;
  for (real x : t.to_vector()) values.push_back(static_cast<double>(x));
  return {{"name", name}, {"shape", t.shape().to_vector()}, {"values", values}};
}

json to_json(const Named& named) {
  json list = json::array();
  for (const auto& [name, t] : named) list.push_back(to_json(name, t));
  return list;
}

// Runs the script on `problem`, returns what it wrote.
json torch_answer(const json& problem) {
  const TemporaryFolder scratch("attograd_torch_higher_order");
  const std::filesystem::path in = scratch.path / "problem.json",
                              out = scratch.path / "answer.json";
  write_file(in, problem.dump());
  const ProgramRun run =
      run_program(kPython, {kScript.string(), in.string(), out.string()}, scratch.path);
  INFO("python3 torch_higher_order.py failed:\n" << run.err);
  REQUIRE(run.status == 0);
  return json::parse(read_file(out));
}

// ours[i] against theirs[name of i], relative to the largest |theirs| entry
// over all of them; returns that relative difference.
double relative_difference(const Named& ours, const json& theirs) {
  double worst = 0, largest = 0;
  for (const auto& [name, t] : ours) {
    INFO("tensor " << name);
    REQUIRE(theirs.contains(name));
    const std::vector<double> expected = theirs.at(name).get<std::vector<double>>();
    const std::vector<real> got = t.to_vector();
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, std::abs(static_cast<double>(got[i]) - expected[i]));
      largest = std::max(largest, std::abs(expected[i]));
    }
  }
  REQUIRE(largest > 0);
  return worst / largest;
}

// H v of `loss` at `parameters` by double backward.
std::vector<Tensor> hessian_vector_product(const std::function<Tensor()>& loss,
                                           const std::vector<Tensor>& parameters,
                                           const std::vector<Tensor>& v) {
  const std::vector<Tensor> g = autograd::grad({loss()}, parameters, {}, {.create_graph = true});
  Tensor g_dot_v;
  for (size_t i = 0; i < g.size(); ++i) {
    const Tensor term = sum(mul(g[i], v[i]));
    g_dot_v = g_dot_v.defined() ? add(g_dot_v, term) : term;
  }
  return autograd::grad({g_dot_v}, parameters);
}

Named with_names(const Named& parameters, const std::vector<Tensor>& values) {
  Named out;
  for (size_t i = 0; i < parameters.size(); ++i) out.emplace_back(parameters[i].first, values[i]);
  return out;
}

std::vector<Tensor> tensors_of(const Named& named) {
  std::vector<Tensor> out;
  for (const auto& entry : named) out.push_back(entry.second);
  return out;
}

// Hv of `loss` on both paths against PyTorch's answer to `problem` (which
// holds the parameters, the data and v).
void check_hvp_against_torch(const std::function<Tensor()>& loss, const Named& parameters,
                             const std::vector<Tensor>& v, json problem) {
  problem["parameters"] = to_json(parameters);
  problem["v"] = to_json(with_names(parameters, v));
  const json theirs = torch_answer(problem);
  for (const bool reference_path : {false, true}) {
    INFO((reference_path ? "reference path" : "fast path"));
    std::optional<fast::ReferencePath> reference;
    if (reference_path) reference.emplace();
    CHECK(loss().item() == Approx(theirs.at("loss").get<double>()).epsilon(1e-12));
    const std::vector<Tensor> hv = hessian_vector_product(loss, tensors_of(parameters), v);
    const double difference = relative_difference(with_names(parameters, hv), theirs.at("hvp"));
    INFO("H v against torch.autograd.functional.hvp: " << difference << " relative");
    CHECK(difference <= kTolerance);
  }
}

std::vector<Tensor> random_direction(const Named& parameters, uint64_t seed) {
  Generator generator(seed);
  std::vector<Tensor> v;
  for (const auto& entry : parameters) v.push_back(uniform(entry.second.shape(), -1, 1, generator));
  return v;
}

}  // namespace

TEST_CASE("higher order against PyTorch: an MLP's Hessian-vector product",
          "[higher-order][f64][torch-double]") {
  if (!torch_installed()) return;
  Generator generator(21);
  nn::Linear hidden1(nn::LinearOptions(3, 6), generator),
      hidden2(nn::LinearOptions(6, 5), generator), out(nn::LinearOptions(5, 4), generator);
  const Tensor x = randn({7, 3}, generator);
  const std::vector<int64_t> labels = {0, 3, 1, 2, 2, 0, 1};
  const Named parameters = {{"hidden1.weight", hidden1.weight}, {"hidden1.bias", hidden1.bias},
                            {"hidden2.weight", hidden2.weight}, {"hidden2.bias", hidden2.bias},
                            {"out.weight", out.weight},         {"out.bias", out.bias}};
  const auto loss = [&] {
    return nn::cross_entropy(out.forward(sigmoid(hidden2.forward(tanh(hidden1.forward(x))))),
                             labels);
  };
  const json problem = {{"kind", "mlp"}, {"x", to_json("x", x)}, {"labels", labels}};
  check_hvp_against_torch(loss, parameters, random_direction(parameters, 4), problem);
}

TEST_CASE("higher order against PyTorch: the NW model's Hessian-vector product",
          "[higher-order][f64][torch-double][nw_regression]") {
  if (!torch_installed()) return;
  for (const int64_t weight_count : {1, 49}) {
    INFO("w of " << weight_count << " entries");
    Generator generator(0);
    const nw_regression::Dataset data = nw_regression::make_dataset(generator);
    nw_regression::NWKernelRegression model(nw_regression::NWKernelRegressionOptions(weight_count),
                                            generator);
    const Tensor keys = nw_regression::leave_one_out(data.x_train);    // (N, N−1)
    const Tensor values = nw_regression::leave_one_out(data.y_train);  // (N, N−1)
    // The seed's training loss, Σᵢ (f̂(xᵢ) − yᵢ)², at w's initial values.
    const auto loss = [&] {
      return nn::mse_loss(model.forward(data.x_train, keys, values), data.y_train,
                          nn::Reduction::sum);
    };
    const json problem = {{"kind", "nw"},
                          {"x", to_json("x", data.x_train)},
                          {"y", to_json("y", data.y_train)},
                          {"keys", to_json("keys", keys)},
                          {"values", to_json("values", values)}};
    const Named parameters = {{"w", model.w}};
    check_hvp_against_torch(loss, parameters, random_direction(parameters, 8), problem);
  }
}

TEST_CASE("higher order against PyTorch: the gradient penalty of a tutorial seq2seq step",
          "[higher-order][f64][torch-double][seq2seq]") {
  if (!torch_installed()) return;
  for (const auto decoder : {seq2seq::DecoderKind::location, seq2seq::DecoderKind::bahdanau}) {
    INFO("decoder " << seq2seq::to_string(decoder));
    Generator generator(13);
    const seq2seq::Seq2SeqOptions options =
        seq2seq::Seq2SeqOptions(9, 10).hidden_size(5).max_length(5).dropout(0).decoder(decoder);
    seq2seq::Seq2Seq model(options, generator);
    const std::vector<int64_t> source = {3, 5, 4, seq2seq::kEos}, target = {6, 8, 7, seq2seq::kEos};
    const Named parameters = model.named_parameters();
    json problem = {{"kind", "seq2seq"},
                    {"decoder", std::string(seq2seq::to_string(decoder))},
                    {"hidden_size", options.hidden_size()},
                    {"max_length", options.max_length()},
                    {"source_vocabulary", options.source_vocabulary()},
                    {"target_vocabulary", options.target_vocabulary()},
                    {"source", source},
                    {"target", target},
                    {"parameters", to_json(parameters)}};
    const json theirs = torch_answer(problem);

    for (const bool reference_path : {false, true}) {
      INFO((reference_path ? "reference path" : "fast path"));
      std::optional<fast::ReferencePath> reference;
      if (reference_path) reference.emplace();
      const Tensor loss = model.pair_loss(source, target, /*teacher_forcing=*/true).total;
      CHECK(loss.item() == Approx(theirs.at("loss").get<double>()).epsilon(1e-12));
      // P(θ) = Σ_θ ‖∂L/∂θ‖², then ∂P/∂θ = 2 H ∂L/∂θ.
      const std::vector<Tensor> g =
          autograd::grad({loss}, tensors_of(parameters), {}, {.create_graph = true});
      Tensor penalty;
      for (const Tensor& gradient : g) {
        const Tensor term = sum(mul(gradient, gradient));
        penalty = penalty.defined() ? add(penalty, term) : term;
      }
      const double first = relative_difference(with_names(parameters, g), theirs.at("gradient"));
      INFO("∂L/∂θ against PyTorch's: " << first << " relative");
      CHECK(first <= kTolerance);
      CHECK(penalty.item() == Approx(theirs.at("penalty").get<double>()).epsilon(1e-10));
      const std::vector<Tensor> penalty_gradient =
          autograd::grad({penalty}, tensors_of(parameters));
      const double second = relative_difference(with_names(parameters, penalty_gradient),
                                                theirs.at("penalty_gradient"));
      INFO("∂‖∂L/∂θ‖²/∂θ against PyTorch's: " << second << " relative");
      CHECK(second <= kTolerance);
    }
  }
}

}  // namespace test_torch_higher_order
