// tests/autograd/test_higher_order_ops.cpp — the recorded backward
// (create_graph) of the elementwise, reduction, shape, index and matrix-product
// ops (autograd/ops_elementwise.cpp, ops_reduce.cpp, ops_shape.cpp,
// ops_index.cpp, ops_linalg.cpp).
//
// Recording, a closure forms its gradient with ops instead of a kernel. The
// first derivative must not change by it: for each op below, on a few shapes
// including views, the gradients of L = Σ R ⊙ y ⊙ y (y = the op's output, R
// fixed) with and without create_graph are equal bit for bit. (y ⊙ y makes the
// gradient reaching the op depend on the inputs, so a linear op's recorded
// path runs too.) Then second derivatives worked out by hand: Σ x³, σ'', and
// the Hessian of Σ (a b)². gradgradcheck of every row is in test_gradcheck.cpp.
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "attograd.hpp"

namespace test_higher_order_ops {

using namespace attograd;

namespace {

using Inputs = std::vector<Tensor>;

Generator& test_generator() {
  static Generator generator(35);
  return generator;
}

Tensor any_values(const Shape& shape) { return uniform(shape, -2.0, 2.0, test_generator()); }
Tensor positive_values(const Shape& shape) { return uniform(shape, 0.5, 2.0, test_generator()); }

// Distinct entries (max has one winner per row): a shuffled 0.1·i plus noise.
Tensor distinct_values(const Shape& shape) {
  std::vector<real> values(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = real(0.1) * real(i) + real(0.01) * real(test_generator().uniform());
  }
  for (size_t i = values.size(); i > 1; --i) {
    std::swap(values[i - 1], values[test_generator().below(i)]);
  }
  return from_vector(values, shape);
}

struct OpCase {
  std::string name;
  GradcheckFunction function;
  Inputs inputs;
};

// Fresh leaves holding the inputs' values.
Inputs leaves_of(const Inputs& inputs) {
  Inputs leaves;
  for (const Tensor& t : inputs) leaves.push_back(requires_grad_(t.clone_data()));
  return leaves;
}

// ∂/∂inputs of Σ R ⊙ y ⊙ y, y = function(inputs), with or without create_graph.
std::vector<Tensor> gradients(const OpCase& op, const Tensor& R, bool create_graph) {
  const Inputs leaves = leaves_of(op.inputs);
  const Tensor y = op.function(leaves);
  const Tensor loss = sum(mul(mul(y, y), R));
  return autograd::grad({loss}, leaves, {}, {.create_graph = create_graph});
}

std::vector<OpCase> op_cases() {
  test_generator().seed(35);
  std::vector<OpCase> cases;
  auto add_case = [&](std::string name, GradcheckFunction f, Inputs inputs) {
    cases.push_back({std::move(name), std::move(f), std::move(inputs)});
  };
  // Elementwise: a SIMD tail, a 3-D block, a transposed view.
  const std::vector<std::pair<std::string, Tensor (*)(const Tensor&)>> smooth = {
      {"neg", [](const Tensor& x) { return neg(x); }},
      {"exp", [](const Tensor& x) { return exp(x); }},
      {"sin", [](const Tensor& x) { return sin(x); }},
      {"cos", [](const Tensor& x) { return cos(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"softplus", [](const Tensor& x) { return softplus(x); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"pow 3", [](const Tensor& x) { return pow(x, real(3)); }}};
  const std::vector<std::pair<std::string, Tensor (*)(const Tensor&)>> positive = {
      {"log", [](const Tensor& x) { return log(x); }},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }},
      {"pow 2.5", [](const Tensor& x) { return pow(x, real(2.5)); }},
      {"pow -1.5", [](const Tensor& x) { return pow(x, real(-1.5)); }}};
  for (const auto& group :
       {std::make_pair(smooth, &any_values), std::make_pair(positive, &positive_values)}) {
    for (const auto& [name, f] : group.first) {
      add_case(name + " (9)", [f = f](const Inputs& x) { return f(x[0]); }, {group.second({9})});
      add_case(name + " (2,3,4)", [f = f](const Inputs& x) { return f(x[0]); },
               {group.second({2, 3, 4})});
      add_case(name + " of a transposed view",
               [f = f](const Inputs& x) { return f(transpose(x[0], 0, 1)); },
               {group.second({9, 7})});
    }
  }
  // Binary, with broadcasting (the column_dots case among them) and views.
  for (const auto& [a, b] : std::vector<std::pair<Shape, Shape>>{
           {{7}, {7}}, {{6, 17}, {17}}, {{1}, {2, 9}}, {{3, 1, 17}, {17}}, {{3, 1}, {4}}}) {
    add_case("add", [](const Inputs& x) { return add(x[0], x[1]); },
             {any_values(a), any_values(b)});
    add_case("sub", [](const Inputs& x) { return sub(x[0], x[1]); },
             {any_values(a), any_values(b)});
    add_case("mul", [](const Inputs& x) { return mul(x[0], x[1]); },
             {any_values(a), any_values(b)});
    add_case("div", [](const Inputs& x) { return div(x[0], x[1]); },
             {any_values(a), positive_values(b)});
  }
  add_case("mul: x ⊙ x", [](const Inputs& x) { return mul(x[0], x[0]); }, {any_values({9})});
  add_case("mul: a transposed view",
           [](const Inputs& x) { return mul(transpose(x[0], 0, 1), x[1]); },
           {any_values({9, 7}), any_values({7, 9})});
  add_case("div: real over a tensor", [](const Inputs& x) { return real(1) / x[0]; },
           {positive_values({8})});
  // Reductions.
  for (bool keepdim : {false, true}) {
    for (const std::vector<int64_t>& axes : std::vector<std::vector<int64_t>>{{0}, {1, 2}, {-1}}) {
      add_case("sum", [axes, keepdim](const Inputs& x) { return sum(x[0], axes, keepdim); },
               {any_values({2, 3, 4})});
      add_case("mean", [axes, keepdim](const Inputs& x) { return mean(x[0], axes, keepdim); },
               {any_values({7, 1, 9})});
    }
    for (int64_t axis : {0, 1, -1}) {
      add_case("max", [axis, keepdim](const Inputs& x) { return max(x[0], axis, keepdim); },
               {distinct_values({2, 3, 4})});
      add_case(
          "max of a transposed view",
          [axis, keepdim](const Inputs& x) { return max(transpose(x[0], 0, 2), axis, keepdim); },
          {distinct_values({2, 3, 4})});
    }
  }
  add_case("sum: everything", [](const Inputs& x) { return sum(x[0]); }, {any_values({2, 3, 4})});
  add_case("mean: everything", [](const Inputs& x) { return mean(x[0]); }, {any_values({9})});
  add_case("max: everything", [](const Inputs& x) { return max(x[0]); }, {distinct_values({3, 5})});
  // Shapes and views.
  add_case("reshape of a transposed view",
           [](const Inputs& x) { return reshape(transpose(x[0], 0, 1), {-1}); },
           {any_values({3, 4})});
  add_case("view", [](const Inputs& x) { return view(x[0], {6, 4}); }, {any_values({2, 3, 4})});
  add_case("contiguous", [](const Inputs& x) { return contiguous(transpose(x[0], 0, 2)); },
           {any_values({2, 3, 4})});
  add_case("permute",
           [](const Inputs& x) {
             return permute(x[0], {2, 0, 1});
           },
           {any_values({2, 3, 4})});
  add_case("squeeze", [](const Inputs& x) { return squeeze(x[0], 1); }, {any_values({3, 1, 4})});
  add_case("unsqueeze", [](const Inputs& x) { return unsqueeze(x[0], -1); }, {any_values({3, 4})});
  add_case("expand", [](const Inputs& x) { return expand(x[0], {2, 3, 4}); }, {any_values({3, 1})});
  add_case("repeat", [](const Inputs& x) { return repeat(x[0], {2, 1, 3}); }, {any_values({3, 2})});
  add_case("repeat_interleave", [](const Inputs& x) { return repeat_interleave(x[0], 3, 1); },
           {any_values({2, 1, 4})});
  add_case("narrow", [](const Inputs& x) { return narrow(x[0], 1, 2, 5); }, {any_values({3, 9})});
  add_case("slice: step 3", [](const Inputs& x) { return slice(x[0], -1, 1, 8, 3); },
           {any_values({3, 9})});
  add_case("select", [](const Inputs& x) { return select(x[0], 1, -1); }, {any_values({3, 4, 2})});
  add_case("cat: the same tensor twice",
           [](const Inputs& x) {
             return cat({x[0], x[1], x[0]}, 1);
           },
           {any_values({2, 3}), any_values({2, 1})});
  add_case("stack",
           [](const Inputs& x) {
             return stack({x[0], x[1]}, -1);
           },
           {any_values({3, 4}), any_values({3, 4})});
  // Indexing and masks.
  add_case("index_select: repeated rows",
           [](const Inputs& x) {
             return index_select(x[0], 0, {2, 0, 2, 3, 2});
           },
           {any_values({4, 3})});
  add_case("index_select: inner axis of a view",
           [](const Inputs& x) {
             return index_select(transpose(x[0], 0, 1), 1, {1, 1, 0});
           },
           {any_values({3, 2, 4})});
  add_case("gather",
           [](const Inputs& x) {
             return gather(x[0], 1, {0, 2, 2, 1, 1, 0}, {2, 3});
           },
           {any_values({2, 4})});
  add_case("masked_fill",
           [](const Inputs& x) {
             return masked_fill(x[0], from_vector({1, 0, 0, 1}, {1, 4}), real(-5));
           },
           {any_values({3, 4})});
  add_case("masked_select",
           [](const Inputs& x) {
             return masked_select(x[0], from_vector({0, 1, 1, 0, 1, 0}, {2, 3}));
           },
           {any_values({4, 2, 3})});
  for (const bool sparse : {false, true}) {
    for (const std::optional<int64_t> padding :
         {std::optional<int64_t>(), std::optional<int64_t>(1)}) {
      add_case(std::string("embedding") + (sparse ? " sparse" : "") + (padding ? " padding" : ""),
               [sparse, padding](const Inputs& x) {
                 return embedding(x[0], {3, 1, 3, 0, 6, 1, 1, 2}, Shape{2, 4}, padding, sparse);
               },
               {any_values({7, 9})});
    }
  }
  // Matrix products.
  add_case("matmul", [](const Inputs& x) { return matmul(x[0], x[1]); },
           {any_values({7, 9}), any_values({9, 8})});
  add_case("matmul: transposed views",
           [](const Inputs& x) { return matmul(transpose(x[0], 0, 1), transpose(x[1], 0, 1)); },
           {any_values({9, 7}), any_values({8, 9})});
  add_case("matmul: Linear's x Wᵀ",
           [](const Inputs& x) { return matmul(x[0], transpose(x[1], 0, 1)); },
           {any_values({3, 17}), any_values({5, 17})});
  add_case("matmul: a strided operand that is copied",
           [](const Inputs& x) { return matmul(slice(x[0], 1, 0, 9, 2), x[1]); },
           {any_values({7, 9}), any_values({5, 8})});
  add_case("bmm", [](const Inputs& x) { return bmm(x[0], x[1]); },
           {any_values({2, 3, 4}), any_values({2, 4, 5})});
  add_case("bmm: Q Kᵀ", [](const Inputs& x) { return bmm(x[0], transpose(x[1], 1, 2)); },
           {any_values({2, 3, 4}), any_values({2, 5, 4})});
  return cases;
}

std::vector<real> values_of(const Tensor& t) {
  return t.defined() ? t.to_vector() : std::vector<real>();
}

}  // namespace

TEST_CASE("recording the backward leaves every first derivative of the ops unchanged, to the bit",
          "[higher-order][f64]") {
  for (const OpCase& op : op_cases()) {
    for (const bool reference : {false, true}) {
      std::optional<fast::ReferencePath> reference_path;
      if (reference) reference_path.emplace();
      INFO(op.name << (reference ? " (reference path)" : " (fast path)"));
      const Tensor y = [&] {
        const NoGradGuard no_grad;
        return op.function(op.inputs);
      }();
      const Tensor R = uniform(y.shape(), -1.0, 1.0, test_generator());
      const std::vector<Tensor> plain = gradients(op, R, /*create_graph=*/false);
      const std::vector<Tensor> recorded = gradients(op, R, /*create_graph=*/true);
      REQUIRE(plain.size() == recorded.size());
      for (size_t i = 0; i < plain.size(); ++i) {
        INFO("input " << i);
        CHECK(recorded[i].shape() == plain[i].shape());
        CHECK(values_of(recorded[i]) == values_of(plain[i]));
        CHECK_FALSE(requires_grad(plain[i]));
        // Σ R ⊙ y ⊙ y is quadratic in the op's output, so its gradient depends
        // on the inputs: recorded, it has a history.
        CHECK(requires_grad(recorded[i]));
      }
    }
  }
}

TEST_CASE("d²/dx² Σ x³ = 6x, through pow and through mul", "[higher-order][f64]") {
  const Tensor x0 = any_values({9});
  for (const bool through_pow : {true, false}) {
    INFO((through_pow ? "pow(x, 3)" : "x ⊙ x ⊙ x"));
    const Tensor x = requires_grad_(x0.clone_data());
    const Tensor cube = through_pow ? pow(x, real(3)) : mul(mul(x, x), x);
    const Tensor first = autograd::grad({sum(cube)}, {x}, {}, {.create_graph = true})[0];
    const Tensor second = autograd::grad({sum(first)}, {x})[0];
    for (int64_t i = 0; i < x.numel(); ++i) {
      INFO("element " << i);
      CHECK(first.data()[i] == Approx(3 * x0.data()[i] * x0.data()[i]).epsilon(1e-14));
      CHECK(second.data()[i] == Approx(6 * x0.data()[i]).epsilon(1e-14));
    }
  }
}

TEST_CASE("second derivatives of tanh and sigmoid equal their closed forms",
          "[higher-order][f64]") {
  // tanh'' = −2 t (1 − t²),  σ'' = σ (1 − σ)(1 − 2σ)
  const Tensor x0 = any_values({2, 3, 4});
  for (const bool is_tanh : {true, false}) {
    INFO((is_tanh ? "tanh" : "sigmoid"));
    const Tensor x = requires_grad_(x0.clone_data());
    const Tensor first =
        autograd::grad({sum(is_tanh ? tanh(x) : sigmoid(x))}, {x}, {}, {.create_graph = true})[0];
    const Tensor second = autograd::grad({sum(first)}, {x})[0];
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = x0.data()[i];
      const double t = std::tanh(v), s = 1 / (1 + std::exp(-v));
      const double expected = is_tanh ? -2 * t * (1 - t * t) : s * (1 - s) * (1 - 2 * s);
      CHECK(second.data()[i] == Approx(expected).margin(1e-14));
    }
  }
}

TEST_CASE("the Hessian of Σ (a b)² equals its closed form", "[higher-order][f64]") {
  // f = Σ (ab)²,  ∂f/∂a = 2 (ab) bᵀ. For a direction V of a's shape,
  // φ = ⟨∂f/∂a, V⟩ = 2 ⟨ab, Vb⟩, so
  //   ∂φ/∂a = 2 V b bᵀ                  (row (i,k) of the Hessian in a: 2 δᵢⱼ (bbᵀ)ₖₗ)
  //   ∂φ/∂b = 2 (aᵀ V b + Vᵀ a b)       (the mixed block)
  // With V = each unit matrix E_jl in turn, the first gives the whole Hessian in a.
  const int64_t M = 3, K = 4, N = 2;
  const Tensor a0 = any_values({M, K}), b0 = any_values({K, N});
  const Tensor a = requires_grad_(a0.clone_data()), b = requires_grad_(b0.clone_data());
  const Tensor grad_a =
      autograd::grad({sum(pow(matmul(a, b), real(2)))}, {a}, {}, {.create_graph = true})[0];
  auto bbT = [&](int64_t k, int64_t l) {
    double total = 0;
    for (int64_t n = 0; n < N; ++n) total += b0.at({k, n}) * b0.at({l, n});
    return total;
  };
  for (int64_t j = 0; j < M; ++j) {
    for (int64_t l = 0; l < K; ++l) {
      Tensor V = zeros({M, K});
      V.set({j, l}, 1);
      const std::vector<Tensor> row =
          autograd::grad({sum(mul(grad_a, V))}, {a, b}, {}, {.retain_graph = true});
      for (int64_t i = 0; i < M; ++i) {
        for (int64_t k = 0; k < K; ++k) {
          INFO("∂²f/∂a" << i << k << "∂a" << j << l);
          CHECK(row[0].at({i, k}) == Approx(i == j ? 2 * bbT(k, l) : 0.0).margin(1e-13));
        }
      }
      // ∂φ/∂b = 2 (aᵀ V b + Vᵀ a b) with V = E_jl: 2 (a_{j,·}ᵀ b_{l,·} + e_l (ab)_{j,·})
      for (int64_t k = 0; k < K; ++k) {
        for (int64_t n = 0; n < N; ++n) {
          double ab_jn = 0;
          for (int64_t m = 0; m < K; ++m) ab_jn += a0.at({j, m}) * b0.at({m, n});
          const double expected = 2 * (a0.at({j, k}) * b0.at({l, n}) + (k == l ? ab_jn : 0.0));
          INFO("∂²f/∂b" << k << n << "∂a" << j << l);
          CHECK(row[1].at({k, n}) == Approx(expected).margin(1e-13));
        }
      }
    }
  }
}

TEST_CASE("the second derivative of an embedding lookup reaches the table's rows read",
          "[higher-order][f64]") {
  // f = Σ_p r_p · W[ids_p]³ (elementwise cube, summed over D): ∂f/∂W[v] = 3 Σ_{p: ids_p = v} r_p
  // W[v]², and the derivative of Σ ∂f/∂W is 6 W[v] Σ_{p: ids_p = v} r_p; 0 on the padding row and
  // on rows never read.
  const std::vector<int64_t> ids = {3, 1, 3, 0, 4, 1};
  const std::vector<real> r = {0.5, -1, 2, 1.5, -0.25, 3};
  for (const bool sparse : {false, true}) {
    INFO((sparse ? "sparse" : "dense"));
    const Tensor W0 = any_values({6, 3});
    const Tensor W = requires_grad_(W0.clone_data());
    const Tensor read = embedding(W, ids, Shape{6}, /*padding_idx=*/1, sparse);  // (6,3)
    const Tensor loss = sum(mul(pow(read, real(3)), reshape(from_vector(r), {6, 1})));
    const Tensor first = autograd::grad({loss}, {W}, {}, {.create_graph = true})[0];
    const Tensor second = autograd::grad({sum(first)}, {W})[0];
    for (int64_t v = 0; v < 6; ++v) {
      double weight = 0;
      for (size_t p = 0; p < ids.size(); ++p) weight += ids[p] == v && v != 1 ? r[p] : 0;
      for (int64_t d = 0; d < 3; ++d) {
        INFO("row " << v << " column " << d);
        CHECK(second.at({v, d}) == Approx(6 * W0.at({v, d}) * weight).margin(1e-13));
      }
    }
  }
}

}  // namespace test_higher_order_ops
