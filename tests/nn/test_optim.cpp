// tests/nn/test_optim.cpp — SGD, Adam and AdamW against steps worked out by hand on
// f(p) = Σ (p − c)², zero_grad, skipped parameters, learning-rate groups,
// saving and loading optimizer state (exact resume), and gradient clipping.
//
// The expected values are written out below each test's comment; the
// gradients come from the real engine (backward through sum((p − c)²)).
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "autograd/engine.hpp"
#include "autograd/fast/fast.hpp"
#include "autograd/ops.hpp"
#include "nn/gru.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "nn/optim.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"

namespace test_optim {

using namespace attograd;
using Catch::Matchers::Contains;

namespace {

// A module with one parameter vector p.
struct Point : nn::Module {
  Tensor p;
  explicit Point(const std::vector<real>& start) : nn::Module("Point") {
    p = register_parameter("p", from_vector(start));
  }
};

// Fills p's gradient with ∇ Σ (p − c)² = 2(p − c).
void quadratic_backward(const Tensor& p, const std::vector<real>& c) {
  backward(sum(pow(p - from_vector(c), 2)));
}

// Runs `steps` steps of `optimizer` on the quadratic and returns p after each.
std::vector<std::vector<real>> descend(nn::Optimizer& optimizer, const Tensor& p,
                                       const std::vector<real>& c, int steps) {
  std::vector<std::vector<real>> trajectory;
  for (int i = 0; i < steps; ++i) {
    optimizer.zero_grad();
    quadratic_backward(p, c);
    optimizer.step();
    trajectory.push_back(p.to_vector());
  }
  return trajectory;
}

// The float build rounds every operation to 24 bits; the double build must
// match the hand values (themselves computed in double) almost exactly.
double tolerance() { return sizeof(real) == sizeof(float) ? 2e-6 : 1e-12; }

void check_trajectory(const std::vector<std::vector<real>>& actual,
                      const std::vector<std::vector<double>>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t step = 0; step < expected.size(); ++step) {
    REQUIRE(actual[step].size() == expected[step].size());
    for (size_t i = 0; i < expected[step].size(); ++i) {
      INFO("step " << step + 1 << ", element " << i);
      CHECK(actual[step][i] == Approx(expected[step][i]).margin(tolerance()).epsilon(0));
    }
  }
}

// A two-parameter model whose loss uses both: L = Σ (W x + b − y)².
struct Affine : nn::Module {
  Tensor weight, bias;
  explicit Affine(uint64_t seed) : nn::Module("Affine") {
    Generator generator(seed);
    weight = register_parameter("weight", randn({2, 3}, generator));
    bias = register_parameter("bias", randn({2}, generator));
  }
  void backward_once() {
    const Tensor x = from_vector({0.5, -1.0, 2.0}, {3, 1});
    const Tensor y = from_vector({1.0, -1.0}, {2, 1});
    backward(sum(pow(matmul(weight, x) + reshape(bias, {2, 1}) - y, 2)));
  }
};

void copy_parameters(const nn::Module& from, nn::Module& to) {
  auto source = from.named_parameters();
  auto target = to.named_parameters();
  REQUIRE(source.size() == target.size());
  for (size_t i = 0; i < source.size(); ++i) target[i].second.copy_from(source[i].second);
}

void train(nn::Optimizer& optimizer, Affine& model, int steps) {
  for (int i = 0; i < steps; ++i) {
    optimizer.zero_grad();
    model.backward_once();
    optimizer.step();
  }
}

}  // namespace

// ---- SGD ---------------------------------------------------------------------

TEST_CASE("SGD without momentum steps p ← p − lr·2(p − c)", "[optim]") {
  // p₀ = 1, c = 3, lr = 0.1:
  //   g = 2(1 − 3)     = −4     p₁ = 1 + 0.4     = 1.4
  //   g = 2(1.4 − 3)   = −3.2   p₂ = 1.4 + 0.32  = 1.72
  //   g = 2(1.72 − 3)  = −2.56  p₃ = 1.72 + 0.256 = 1.976
  Point point({1});
  nn::SGD sgd(point.named_parameters(), nn::SGDOptions(0.1));
  check_trajectory(descend(sgd, point.p, {3}, 3), {{1.4}, {1.72}, {1.976}});
  CHECK(sgd.step_count() == 3);
}

