// tests/nn/test_module.cpp — modules built from the nn layers: dotted
// parameter names and shapes, train/eval reaching every descendant, counts,
// summary(), and a user-defined layer inside a Sequential.
#include <catch2/catch.hpp>
#include <memory>

#include "attograd.hpp"

namespace test_module {

using namespace attograd;
using Catch::Matchers::Contains;

namespace {

// A small model the way a user writes one: a Linear child and a Sequential of
// layers, including dropout.
struct Net : nn::Module {
  std::shared_ptr<nn::Linear> fc;
  std::shared_ptr<nn::Sequential> layers;
  std::shared_ptr<nn::Embedding> embed;

  Net() : nn::Module("Net") {
    embed = register_module(
        "embed", std::make_shared<nn::Embedding>(nn::EmbeddingOptions(10, 4).padding_idx(0)));
    fc = register_module("fc", std::make_shared<nn::Linear>(nn::LinearOptions(4, 3)));
    layers = register_module("layers", std::make_shared<nn::Sequential>());
    layers->push_back(std::make_shared<nn::Linear>(nn::LinearOptions(3, 3)));
    layers->push_back(std::make_shared<nn::ReLU>());
    layers->push_back(std::make_shared<nn::Dropout>(0.1));
    layers->push_back(std::make_shared<nn::Linear>(nn::LinearOptions(3, 2).bias(false)));
  }

  // ids: (N) -> (N,2)
  Tensor forward(const std::vector<int64_t>& ids) {
    return layers->forward(tanh(fc->forward(embed->forward(ids))));
  }
};

// The layer written in docs/nn.md: y = x ⊙ s + b with a learned scale and shift.
class ScaleShift : public nn::Layer {
 public:
  explicit ScaleShift(int64_t features) : nn::Layer("ScaleShift"), features_(features) {
    scale = register_parameter("scale", ones({features}));
    shift = register_parameter("shift", zeros({features}));
  }
  // x: (*, F) -> (*, F)
  Tensor forward(const Tensor& x) override { return x * scale + shift; }

  Tensor scale, shift;

 protected:
  std::string extra_repr() const override { return fmt::format("features={}", features_); }

