// tests/models/test_higher_order_models.cpp — second derivatives through one
// training step of each translation recipe: the tutorial's GRU translator
// (models/seq2seq, both decoders), d2l's batched GRU with Bahdanau attention
// (models/batched_seq2seq) and d2l's Transformer (models/transformer).
//
// For each, L(θ) is the loss of one step (one pair, or one batch summed) and
//
//   g   = autograd::grad({L}, θ, {}, {.create_graph = true})        ∂L/∂θ, with its own graph
//   H v = autograd::grad({Σ g ⊙ v}, θ)                  ∂/∂θ (gᵀv), a Hessian-vector product
//
// checked against the central difference of first derivatives along v,
// (∇L(θ + εv) − ∇L(θ − εv)) / 2ε, on the fast path and under
// fast::ReferencePath, and the two paths' products against each other. The
// first-order gradients that backward(create_graph = true) and
// autograd::grad(create_graph = true) form equal those of a plain backward():
// under create_graph the engine leaves the fast mechanisms (deferred
// gradients, sentence products, fused nodes) for recorded ops by itself, and
// this is the proof that the results do not change.
//
// Tiny models (hidden sizes 4 to 8), no dropout (a finite difference needs
// the same function at both points): double build only.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autograd/autograd_meta.hpp"
#include "autograd/engine.hpp"
#include "autograd/fast/fast.hpp"
#include "autograd/ops.hpp"
#include "models/batched_seq2seq/batched_seq2seq.hpp"
#include "models/seq2seq/seq2seq.hpp"
#include "models/transformer/transformer.hpp"
#include "models/translation/batched_translator.hpp"
#include "tensor/factory.hpp"
#include "tensor/random.hpp"
#include "tests/support/tensor_checks.hpp"

namespace test_higher_order_models {

using namespace attograd;

namespace {

// One training step's loss, recomputed from the model's current parameters
// at every call.
using StepLoss = std::function<Tensor()>;

// The gradients undefined where allow_unused left them so, as zeros.
std::vector<Tensor> dense(std::vector<Tensor> gradients, const std::vector<Tensor>& parameters) {
  REQUIRE(gradients.size() == parameters.size());
  for (size_t i = 0; i < gradients.size(); ++i)
    if (!gradients[i].defined()) gradients[i] = zeros_like(parameters[i]);
  return gradients;
}

// ∂L/∂θ at the current parameters, without a graph.
std::vector<Tensor> first_derivatives(const StepLoss& loss, const std::vector<Tensor>& parameters) {
  return dense(autograd::grad({loss()}, parameters, {}, {.allow_unused = true}), parameters);
}

// H v by double backward: the gradient of Σᵢ gᵢ ⊙ vᵢ, g recorded.
std::vector<Tensor> hessian_vector_product(const StepLoss& loss,
                                           const std::vector<Tensor>& parameters,
                                           const std::vector<Tensor>& v) {
  const std::vector<Tensor> g = autograd::grad(
      {loss()}, parameters, {}, {.retain_graph = true, .create_graph = true, .allow_unused = true});
  Tensor g_dot_v;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!g[i].defined()) continue;  // θᵢ does not reach L: its row of H is zero
    const Tensor term = sum(mul(g[i], v[i]));
    g_dot_v = g_dot_v.defined() ? add(g_dot_v, term) : term;
  }
  REQUIRE(g_dot_v.defined());
  REQUIRE(requires_grad(g_dot_v));  // the gradient has a graph of its own
  return dense(autograd::grad({g_dot_v}, parameters, {}, {.allow_unused = true}), parameters);
}

// θ ← θ + step·v, in place (the parameters are the model's own leaves).
void move_parameters(const std::vector<Tensor>& parameters, const std::vector<Tensor>& v,
                     double step) {
  const NoGradGuard no_grad;
  for (size_t i = 0; i < parameters.size(); ++i) {
    Tensor parameter = parameters[i];
    parameter.copy_from(add(parameter, mul(v[i], scalar(static_cast<real>(step)))));
  }
}