TEST_CASE("SGD with momentum keeps b ← μ·b + g, starting from b = g", "[optim]") {
  // p₀ = 1, c = 3, lr = 0.1, μ = 0.9:
  //   g = −4                 b = −4                       p₁ = 1 + 0.4    = 1.4
  //   g = 2(1.4 − 3) = −3.2  b = 0.9·(−4) − 3.2  = −6.8   p₂ = 1.4 + 0.68 = 2.08
  //   g = 2(2.08 − 3) = −1.84 b = 0.9·(−6.8) − 1.84 = −7.96 p₃ = 2.08 + 0.796 = 2.876
  Point point({1});
  nn::SGD sgd(point.named_parameters(), nn::SGDOptions(0.1).momentum(0.9));
  check_trajectory(descend(sgd, point.p, {3}, 3), {{1.4}, {2.08}, {2.876}});
  const nn::NamedTensors state = sgd.state();
  REQUIRE(state.size() == 2);
  CHECK(state[0].first == "step");
  CHECK(state[0].second.item() == 3);
  CHECK(state[1].first == "momentum_buffer.p");
  CHECK(state[1].second.item() == Approx(-7.96).margin(tolerance()));
}

TEST_CASE("SGD weight decay adds wd·p to the gradient", "[optim]") {
  // p₀ = 1, c = 3, lr = 0.1, wd = 0.5: d = 2(p − 3) + 0.5p = 2.5p − 6
  //   d = −3.5      p₁ = 1 + 0.35        = 1.35
  //   d = −2.625    p₂ = 1.35 + 0.2625   = 1.6125
  //   d = −1.96875  p₃ = 1.6125 + 0.196875 = 1.809375
  Point point({1});
  nn::SGD sgd(point.named_parameters(), nn::SGDOptions(0.1).weight_decay(0.5));
  check_trajectory(descend(sgd, point.p, {3}, 3), {{1.35}, {1.6125}, {1.809375}});
}

// ---- Adam --------------------------------------------------------------------

TEST_CASE("Adam matches three steps worked by hand, bias correction included", "[optim]") {
  // p₀ = (1, −2), c = (3, 1), lr = 0.1, β = (0.9, 0.999), ε = 1e−8. Element 0:
  //  t=1: g = −4;  m = 0.1·(−4) = −0.4;  v = 0.001·16 = 0.016
  //       m̂ = −0.4/(1−0.9) = −4;  v̂ = 0.016/(1−0.999) = 16
  //       p₁ = 1 − 0.1·(−4)/(√16 + 1e−8) = 1.09999999975
  //       (without the correction: 1 − 0.1·(−0.4)/√0.016 = 1.316 — a different number)
  //  t=2: g = 2(p₁ − 3) = −3.8000000005
  //       m = 0.9·(−0.4) + 0.1·g = −0.74000000005;  v = 0.999·0.016 + 0.001·g² = 0.030424000004
  //       m̂ = m/(1 − 0.81) = −3.89473684237;  v̂ = v/(1 − 0.998001) = 15.2196098068
  //       p₂ = p₁ + 0.1·3.89473684237/(3.90123183197 + 1e−8) = 1.19983351388
  //  t=3: g = −3.60033297223;  m = −1.02603329727;  v = 0.0433559735147
  //       m̂ = m/(1 − 0.729) = −3.78610072793;  v̂ = v/(1 − 0.997002999) = 14.4664528022
  //       p₃ = p₂ + 0.1·3.78610072793/3.80347903928 = 1.29937660795
  // Element 1 the same way from g = −6: −1.90000000017, −1.80010270741, −1.70038152345.
  Point point({1, -2});
  nn::Adam adam(point.named_parameters(), nn::AdamOptions(0.1));
  check_trajectory(descend(adam, point.p, {3, 1}, 3), {{1.09999999975, -1.9000000001666666},
                                                       {1.1998335138842988, -1.8001027074147888},
                                                       {1.2993766079535347, -1.7003815234507471}});
  const nn::NamedTensors state = adam.state();
  REQUIRE(state.size() == 4);
  CHECK(state[0].first == "step");
  CHECK(state[1].first == "exp_avg.p");
  CHECK(state[2].first == "exp_avg_sq.p");
  CHECK(state[3].first == "step.p");
  CHECK(state[1].second.to_vector()[0] == Approx(-1.0260332972681399).margin(tolerance()));
  CHECK(state[2].second.to_vector()[1] == Approx(0.1008966966921494).margin(tolerance()));
  CHECK(state[3].second.item() == 3);
}