 private:
  int64_t features_;
};

}  // namespace

TEST_CASE("Nested modules name their parameters with dots, in order", "[nn][module]") {
  Net net;
  const auto named = net.named_parameters();
  const std::vector<std::pair<std::string, Shape>> expected = {
      {"embed.weight", {10, 4}},   {"fc.weight", {3, 4}},  {"fc.bias", {3}},
      {"layers.0.weight", {3, 3}}, {"layers.0.bias", {3}}, {"layers.3.weight", {2, 3}},
  };
  REQUIRE(named.size() == expected.size());
  for (size_t i = 0; i < named.size(); ++i) {
    CHECK(named[i].first == expected[i].first);
    CHECK(named[i].second.shape() == expected[i].second);
    CHECK(requires_grad(named[i].second));
  }
  CHECK(net.parameter("fc.weight").same(net.fc->weight));
  CHECK(net.parameter("layers.0.bias")
            .same(std::static_pointer_cast<nn::Linear>(net.layers->at(0))->bias));
  CHECK_THROWS_WITH(net.parameter("fc.kernel"), Contains("fc.weight"));
}

TEST_CASE("Parameter count adds up every scalar", "[nn][module]") {
  Net net;
  CHECK(net.parameter_count() == 40 + (12 + 3) + (9 + 3) + 6);
  CHECK(nn::Linear(nn::LinearOptions(256, 10)).parameter_count() == 2570);
  CHECK(nn::Embedding(nn::EmbeddingOptions(4345, 256)).parameter_count() == 4345 * 256);
  CHECK(nn::Dropout(0.5).parameter_count() == 0);
}

TEST_CASE("train() and eval() reach every descendant", "[nn][module]") {
  Net net;
  const auto dropout = net.layers->at(2);
  CHECK(dropout->is_training());
  net.eval();
  CHECK_FALSE(net.is_training());
  CHECK_FALSE(net.fc->is_training());
  CHECK_FALSE(dropout->is_training());
  // In eval mode the model is deterministic.
  const std::vector<int64_t> ids = {1, 2, 0, 9};
  CHECK(net.forward(ids).to_vector() == net.forward(ids).to_vector());
  net.train();
  CHECK(dropout->is_training());
  CHECK(net.embed->is_training());
  // A child registered into a module in eval mode takes on that mode.
  nn::Sequential seq;
  seq.eval();
  auto late = seq.push_back(std::make_shared<nn::Dropout>(0.3));
  CHECK_FALSE(late->is_training());
}

TEST_CASE("EvalModeGuard switches to eval mode for a scope and restores the mode after",
          "[nn][module]") {
  Net net;
  const auto dropout = net.layers->at(2);
  {
    const nn::EvalModeGuard eval_mode(net);
    CHECK_FALSE(net.is_training());
    CHECK_FALSE(dropout->is_training());
  }
  CHECK(net.is_training());
  CHECK(dropout->is_training());
  // A module already in eval mode stays there.
  net.eval();
  { const nn::EvalModeGuard eval_mode(net); }
  CHECK_FALSE(net.is_training());
  CHECK_FALSE(dropout->is_training());
}

TEST_CASE("summary() prints the module tree like PyTorch", "[nn][module]") {
  Net net;
  const std::string expected =
      "Net(\n"
      "  (embed): Embedding(10, 4, padding_idx=0)\n"
      "  (fc): Linear(in_features=4, out_features=3, bias=true)\n"
      "  (layers): Sequential(\n"
      "    (0): Linear(in_features=3, out_features=3, bias=true)\n"
      "    (1): ReLU()\n"
      "    (2): Dropout(p=0.1)\n"
      "    (3): Linear(in_features=3, out_features=2, bias=false)\n"
      "  )\n"
      ")";
  CHECK(net.summary() == expected);
  CHECK(nn::Embedding(nn::EmbeddingOptions(4345, 256)).summary() == "Embedding(4345, 256)");
  CHECK(nn::Tanh().summary() == "Tanh()");
  CHECK(nn::Sigmoid().summary() == "Sigmoid()");
}

TEST_CASE("A model trains end to end: gradients reach every parameter", "[nn][module]") {
  manual_seed(42);
  Net net;
  net.eval();  // no dropout, so the check below is deterministic
  const Tensor loss = nn::cross_entropy(net.forward({3, 4, 5, 6}), {0, 1, 1, 0});
  backward(loss);
  for (const auto& [name, parameter] : net.named_parameters()) {
    INFO(name);
    REQUIRE(grad(parameter).defined());
    CHECK(grad(parameter).shape() == parameter.shape());
  }
  net.zero_grad();
  for (const Tensor& parameter : net.parameters()) CHECK_FALSE(grad(parameter).defined());
}

TEST_CASE("A user-defined layer works on its own and inside Sequential", "[nn][module]") {
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Linear>(nn::LinearOptions(2, 3)));
  auto custom = model->push_back(std::make_shared<ScaleShift>(3));
  model->push_back(std::make_shared<nn::Sigmoid>());
  CHECK(model->named_parameters()[2].first == "1.scale");
  CHECK(model->named_parameters()[3].first == "1.shift");
  CHECK(model->summary() ==
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=3, bias=true)\n"
        "  (1): ScaleShift(features=3)\n"
        "  (2): Sigmoid()\n"
        ")");

  custom->scale.copy_from(tensor({2, 2, 2}));
  custom->shift.copy_from(tensor({1, 0, -1}));
  const Tensor x = tensor({{1, -2}});
  const Tensor h = std::static_pointer_cast<nn::Linear>(model->at(0))->forward(x);
  const Tensor y = model->forward(x);
  for (int64_t j = 0; j < 3; ++j) {
    const double expected = 1 / (1 + std::exp(-(2 * h.at({0, j}) + (1 - j))));
    CHECK(y.at({0, j}) == Approx(expected));
  }
  backward(sum(y));
  CHECK(grad(custom->scale).defined());
  CHECK(grad(custom->shift).defined());
}

}  // namespace test_module