// (∇L(θ + εv) − ∇L(θ − εv)) / 2ε; leaves θ as it found it (to rounding of
// θ + εv − εv, which the test's tolerances dwarf).
std::vector<Tensor> finite_difference_hvp(const StepLoss& loss,
                                          const std::vector<Tensor>& parameters,
                                          const std::vector<Tensor>& v, double epsilon) {
  std::vector<Tensor> saved;
  for (const Tensor& parameter : parameters) saved.push_back(parameter.clone_data());
  move_parameters(parameters, v, epsilon);
  const std::vector<Tensor> plus = first_derivatives(loss, parameters);
  move_parameters(parameters, v, -2 * epsilon);
  const std::vector<Tensor> minus = first_derivatives(loss, parameters);
  for (size_t i = 0; i < parameters.size(); ++i) {
    Tensor parameter = parameters[i];
    parameter.copy_from(saved[i]);
  }
  std::vector<Tensor> hv;
  const NoGradGuard no_grad;
  for (size_t i = 0; i < parameters.size(); ++i)
    hv.push_back(div(sub(plus[i], minus[i]), scalar(static_cast<real>(2 * epsilon))));
  return hv;
}

// A direction with every entry in [−1, 1), one tensor per parameter.
std::vector<Tensor> random_direction(const std::vector<Tensor>& parameters, uint64_t seed) {
  Generator generator(seed);
  std::vector<Tensor> v;
  for (const Tensor& parameter : parameters)
    v.push_back(uniform(parameter.shape(), -1.0, 1.0, generator));
  return v;
}

double max_abs(const std::vector<Tensor>& tensors) {
  double worst = 0;
  for (const Tensor& t : tensors)
    for (real x : t.to_vector()) worst = std::max(worst, std::abs(static_cast<double>(x)));
  return worst;
}

// The largest |a − b| over all entries, relative to the largest |b|.
double relative_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  return testing::max_difference(a, b) / std::max(max_abs(b), 1e-300);
}

// Central differences with ε = 1e-5 along a v of entries in [−1, 1): the
// truncation error is ε²/6 · |∂³L[v,v,v]| ~ 1e-10 · that, the rounding
// error ~ 1e-16 · |∇L| / ε ~ 1e-11 · |∇L|; measured 4.5e-8 relative on the
// Transformer, so 1e-6 leaves room and still fails a Hessian 0.01 % off.
constexpr double kEpsilon = 1e-5;
constexpr double kFiniteDifferenceTolerance = 1e-6;
// The fast path and the reference path form the same Hessian-vector product
// with sums in other orders (a weight's gradient over T steps as one product
// or as T): double rounding, relative to the largest entry.
constexpr double kPathsTolerance = 1e-12;
// First derivatives under create_graph against a plain backward(): the same
// function, its sums in another order where the plain backward takes a fast
// mechanism (a deferred dyᵀx over a sentence's rows at once, a fused node's
// kernel against its composition of ops).
constexpr double kFirstOrderTolerance = 1e-12;

// The Hessian-vector product of one step on the fast path and on the
// reference path, each against finite differences, and the two against each
// other.
void check_second_derivatives(const StepLoss& loss, const std::vector<Tensor>& parameters) {
  const std::vector<Tensor> v = random_direction(parameters, 17);
  std::vector<Tensor> on_fast_path;
  for (const bool reference_path : {false, true}) {
    INFO((reference_path ? "reference path" : "fast path"));
    std::optional<fast::ReferencePath> reference;
    if (reference_path) reference.emplace();
    const std::vector<Tensor> hv = hessian_vector_product(loss, parameters, v);
    const std::vector<Tensor> numeric = finite_difference_hvp(loss, parameters, v, kEpsilon);
    const double error = relative_difference(hv, numeric);
    INFO("|Hv| up to " << max_abs(numeric)
                       << ", double backward against finite differences: " << error << " relative");
    CHECK(max_abs(numeric) > 1e-3);  // a product that is not zero everywhere
    CHECK(error <= kFiniteDifferenceTolerance);
    if (!reference_path) {
      on_fast_path = hv;
    } else {
      const double paths = relative_difference(on_fast_path, hv);
      INFO("fast path against reference path: " << paths << " relative");
      CHECK(paths <= kPathsTolerance);
    }
  }
}