TEST_CASE("Adam weight decay is an L2 term in the gradient (not AdamW)", "[optim]") {
  // p₀ = 1, c = 3, wd = 0.5: d = 2.5p − 6
  //  t=1: d = −3.5; m̂ = −3.5, v̂ = 12.25; p₁ = 1 + 0.1·3.5/(3.5 + 1e−8) = 1.09999999971
  //  t=2: d = −3.25000000071; m = −0.640000000071; v = 0.0228002500046
  //       m̂ = −3.36842105301, √v̂ = 3.37725153287; p₂ = 1.19973853000
  //  t=3: d = −3.00065367499; m̂ = −3.23271353344, √v̂ = 3.25643848411; p₃ = 1.29900997454
  Point point({1});
  nn::Adam adam(point.named_parameters(), nn::AdamOptions(0.1).weight_decay(0.5));
  check_trajectory(descend(adam, point.p, {3}, 3),
                   {{1.0999999997142857}, {1.1997385300028527}, {1.2990099745363854}});
}

TEST_CASE("AdamW shrinks the parameter, then takes Adam's step on the plain gradient", "[optim]") {
  // p₀ = (1, −2), c = (3, 1), lr = 0.1, λ = 0.5, β = (0.9, 0.999), ε = 1e−8. Element 0:
  //  t=1: g = −4;  p ← 1·(1 − 0.05) = 0.95;  m̂ = −4, v̂ = 16 (g alone, no λ·p in it)
  //       p₁ = 0.95 + 0.1·4/(4 + 1e−8) = 1.04999999975
  //  t=2: g = 2(1.04999999975 − 3) = −3.9000000005;  p ← 1.04999999975·0.95
  //       m = −0.75000000005, v = 0.031194000004;  p₂ = 1.09742600468
  //  t=3: g = −3.80514799064;  p₃ = 1.14236063516
  // Element 1 from g = −6: −1.80000000017, −1.61023906195, −1.43036961260.
  // (Adam's L2 form with wd = 0.5 gives 1.09999999971 at t=1: another rule.)
  Point point({1, -2});
  nn::AdamW adamw(point.named_parameters(), nn::AdamOptions(0.1).weight_decay(0.5));
  CHECK(adamw.type_name() == "AdamW");
  check_trajectory(descend(adamw, point.p, {3, 1}, 3), {{1.04999999975, -1.8000000001666665},
                                                        {1.09742600468106, -1.6102390619461486},
                                                        {1.1423606351615803, -1.430369612598339}});
  const nn::NamedTensors state = adamw.state();
  REQUIRE(state.size() == 4);
  CHECK(state[1].first == "exp_avg.p");
  CHECK(state[1].second.to_vector()[0] == Approx(-1.0555147991087876).margin(tolerance()));
  CHECK(state[2].second.to_vector()[1] == Approx(0.09451006784576774).margin(tolerance()));
}

TEST_CASE("A parameter group's own weight decay wins over the options'", "[optim]") {
  // nanoGPT's split: the decayed group follows the AdamW trajectory above, the
  // group with weight_decay 0 follows plain Adam's (1.09999999975, …).
  Point decayed({1});
  Point kept({1});
  nn::AdamW adamw(
      {{.parameters = nn::named_parameters({{"decayed", decayed}}), .lr = {}, .weight_decay = {}},
       {.parameters = nn::named_parameters({{"kept", kept}}), .lr = {}, .weight_decay = 0.0}},
      nn::AdamOptions(0.1).weight_decay(0.5));
  CHECK(adamw.weight_decay(0) == 0.5);
  CHECK(adamw.weight_decay(1) == 0.0);
  for (int step = 0; step < 3; ++step) {
    adamw.zero_grad();
    quadratic_backward(decayed.p, {3});
    quadratic_backward(kept.p, {3});
    adamw.step();
  }
  CHECK(decayed.p.item() == Approx(1.1423606351615803).margin(tolerance()));
  CHECK(kept.p.item() == Approx(1.2993766079535347).margin(tolerance()));
  // Adam and SGD read a group's weight decay the same way (their L2 term).
  Point l2({1});
  nn::Adam adam({{.parameters = l2.named_parameters(), .lr = {}, .weight_decay = 0.5}},
                nn::AdamOptions(0.1));
  check_trajectory(descend(adam, l2.p, {3}, 3),
                   {{1.0999999997142857}, {1.1997385300028527}, {1.2990099745363854}});
  CHECK_THROWS_WITH(
      nn::AdamW({{.parameters = l2.named_parameters(), .lr = {}, .weight_decay = -1.0}},
                nn::AdamOptions(0.1)),
      Contains("AdamW: group 0 has weight decay -1; it must be >= 0"));
}

