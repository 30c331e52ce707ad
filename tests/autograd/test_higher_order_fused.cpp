// tests/autograd/test_higher_order_fused.cpp — gradients of gradients
// through the fused ops and the fast path's mechanisms.
//
// A fused op (layer_norm, gru_cell, gru_sequence, attention_pool) forms its
// gradient with kernels; a backward pass that records (create_graph) forms it
// instead from the op's defining composition of plain ops, and softmax,
// log_softmax, masked_softmax, the losses and linear from their formulas
// written with ops. Two things are checked here:
//
//   1. The first-order gradients are the same numbers either way, on the fast
//      path and on the reference path (autograd/fast/fast.hpp): bit for bit
//      where both take the same sums in the same order, else to 1e-13
//      relative (the kernels and the ops add the same terms in other orders).
//   2. The recorded gradients are right: gradgradcheck of multi-head
//      attention through its ops with masks, of a Transformer encoder block,
//      and of one GRU cell, whose second derivative also equals the one of
//      its composition written out here.
//
// Every op's table row (tests/autograd/test_gradcheck.cpp) runs gradgradcheck
// on both paths as well.
#include <catch2/catch.hpp>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "attograd.hpp"

namespace test_higher_order_fused {

using namespace attograd;

namespace {

using Inputs = std::vector<Tensor>;
using Function = std::function<Tensor(const Inputs&)>;

Generator& generator() {
  static Generator g(35);
  return g;
}

Tensor any_values(const Shape& shape) { return uniform(shape, -2.0, 2.0, generator()); }

// The gradients of L = Σ f(x) ⊙ R (R fixed, uniform in [−1, 1]) with respect
// to every input, by autograd::grad, as plain values; with create_graph the
// backward pass records.
Inputs first_order(const Function& f, const Inputs& values, bool create_graph) {
  Inputs leaves;
  for (const Tensor& v : values) leaves.push_back(requires_grad_(v.clone_data()));
  const Tensor out = f(leaves);
  Generator r_generator(7);
  const Tensor R = uniform(out.shape(), -1.0, 1.0, r_generator);
  const Tensor loss = sum(out * R);
  const Inputs grads =
      autograd::grad({loss}, leaves, {}, {.create_graph = create_graph, .allow_unused = true});
  Inputs result;
  for (const Tensor& g : grads) result.push_back(g.defined() ? g.clone_data() : Tensor());
  return result;
}

struct EqualityCase {
  std::string name;
  Function function;
  Inputs inputs;
  double tolerance;  // 0: bit for bit; else relative, with the same absolute margin
};

// The cases of point 1: each op of autograd/ops_softmax.cpp, ops_loss.cpp,
// ops_norm.cpp, ops_linear.cpp, ops_gru.cpp and the fast mechanisms that
// live there (fused attention pooling, sentence products, forward values).
std::vector<EqualityCase> equality_cases() {
  generator().seed(35);
  // The kernels sum Σ dy ⊙ y (softmax), the gates' products (GRU), the
  // normalised rows (layer norm) and the pooled values in registers, in
  // another order than the ops do: the two agree to a few ulps of the
  // largest term, well inside 1e-13 of these O(1) numbers.
  constexpr double kReordered = 1e-13;
  std::vector<EqualityCase> cases;
  for (int64_t axis : {0, 1, -1}) {
    cases.push_back({fmt::format("softmax, axis {}", axis),
                     [axis](const Inputs& x) { return softmax(x[0], axis); },
                     {any_values({2, 3, 9})},
                     kReordered});
    cases.push_back({fmt::format("log_softmax, axis {}", axis),
                     [axis](const Inputs& x) { return log_softmax(x[0], axis); },
                     {any_values({2, 3, 9})},
                     kReordered});
  }
  cases.push_back({"softmax of a transposed view",
                   [](const Inputs& x) { return softmax(transpose(x[0], 0, 1), 1); },
                   {any_values({9, 7})},
                   kReordered});
  cases.push_back({"masked_softmax, one length per example and one per query",
                   [](const Inputs& x) {
                     return masked_softmax(x[0], {2, 7}) + masked_softmax(x[0], {1, 3, 7, 5});
                   },
                   {any_values({2, 2, 7})},
                   kReordered});
  cases.push_back({"attention_pool",
                   [](const Inputs& x) { return attention_pool(x[0], x[1]); },
                   {any_values({2, 3, 9}), any_values({2, 9, 4})},
                   kReordered});
  cases.push_back(
      {"attention_pool, scaled by one factor and by one per key (Tk 40)",
       [](const Inputs& x) {
         return attention_pool(x[0], x[1], x[2]) + attention_pool(x[0], x[1], x[3]);
       },
       {any_values({2, 2, 40}), any_values({2, 40, 1}), any_values({1}), any_values({40})},
       kReordered});
  cases.push_back({"causal_attention, past one 32-key tile",
                   [](const Inputs& x) { return causal_attention(x[0], x[1], x[2]); },
                   {any_values({2, 34, 5}), any_values({2, 34, 5}), any_values({2, 34, 5})},
                   kReordered});
  for (const Reduction reduction : {Reduction::none, Reduction::sum, Reduction::mean}) {
    // The same products, (x − t)·(c·dℓ), by the same kernels: bit for bit.
    cases.push_back({fmt::format("squared_errors, reduction {}", static_cast<int>(reduction)),
                     [reduction](const Inputs& x) { return squared_errors(x[0], x[1], reduction); },
                     {any_values({3, 7}), any_values({7})},
                     0});
  }
  cases.push_back({"negative_log_likelihood with an ignored target",
                   [](const Inputs& x) {
                     return negative_log_likelihood(x[0], {2, -100, 0, 6}, -100);
                   },
                   {any_values({4, 7})},
                   0});
  cases.push_back({"layer_norm with gain and bias",
                   [](const Inputs& x) { return layer_norm(x[0], {8}, x[1], x[2]); },
                   {any_values({3, 8}), any_values({8}), any_values({8})},
                   kReordered});
  cases.push_back({"layer_norm over two axes, no gain or bias",
                   [](const Inputs& x) {
                     return layer_norm(x[0], {3, 4}, Tensor(), Tensor());
                   },
                   {any_values({2, 3, 4})},
                   kReordered});
  cases.push_back({"linear",
                   [](const Inputs& x) { return linear(x[0], x[1], x[2]); },
                   {any_values({3, 7}), any_values({5, 7}), any_values({5})},
                   kReordered});
  cases.push_back({"linear: three steps sharing the weight",
                   [](const Inputs& x) {
                     const Tensor first = linear(x[0], x[2], Tensor());
                     return first * linear(x[1], x[2], Tensor()) + linear(first, x[3], Tensor());
                   },
                   {any_values({2, 4}), any_values({2, 4}), any_values({3, 4}), any_values({3, 3})},
                   kReordered});
  cases.push_back({"linear_columns at column 2",
                   [](const Inputs& x) { return linear_columns(x[0], x[1], 2, x[2]); },
                   {any_values({3, 7}), any_values({5, 11}), any_values({5})},
                   kReordered});
  // Sentence products (autograd/fast/sentence_products.hpp) on the fast path,
  // linear over [a_t; b_t] on the reference path.
  cases.push_back({"KnownInputsLinear's steps",
                   [](const Inputs& x) {
                     std::vector<Tensor> known, steps;
                     for (int64_t t = 0; t < 3; ++t) known.push_back(narrow(x[0], 0, t, 1));
                     const KnownInputsLinear layer(known, x[2], x[3]);
                     for (int64_t t = 0; t < 3; ++t)
                       steps.push_back(layer.step(t, narrow(x[1], 0, t, 1)));
                     return cat(steps, 0);
                   },
                   {any_values({3, 4}), any_values({3, 5}), any_values({6, 9}), any_values({6})},
                   kReordered});
  // Forward values (autograd/fast/forward_values.hpp) on the fast path.
  cases.push_back({"linear_with_values",
                   [](const Inputs& x) {
                     Tensor values;
                     {
                       const NoGradGuard no_grad;
                       values = linear(x[0], x[1], x[2]);
                     }
                     return linear_with_values(x[0], x[1], x[2], values);
                   },
                   {any_values({3, 7}), any_values({5, 7}), any_values({5})},
                   kReordered});
  cases.push_back({"gru_cell",
                   [](const Inputs& x) { return gru_cell(x[0], x[1], x[2], x[3], x[4], x[5]); },
                   {any_values({3, 4}), any_values({3, 5}), any_values({15, 4}),
                    any_values({15, 5}), any_values({15}), any_values({15})},
                   kReordered});
  cases.push_back({"gru_sequence",
                   [](const Inputs& x) { return gru_sequence(x[0], x[1], x[2], x[3], x[4], x[5]); },
                   {any_values({3, 2, 4}), any_values({2, 5}), any_values({15, 4}),
                    any_values({15, 5}), any_values({15}), any_values({15})},
                   kReordered});
  cases.push_back({"gru_sequence, batch-first through a transpose, no h0, no biases",
                   [](const Inputs& x) {
                     return gru_sequence(transpose(x[0], 0, 1), Tensor(), x[1], x[2], Tensor(),
                                         Tensor());
                   },
                   {any_values({2, 4, 3}), any_values({12, 3}), any_values({12, 4})},
                   kReordered});
  return cases;
}

void check_equal(const Tensor& recorded, const Tensor& plain, double tolerance) {
  REQUIRE(recorded.defined() == plain.defined());
  if (!plain.defined()) return;
  REQUIRE(recorded.shape() == plain.shape());
  const std::vector<real> a = recorded.to_vector(), b = plain.to_vector();
  if (tolerance == 0) {
    CHECK(a == b);
    return;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i);
    CHECK(double(a[i]) == Approx(double(b[i])).epsilon(tolerance).margin(tolerance));
  }
}

// The composed GRU step: the specification gru_cell is fused from.
Tensor gru_step_by_ops(const Inputs& x) {
  const int64_t H = x[1].shape()[1];
  const Tensor gi = matmul(x[0], transpose(x[2], 0, 1)) + x[4];
  const Tensor gh = matmul(x[1], transpose(x[3], 0, 1)) + x[5];
  auto gate = [H](const Tensor& g, int64_t k) { return narrow(g, 1, k * H, H); };
  const Tensor r = sigmoid(gate(gi, 0) + gate(gh, 0));
  const Tensor z = sigmoid(gate(gi, 1) + gate(gh, 1));
  const Tensor n = tanh(gate(gi, 2) + r * gate(gh, 2));
  return (real(1) - z) * n + z * x[1];
}

// v ↦ Hv for L = Σ f(x) ⊙ R: the gradient of ⟨∇L, v⟩, by double backward.
Inputs hessian_vector_products(const Function& f, const Inputs& values, const Inputs& directions) {
  Inputs leaves;
  for (const Tensor& v : values) leaves.push_back(requires_grad_(v.clone_data()));
  const Tensor out = f(leaves);
  Generator r_generator(7);
  const Tensor loss = sum(out * uniform(out.shape(), -1.0, 1.0, r_generator));
  const Inputs grads = autograd::grad({loss}, leaves, {}, {.create_graph = true});
  Tensor inner = sum(grads[0] * directions[0]);
  for (size_t i = 1; i < grads.size(); ++i) inner = inner + sum(grads[i] * directions[i]);
  Inputs result;
  for (const Tensor& g : autograd::grad({inner}, leaves)) result.push_back(g.clone_data());
  return result;
}

// Both paths: the fast one (the default) and the reference one.
template <typename Body>
void on_both_paths(Body body) {
  for (const bool reference : {false, true}) {
    std::optional<fast::ReferencePath> guard;
    if (reference) guard.emplace();
    INFO((reference ? "reference path" : "fast path"));
    body(reference);
  }
}

}  // namespace