std::vector<Tensor> copies(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> out;
  for (const Tensor& t : tensors) out.push_back(t.clone_data());
  return out;
}

// Whether some tensor of the list carries a graph (is differentiable again).
bool some_has_history(const std::vector<Tensor>& tensors) {
  return std::any_of(tensors.begin(), tensors.end(),
                     [](const Tensor& t) { return t.defined() && grad_fn(t) != nullptr; });
}

// backward(create_graph = true) and autograd::grad(create_graph = true)
// against a plain backward(), on the fast path (where the plain backward
// takes every mechanism it can) and on the reference path.
void check_first_order_unchanged(nn::Module& model, const StepLoss& loss) {
  const std::vector<Tensor> parameters = model.parameters();
  for (const bool reference_path : {false, true}) {
    INFO((reference_path ? "reference path" : "fast path"));
    std::optional<fast::ReferencePath> reference;
    if (reference_path) reference.emplace();

    model.zero_grad();
    backward(loss());
    std::vector<Tensor> plain;
    for (const Tensor& parameter : parameters)
      plain.push_back(grad(parameter).defined() ? grad(parameter).clone_data()
                                                : zeros_like(parameter));

    model.zero_grad();
    backward(loss(), Tensor(), {.create_graph = true});
    std::vector<Tensor> accumulated;
    for (const Tensor& parameter : parameters)
      accumulated.push_back(grad(parameter).defined() ? grad(parameter) : zeros_like(parameter));
    CHECK(some_has_history(accumulated));
    const std::vector<Tensor> accumulated_values = copies(accumulated);
    accumulated.clear();
    model.zero_grad();  // the recorded .grad holds a graph that holds the parameters

    const std::vector<Tensor> returned =
        autograd::grad({loss()}, parameters, {},
                       {.retain_graph = true, .create_graph = true, .allow_unused = true});
    CHECK(some_has_history(returned));
    const std::vector<Tensor> returned_values = copies(dense(returned, parameters));

    const double backward_difference = relative_difference(accumulated_values, plain);
    const double grad_difference = relative_difference(returned_values, plain);
    INFO("backward(create_graph) against plain backward: "
         << backward_difference << " relative; autograd::grad(create_graph): " << grad_difference);
    CHECK(backward_difference <= kFirstOrderTolerance);
    CHECK(grad_difference <= kFirstOrderTolerance);
    CHECK(max_abs(plain) > 1e-3);
    model.zero_grad();
  }
}

// ---------------------------------------------------------------- the recipes

// The tutorial's translator (H 6, L 5), one pair. With teacher forcing the
// fast path feeds the sentence's inputs through each weight at once (sentence
// products); without, each step's output layer is computed once to choose
// the next word and recorded with those values (forward values), and the
// argmax choices stay the same within ±ε. Sparse embeddings keep the tables'
// gradients as rows.
struct TutorialStep {
  TutorialStep(seq2seq::DecoderKind decoder, bool sparse_embeddings, bool teacher_forcing)
      : generator(7),
        model(
            seq2seq::Seq2SeqOptions(9, 10).hidden_size(6).max_length(5).dropout(0).decoder(decoder),
            generator),
        teacher_forcing(teacher_forcing) {
    model.set_sparse_embeddings(sparse_embeddings);
  }
  Tensor loss() {
    return model.pair_loss({3, 5, 4, seq2seq::kEos}, {6, 8, seq2seq::kEos}, teacher_forcing).total;
  }