// ---- Gradients: zero_grad and parameters without one ----------------------------

TEST_CASE("zero_grad forgets the gradients, a step without them changes nothing", "[optim]") {
  Point point({1, 2});
  nn::Adam adam(point.named_parameters(), nn::AdamOptions(0.1));
  quadratic_backward(point.p, {0, 0});
  REQUIRE(grad(point.p).defined());
  adam.zero_grad();
  CHECK_FALSE(grad(point.p).defined());
  adam.step();
  CHECK(point.p.to_vector() == std::vector<real>{1, 2});
  // The step was counted, but p has no state: it was never updated.
  const nn::NamedTensors state = adam.state();
  REQUIRE(state.size() == 1);
  CHECK(state[0].first == "step");
  CHECK(state[0].second.item() == 1);
}

TEST_CASE("Parameters without a gradient are skipped and keep their own step count", "[optim]") {
  Point used({1});
  Point unused({5});
  nn::Adam adam(nn::named_parameters({{"used", used}, {"unused", unused}}), nn::AdamOptions(0.1));
  descend(adam, used.p, {3}, 2);
  CHECK(unused.p.item() == 5);
  for (const auto& [name, tensor] : adam.state()) CHECK(name.find("unused") == std::string::npos);

  // When `unused` finally gets a gradient its first update is a first Adam
  // step (t = 1, full bias correction): p = 5 − 0.1·g/|g| = 4.9, up to ε.
  adam.zero_grad();
  quadratic_backward(unused.p, {3});
  adam.step();
  CHECK(unused.p.item() == Approx(4.9).margin(tolerance()));
  CHECK(adam.step_count() == 3);
  for (const auto& [name, tensor] : adam.state()) {
    if (name == "step.unused.p") CHECK(tensor.item() == 1);
    if (name == "step.used.p") CHECK(tensor.item() == 2);
  }
}

// ---- Deferred gradients (autograd/fast/deferred_gradient.hpp) --------------------------

namespace {

double largest_difference(const Tensor& a, const Tensor& b) {
  const std::vector<real> x = a.to_vector(), y = b.to_vector();
  REQUIRE(x.size() == y.size());
  double largest = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    largest = std::max(largest, std::abs(double(x[i]) - double(y[i])));
  }
  return largest;
}

}  // namespace