TEST_CASE("under create_graph the fused ops' first-order gradients are the ordinary ones",
          "[higher-order][f64]") {
  for (const EqualityCase& c : equality_cases()) {
    on_both_paths([&](bool) {
      INFO(c.name << (c.tolerance == 0 ? " (bit for bit)" : " (to 1e-13 relative)"));
      const Inputs plain = first_order(c.function, c.inputs, false);
      const Inputs recorded = first_order(c.function, c.inputs, true);
      REQUIRE(plain.size() == recorded.size());
      for (size_t i = 0; i < plain.size(); ++i) {
        INFO("input " << i);
        check_equal(recorded[i], plain[i], c.tolerance);
      }
    });
  }
}

TEST_CASE("under create_graph a fused op's gradient is a recorded tensor with a history",
          "[higher-order][f64]") {
  on_both_paths([](bool) {
    const Tensor x = requires_grad_(any_values({2, 3, 5}));
    const Tensor w = requires_grad_(any_values({5}));
    const Tensor v = requires_grad_(any_values({2, 5, 4}));
    const Tensor loss = sum(pow(attention_pool(layer_norm(x, {5}, w, Tensor()), v), 2));
    const Inputs grads = autograd::grad({loss}, {x, w, v}, {}, {.create_graph = true});
    for (size_t i = 0; i < grads.size(); ++i) {
      INFO("input " << i);
      CHECK(requires_grad(grads[i]));
    }
  });
}