  Generator generator;
  seq2seq::Seq2Seq model;
  bool teacher_forcing;
};

// Every tutorial variant above: both decoders, dense and sparse tables, with
// and without teacher forcing.
template <typename Check>
void for_each_tutorial_step(const Check& check) {
  for (const auto decoder : {seq2seq::DecoderKind::location, seq2seq::DecoderKind::bahdanau}) {
    for (const bool sparse : {false, true}) {
      for (const bool teacher_forcing : {true, false}) {
        INFO("decoder " << seq2seq::to_string(decoder) << ", sparse embeddings " << sparse
                        << ", teacher forcing " << teacher_forcing);
        TutorialStep step(decoder, sparse, teacher_forcing);
        check(step);
      }
    }
  }
}

text::PaddedArray padded(const std::vector<std::vector<int64_t>>& sentences, int64_t T) {
  return testing::padded(sentences, T, translation::kPad);
}

// A batch of two sentence pairs of different lengths, padded to T = 5.
struct Batch {
  text::PaddedArray source = padded({{4, 5, 6, translation::kEos}, {7, translation::kEos}}, 5);
  text::PaddedArray target =
      padded({{8, 9, translation::kEos}, {10, 11, 12, 4, translation::kEos}}, 5);
};

}  // namespace

TEST_CASE("higher order: Hessian-vector products through a tutorial seq2seq step",
          "[higher-order][f64][seq2seq]") {
  for_each_tutorial_step([](TutorialStep& step) {
    check_second_derivatives([&] { return step.loss(); }, step.model.parameters());
  });
}

TEST_CASE("higher order: Hessian-vector products through a batched Bahdanau seq2seq step",
          "[higher-order][f64][batched_seq2seq]") {
  Generator generator(3);
  batched_seq2seq::BatchedSeq2Seq model(batched_seq2seq::BatchedSeq2SeqOptions(13, 15)
                                            .embed_size(4)
                                            .hidden_size(5)
                                            .num_layers(2)
                                            .dropout(0),
                                        generator);
  const Batch batch;
  check_second_derivatives([&] { return sum(model.loss(batch.source, batch.target)); },
                           model.parameters());
}

TEST_CASE("higher order: Hessian-vector products through a Transformer step",
          "[higher-order][f64][transformer_model]") {
  Generator generator(5);
  transformer::Transformer model(transformer::TransformerOptions(13, 15)
                                     .num_hiddens(8)
                                     .num_blocks(1)
                                     .num_heads(2)
                                     .ffn_num_hiddens(8)
                                     .dropout(0),
                                 generator);
  const Batch batch;
  check_second_derivatives([&] { return sum(model.loss(batch.source, batch.target)); },
                           model.parameters());
}

TEST_CASE("higher order: create_graph leaves every recipe's first derivatives unchanged",
          "[higher-order][f64]") {
  SECTION("tutorial seq2seq") {
    for_each_tutorial_step([](TutorialStep& step) {
      check_first_order_unchanged(step.model, [&] { return step.loss(); });
    });
  }
  SECTION("batched Bahdanau seq2seq") {
    Generator generator(3);
    batched_seq2seq::BatchedSeq2Seq model(
        batched_seq2seq::BatchedSeq2SeqOptions(13, 15).embed_size(4).hidden_size(5).dropout(0),
        generator);
    const Batch batch;
    check_first_order_unchanged(model, [&] { return sum(model.loss(batch.source, batch.target)); });
  }
  SECTION("Transformer") {
    Generator generator(5);
    transformer::Transformer model(transformer::TransformerOptions(13, 15)
                                       .num_hiddens(8)
                                       .num_blocks(1)
                                       .num_heads(2)
                                       .ffn_num_hiddens(8)
                                       .dropout(0),
                                   generator);
    const Batch batch;
    check_first_order_unchanged(model, [&] { return sum(model.loss(batch.source, batch.target)); });
  }
}

}  // namespace test_higher_order_models