namespace {

// A Linear over a sequence and a GRU over it, one sequence (B = 1): every
// weight's gradient is a product dyᵀx over at most T = 4 rows, which the fast
// path keeps as factors (fewer numbers than the weight: Gradient::product).
// `shared` is used twice, by ops that return dense gradients.
struct Layers : nn::Module {
  std::shared_ptr<nn::Linear> linear;
  std::shared_ptr<nn::GRU> gru;
  Tensor shared;
  explicit Layers(uint64_t seed) : nn::Module("Layers") {
    Generator generator(seed);
    linear = register_module("linear",
                             std::make_shared<nn::Linear>(nn::LinearOptions(16, 12), generator));
    gru = register_module("gru", std::make_shared<nn::GRU>(nn::GRUOptions(12, 16), generator));
    shared = register_parameter("shared", randn({16, 16}, generator));
  }
  void backward_once(int64_t steps) {
    Generator data(99);
    const Tensor x = randn({steps, 16}, data);                          // (T·B, 16)
    const Tensor inputs = reshape(linear->forward(x), {steps, 1, 12});  // (T,B,12)
    const Tensor top = gru->forward(inputs).output;                     // (T,B,16)
    const Tensor last = select(top, 0, steps - 1);                      // (B,16)
    backward(sum(pow(matmul(last, shared), 2)) + sum(shared) * real(0.5));
  }
};

// Trains two copies of Layers for 3 steps, one on the fast path, one on the
// reference path, and compares every parameter. With a sequence of one step
// every weight's gradient is one product on both paths, and the training
// must match bit for bit: SGD adds −lr·dyᵀx in one rounding per entry, as
// p − lr·G does with G summed by the same kernel. Over several steps the
// reference adds T products for W_hh, the fast path forms one over T·B rows:
// the same sum in another order, so from the second update on every
// parameter may differ by float rounding.
template <typename MakeOptimizer>
void compare_paths(int64_t steps, MakeOptimizer make_optimizer) {
  Layers fast_model(8), reference_model(8);
  auto fast_optimizer = make_optimizer(fast_model);
  auto reference_optimizer = make_optimizer(reference_model);
  for (int step = 0; step < 3; ++step) {
    fast_optimizer->zero_grad();
    fast_model.backward_once(steps);
    // The weights' gradients wait as factors; `shared` got a dense one.
    CHECK(fast::deferred_gradient_of(fast_model.linear->weight) != nullptr);
    CHECK(fast::deferred_gradient_of(fast_model.gru->layers()[0].weight_hh) != nullptr);
    CHECK(fast::deferred_gradient_of(fast_model.shared) == nullptr);
    fast_optimizer->step();
    {
      const fast::ReferencePath reference;
      reference_optimizer->zero_grad();
      reference_model.backward_once(steps);
      CHECK(fast::deferred_gradient_of(reference_model.linear->weight) == nullptr);
      reference_optimizer->step();
    }
  }
  const nn::NamedTensors expected = reference_model.named_parameters();
  const nn::NamedTensors got = fast_model.named_parameters();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(got[i].first);
    if (steps == 1) {
      CHECK(got[i].second.to_vector() == expected[i].second.to_vector());
    } else {
      CHECK(largest_difference(got[i].second, expected[i].second) <= 1e-5);
    }
  }
}

}  // namespace

TEST_CASE("plain SGD adds deferred gradients straight in, as the reference path's step does",
          "[optim]") {
  for (int64_t steps : {1, 4}) {
    INFO("sequence of " << steps);
    compare_paths(steps, [](Layers& model) {
      return std::make_unique<nn::SGD>(model.named_parameters(), nn::SGDOptions(0.05));
    });
  }
}

TEST_CASE("SGD with momentum or weight decay, and Adam, form deferred gradients first", "[optim]") {
  for (int64_t steps : {1, 4}) {
    INFO("sequence of " << steps);
    compare_paths(steps, [](Layers& model) {
      return std::make_unique<nn::SGD>(model.named_parameters(),
                                       nn::SGDOptions(0.05).momentum(0.9));
    });
    compare_paths(steps, [](Layers& model) {
      return std::make_unique<nn::SGD>(model.named_parameters(),
                                       nn::SGDOptions(0.05).weight_decay(0.01));
    });
    compare_paths(steps, [](Layers& model) {
      return std::make_unique<nn::Adam>(model.named_parameters(), nn::AdamOptions(0.01));
    });
  }
}

TEST_CASE("grad() forms a deferred gradient on request, and zero_grad forgets it", "[optim]") {
  Layers model(8);
  model.backward_once(4);
  const Tensor weight = model.gru->layers()[0].weight_hh;
  REQUIRE(fast::deferred_gradient_of(weight) != nullptr);
  const Tensor formed_handle = grad(weight);
  REQUIRE(formed_handle.defined());
  CHECK(fast::deferred_gradient_of(weight) == nullptr);  // folded into the dense gradient
  CHECK(grad(weight).same(formed_handle));
  const Tensor formed = formed_handle.clone_data();
  Layers reference_model(8);
  {
    const fast::ReferencePath reference;
    reference_model.backward_once(4);
  }
  CHECK(largest_difference(formed, grad(reference_model.gru->layers()[0].weight_hh)) <= 1e-5);
  model.backward_once(4);  // accumulates: dense part + new factors
  CHECK(largest_difference(grad(weight), formed * real(2)) <= 1e-5);
  nn::SGD sgd(model.named_parameters(), nn::SGDOptions(0.1));
  sgd.zero_grad();
  CHECK_FALSE(grad(weight).defined());
}