TEST_CASE("dropout's second derivative uses the same mask as its first", "[higher-order][f64]") {
  // y = x ⊙ m, L = Σ y²: ∂L/∂x = 2 m² ⊙ x, and ∂(Σ ∂L/∂x)/∂x = 2 m², with the
  // mask m read back from the forward as y / x.
  Generator dropout_generator(3);
  nn::Dropout dropout(0.5, dropout_generator);
  dropout.train();
  const Tensor x = requires_grad_(uniform({4, 9}, 0.5, 2.0, generator()));
  const Tensor y = dropout.forward(x);
  const Tensor mask = detach(y) / detach(x);
  const Tensor first = autograd::grad({sum(y * y)}, {x}, {}, {.create_graph = true})[0];
  CHECK(first.to_vector() == (real(2) * mask * mask * detach(x)).to_vector());
  const Tensor second = autograd::grad({sum(first)}, {x})[0];
  CHECK(second.to_vector() == (real(2) * mask * mask).to_vector());
  CHECK(sum(mask).item() > 0);             // something was kept …
  CHECK(sum(mask).item() < real(2 * 36));  // … and something dropped
}

TEST_CASE("gradgradcheck: multi-head attention through its ops, with masks",
          "[higher-order][f64]") {
  Generator init(11);
  nn::MultiHeadAttention attention(nn::MultiHeadAttentionOptions(3, 4, 5, 6, 2).bias(true), init);
  // Inputs: queries (B,Tq,4), keys (B,Tk,3), values (B,Tk,5), then W_q and W_o's weights.
  auto with_lengths = [&](std::vector<int64_t> lengths) -> Function {
    return [&attention, lengths](const Inputs& x) {
      attention.W_q->weight = x[3];
      attention.W_o->weight = x[4];
      return attention.forward(x[0], x[1], x[2], lengths);
    };
  };
  const Inputs inputs{any_values({2, 3, 4}), any_values({2, 4, 3}), any_values({2, 4, 5}),
                      uniform({6, 4}, -0.7, 0.7, generator()),
                      uniform({6, 6}, -0.7, 0.7, generator())};
  on_both_paths([&](bool) {
    for (const std::vector<int64_t>& lengths :
         std::vector<std::vector<int64_t>>{{}, {2, 4}, {1, 2, 3, 4, 3, 2}}) {
      INFO("valid lengths: " << lengths.size());
      const GradcheckResult result = gradgradcheck(with_lengths(lengths), inputs);
      INFO(result.report);
      CHECK(result.passed);
    }
  });
}