// ---- Construction -----------------------------------------------------------------

TEST_CASE("named_parameters prefixes each module's names", "[optim]") {
  Point encoder({1});
  Point decoder({2, 3});
  const nn::NamedTensors named = nn::named_parameters({{"encoder", encoder}, {"decoder", decoder}});
  REQUIRE(named.size() == 2);
  CHECK(named[0].first == "encoder.p");
  CHECK(named[0].second.same(encoder.p));
  CHECK(named[1].first == "decoder.p");
  CHECK(named[1].second.same(decoder.p));
}

TEST_CASE("Optimizers refuse duplicate names, repeated tensors and bad options", "[optim]") {
  Point a({1});
  Point b({2});
  nn::NamedTensors clash = a.named_parameters();
  clash.emplace_back("p", b.p);
  CHECK_THROWS_WITH(nn::SGD(clash, nn::SGDOptions(0.1)),
                    Contains("two parameters are named 'p'") && Contains("prefix"));
  nn::NamedTensors twice = a.named_parameters();
  twice.emplace_back("again", a.p);
  CHECK_THROWS_WITH(nn::Adam(twice, nn::AdamOptions()), Contains("same tensor"));
  CHECK_THROWS_WITH(nn::Adam(nn::NamedTensors{}, nn::AdamOptions()), Contains("no parameters"));
  CHECK_THROWS_WITH(nn::Adam(a.named_parameters(), nn::AdamOptions().betas(1.0, 0.999)),
                    Contains("beta1 = 1"));
  CHECK_THROWS_WITH(nn::SGD(a.named_parameters(), nn::SGDOptions(-1)),
                    Contains("learning rate -1"));
  Tensor matrix = requires_grad_(zeros({3, 4}));
  CHECK_THROWS_WITH(
      nn::SGD(nn::NamedTensors{{"t", transpose(detach(matrix), 0, 1)}}, nn::SGDOptions(0.1)),
      Contains("non-contiguous"));
}

TEST_CASE("Parameter groups train with their own learning rates", "[optim]") {
  Point fast({1});
  Point slow({1});
  nn::SGD sgd(
      std::vector<nn::ParameterGroup>{
          {.parameters = nn::named_parameters({{"fast", fast}}), .lr = 0.1, .weight_decay = {}},
          {.parameters = nn::named_parameters({{"slow", slow}}), .lr = {}, .weight_decay = {}}},
      nn::SGDOptions(0.01));
  CHECK(sgd.group_count() == 2);
  CHECK(sgd.lr(0) == 0.1);
  CHECK(sgd.lr(1) == 0.01);
  // g = 2(1 − 3) = −4: fast moves by 0.4, slow by 0.04.
  quadratic_backward(fast.p, {3});
  quadratic_backward(slow.p, {3});
  sgd.step();
  CHECK(fast.p.item() == Approx(1.4).margin(tolerance()));
  CHECK(slow.p.item() == Approx(1.04).margin(tolerance()));
  sgd.set_lr(0.5);
  CHECK(sgd.lr(0) == 0.5);
  CHECK(sgd.lr(1) == 0.5);
  CHECK_THROWS_WITH(sgd.lr(2), Contains("group 2 does not exist"));
}

// ---- State: save, load, resume -------------------------------------------------

TEST_CASE("Loading saved state continues exactly like an uninterrupted run", "[optim]") {
  auto check_resume = [](auto make_optimizer) {
    Affine uninterrupted(7);
    auto optimizer = make_optimizer(uninterrupted);
    train(*optimizer, uninterrupted, 6);

    Affine first_half(7);
    auto first = make_optimizer(first_half);
    train(*first, first_half, 3);
    const nn::NamedTensors saved = first->state();

    // A fresh model and optimizer, as after a restart.
    Affine resumed(99);
    copy_parameters(first_half, resumed);
    auto second = make_optimizer(resumed);
    second->load_state(saved);
    CHECK(second->step_count() == 3);
    train(*second, resumed, 3);
    CHECK(resumed.weight.to_vector() == uninterrupted.weight.to_vector());
    CHECK(resumed.bias.to_vector() == uninterrupted.bias.to_vector());
    CHECK(second->step_count() == 6);
  };
  SECTION("Adam") {
    check_resume([](Affine& model) {
      return std::make_unique<nn::Adam>(model.named_parameters(),
                                        nn::AdamOptions(0.05).weight_decay(0.01));
    });
  }
  SECTION("SGD with momentum") {
    check_resume([](Affine& model) {
      return std::make_unique<nn::SGD>(model.named_parameters(),
                                       nn::SGDOptions(0.02).momentum(0.9));
    });
  }
}

TEST_CASE("Resuming without the state does differ (the resume test can fail)", "[optim]") {
  Affine uninterrupted(7);
  nn::Adam adam(uninterrupted.named_parameters(), nn::AdamOptions(0.05));
  train(adam, uninterrupted, 6);
  Affine restarted(7);
  nn::Adam first(restarted.named_parameters(), nn::AdamOptions(0.05));
  train(first, restarted, 3);
  nn::Adam fresh(restarted.named_parameters(), nn::AdamOptions(0.05));
  train(fresh, restarted, 3);
  CHECK(restarted.weight.to_vector() != uninterrupted.weight.to_vector());
}

TEST_CASE("load_state lists every problem and changes nothing", "[optim]") {
  Affine model(3);
  nn::Adam adam(model.named_parameters(), nn::AdamOptions(0.1));
  train(adam, model, 2);
  const nn::NamedTensors before = adam.state();

  nn::NamedTensors bad;
  bad.emplace_back("step", scalar(2.5));
  bad.emplace_back("exp_avg.weight", zeros({3, 2}));
  bad.emplace_back("exp_avg_sq.weight", zeros({2, 3}));
  bad.emplace_back("step.weight", scalar(0));
  bad.emplace_back("exp_avg.bias", zeros({2}));
  bad.emplace_back("momentum_buffer.bias", zeros({2}));
  try {
    adam.load_state(bad);
    FAIL("load_state accepted bad state");
  } catch (const Error& error) {
    const std::string message = error.what();
    CHECK_THAT(message, Contains("Adam.load_state: 5 problems, nothing was changed"));
    CHECK_THAT(message, Contains("'step' must hold one whole number >= 0, found 2.5"));
    CHECK_THAT(message, Contains("'exp_avg.weight' has shape (3,2), but parameter 'weight' "
                                 "has shape (2,3)"));
    CHECK_THAT(message, Contains("'step.weight' must hold one whole number >= 1, found 0"));
    CHECK_THAT(message, Contains("unexpected optimizer state 'momentum_buffer.bias'"));
    CHECK_THAT(message, Contains("incomplete optimizer state for parameter 'bias': missing "
                                 "'exp_avg_sq.bias', 'step.bias'"));
  }
  const nn::NamedTensors after = adam.state();
  REQUIRE(after.size() == before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    CHECK(after[i].first == before[i].first);
    CHECK(after[i].second.to_vector() == before[i].second.to_vector());
  }
  CHECK_THROWS_WITH(adam.load_state({}), Contains("missing optimizer state 'step'"));
}

// ---- Gradient clipping -----------------------------------------------------------

TEST_CASE("clip_grad_norm returns the total norm and rescales only above the limit", "[optim]") {
  Tensor a = requires_grad_(zeros({2}));
  Tensor b = requires_grad_(zeros({1}));
  Tensor unused = requires_grad_(zeros({1}));
  // Gradients (3, 4) and (12): the total norm is √(9 + 16 + 144) = 13.
  backward(sum(a * from_vector({3, 4})) + sum(b * 12.0));

  SECTION("below the limit nothing changes") {
    CHECK(nn::clip_grad_norm({a, b, unused}, 20) == Approx(13).epsilon(1e-12));
    CHECK(grad(a).to_vector() == std::vector<real>{3, 4});
    CHECK(grad(b).to_vector() == std::vector<real>{12});
  }
  SECTION("above it every gradient is scaled by max_norm / (norm + 1e-6)") {
    CHECK(nn::clip_grad_norm({a, b, unused}, 6.5) == Approx(13).epsilon(1e-12));
    const double scale = 6.5 / (13 + 1e-6);
    CHECK(grad(a).to_vector()[0] == Approx(3 * scale).epsilon(1e-6));
    CHECK(grad(a).to_vector()[1] == Approx(4 * scale).epsilon(1e-6));
    CHECK(grad(b).item() == Approx(12 * scale).epsilon(1e-6));
    CHECK_FALSE(grad(unused).defined());
    // The clipped gradients have norm max_norm (just under: the 1e-6).
    CHECK(nn::clip_grad_norm({a, b}, 100) == Approx(6.5).epsilon(1e-6));
  }
  CHECK_THROWS_WITH(nn::clip_grad_norm({a}, -1), Contains("max_norm = -1"));
}