TEST_CASE("gradgradcheck: a Transformer encoder block", "[higher-order][f64]") {
  Generator init(12);
  nn::TransformerEncoderBlock block(nn::TransformerBlockOptions(4, 6, 2), init);
  // ReLU in the feed-forward network has a kink at 0: a ±ε step that crosses
  // it changes the first derivative by a jump, so the inputs keep every
  // pre-activation at least 1e-3 from 0 (checked below).
  const Tensor x = any_values({2, 3, 4});
  {
    const NoGradGuard no_grad;
    const Tensor y = block.addnorm1->forward(x, block.attention->forward(x, x, x, {2, 3}));
    const Tensor hidden = block.ffn->dense1->forward(y);
    double nearest = 1e9;
    for (real v : hidden.to_vector()) nearest = std::min(nearest, std::abs(double(v)));
    REQUIRE(nearest > 1e-3);
  }
  on_both_paths([&](bool) {
    const GradcheckResult result = gradgradcheck(
        [&block](const Inputs& in) {
          return block.forward(in[0], {2, 3});
        },
        {x});
    INFO(result.report);
    CHECK(result.passed);
  });
}

TEST_CASE("gradgradcheck: one GRU cell, and its Hessian-vector products equal its composition's",
          "[higher-order][f64]") {
  const Inputs inputs{any_values({2, 3}),  any_values({2, 4}), any_values({12, 3}),
                      any_values({12, 4}), any_values({12}),   any_values({12})};
  const Function cell = [](const Inputs& x) {
    return gru_cell(x[0], x[1], x[2], x[3], x[4], x[5]);
  };
  Inputs directions;
  for (const Tensor& t : inputs) directions.push_back(any_values(t.shape()));
  on_both_paths([&](bool) {
    const GradcheckResult result = gradgradcheck(cell, inputs);
    INFO(result.report);
    CHECK(result.passed);
    const Inputs fused = hessian_vector_products(cell, inputs, directions);
    const Inputs composed = hessian_vector_products(gru_step_by_ops, inputs, directions);
    for (size_t i = 0; i < fused.size(); ++i) {
      INFO("input " << i);
      check_equal(fused[i], composed[i], 1e-12);
    }
  });
}

}  // namespace test_higher_order_fused