TEST_CASE("clip_grad_norm with error_if_nonfinite throws on an infinite or NaN norm first",
          "[optim]") {
  const real infinity = std::numeric_limits<real>::infinity();
  const real nan = std::numeric_limits<real>::quiet_NaN();
  for (const real bad : {infinity, nan}) {
    INFO("the gradient of b is " << bad);
    Tensor a = requires_grad_(zeros({2}));
    Tensor b = requires_grad_(zeros({1}));
    // Gradients (3, 4) and (bad): b * bad is NaN, but its gradient is `bad`.
    backward(sum(a * from_vector({3, 4})) + sum(b * from_vector({bad})));
    const std::string norm = std::isnan(bad) ? "nan" : "inf";
    CHECK_THROWS_WITH(nn::clip_grad_norm({a, b}, 1.0, /*error_if_nonfinite=*/true),
                      "clip_grad_norm: the total norm of the gradients is " + norm +
                          ", so they cannot be clipped (none was changed); lower the learning "
                          "rate, or pass error_if_nonfinite = false to scale them anyway");
    try {
      nn::clip_grad_norm({a, b}, 1.0, true);
      FAIL("no error");
    } catch (const nn::NonFiniteNormError& error) {
      CHECK(fmt::format("{}", error.norm()) == norm);
    }
    // Nothing was scaled.
    CHECK(grad(a).to_vector() == std::vector<real>{3, 4});
    const bool unchanged = std::isnan(bad) ? std::isnan(grad(b).item()) : grad(b).item() == bad;
    CHECK(unchanged);
  }
}

TEST_CASE("clip_grad_norm with error_if_nonfinite clips a finite norm as without it", "[optim]") {
  Tensor a = requires_grad_(zeros({2}));
  backward(sum(a * from_vector({3, 4})));
  CHECK(nn::clip_grad_norm({a}, 10, /*error_if_nonfinite=*/true) == Approx(5).epsilon(1e-12));
  CHECK(grad(a).to_vector() == std::vector<real>{3, 4});
  CHECK(nn::clip_grad_norm({a}, 2.5, /*error_if_nonfinite=*/true) == Approx(5).epsilon(1e-12));
  CHECK(grad(a).to_vector()[0] == Approx(1.5).epsilon(1e-6));
  CHECK(grad(a).to_vector()[1] == Approx(2).epsilon(1e-6));
}

TEST_CASE("clip_grad_norm scales by a non-finite norm by default as PyTorch does", "[optim]") {
  // torch.nn.utils.clip_grad_norm_ multiplies by clamp(max_norm / (norm + 1e-6), max=1):
  // by 0 for an infinite norm (inf · 0 is NaN), by NaN for a NaN norm.
  const real infinity = std::numeric_limits<real>::infinity();
  Tensor a = requires_grad_(zeros({2}));
  Tensor b = requires_grad_(zeros({1}));
  backward(sum(a * from_vector({3, 4})) + sum(b * from_vector({infinity})));
  CHECK(std::isinf(nn::clip_grad_norm({a, b}, 1.0)));
  CHECK(grad(a).to_vector() == std::vector<real>{0, 0});
  CHECK(std::isnan(grad(b).item()));

  Tensor c = requires_grad_(zeros({2}));
  Tensor d = requires_grad_(zeros({1}));
  backward(sum(c * from_vector({3, 4})) +
           sum(d * from_vector({std::numeric_limits<real>::quiet_NaN()})));
  CHECK(std::isnan(nn::clip_grad_norm({c, d}, 1.0)));
  CHECK(std::isnan(grad(c).to_vector()[0]));
  CHECK(std::isnan(grad(c).to_vector()[1]));
}

}  // namespace test_optim
