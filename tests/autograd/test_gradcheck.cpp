// tests/autograd/test_gradcheck.cpp — every op's backward against central
// differences, in double precision.
//
// One table drives one loop: a row names the op (its first word must be the
// function's name, declared in a header under autograd/), gives the function of the inputs, one
// or more sets of inputs (the shapes: sizes 1, 7, 8, 9 for the SIMD tails,
// broadcasting, views), and a note on where the inputs were put and why
// (kinks, domains, the finite-difference step). Adding an op = adding a row;
// the "covers every op" test reads every header under autograd/ and fails
// when a row is missing. Every row runs on the fast path and on the
// reference path (autograd/fast/fast.hpp).
//
// gradcheck (autograd/gradcheck.hpp) uses ε = 1e-6, and passes an element
// when |analytic − numeric| ≤ 1e-6 + 1e-5·|numeric|. Inputs are kept at least
// 0.05 away from every kink, so no ±ε step crosses one.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "attograd.hpp"

namespace test_gradcheck {

using namespace attograd;

namespace {

using Inputs = std::vector<Tensor>;

struct GradcheckRow {
  std::string name;            // "op" or "op: what this row exercises"
  GradcheckFunction function;  // the inputs → one output tensor
  std::vector<Inputs> cases;   // each is one call of gradcheck
  std::string note;            // kinks avoided, domain, step
};

// Inputs are drawn from one seeded generator so every run checks the same
// numbers; each helper says which region of the real line it draws from.
Generator& input_generator() {
  static Generator generator(20240601);
  return generator;
}

// Uniform in [−2, 2]: for ops that are smooth everywhere.
Tensor any_values(const Shape& shape) { return uniform(shape, -2.0, 2.0, input_generator()); }

// Uniform in [0.5, 2]: for log, sqrt, fractional powers and denominators.
Tensor positive_values(const Shape& shape) { return uniform(shape, 0.5, 2.0, input_generator()); }

// |x| in [0.1, 2] with a random sign: at least 0.1 from relu's kink at 0.
Tensor off_zero_values(const Shape& shape) {
  Tensor t = uniform(shape, 0.1, 2.0, input_generator());
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (input_generator().bernoulli(0.5)) t.data()[i] = -t.data()[i];
  }
  return t;
}

// A shuffled 0.1·(0, 1, …, n−1) plus a little noise: every entry is at least
// 0.05 from every other, so max has a unique winner that a ±ε step cannot change.
Tensor distinct_values(const Shape& shape) {
  const int64_t n = shape.numel();
  std::vector<real> values(n);
  for (int64_t i = 0; i < n; ++i) {
    values[i] =
        real(0.1) * real(i) - real(0.05) * real(n) + real(0.01) * real(input_generator().uniform());
  }
  for (int64_t i = n - 1; i > 0; --i) {
    std::swap(values[i], values[input_generator().below(static_cast<uint64_t>(i + 1))]);
  }
  return from_vector(values, shape);
}

// One case per shape, each input drawn by `draw`.
std::vector<Inputs> each_shape(Tensor (*draw)(const Shape&), const std::vector<Shape>& shapes) {
  std::vector<Inputs> cases;
  for (const Shape& shape : shapes) cases.push_back({draw(shape)});
  return cases;
}

// The shapes every elementwise op is checked on: the SIMD tails (1, 7, 8, 9
// against widths 4 and 8), a 0-d scalar and a 3-D block.
const std::vector<Shape> kElementwiseShapes = {{1}, {7}, {8}, {9}, {}, {2, 3, 4}};

// A 0/1 mask as a constant tensor (no gradient).
Tensor mask_of(const std::vector<real>& values, const Shape& shape) {
  return from_vector(values, shape);
}

std::vector<GradcheckRow> gradcheck_table() {
  input_generator().seed(20240601);  // the same numbers on every call
  std::vector<GradcheckRow> rows;
  auto binary = [&](std::string name, GradcheckFunction f, Tensor (*draw_b)(const Shape&),
                    std::string note) {
    std::vector<Inputs> cases;
    // Same shapes, then every broadcasting pattern the models use. (6,17) by
    // (17), (1) by (2,9) and (3,1,17) by (17): a factor broadcast along
    // leading axes only, whose gradient mul sums in one pass (column_dots),
    // with columns past one register of 8 or 16 floats.
    for (const auto& [a, b] : std::vector<std::pair<Shape, Shape>>{{{1}, {1}},
                                                                   {{6, 17}, {17}},
                                                                   {{1}, {2, 9}},
                                                                   {{3, 1, 17}, {17}},
                                                                   {{7}, {7}},
                                                                   {{8}, {8}},
                                                                   {{9}, {9}},
                                                                   {{3, 1}, {4}},
                                                                   {{2, 3, 4}, {3, 1}},
                                                                   {{}, {2, 3}},
                                                                   {{2, 3}, {}},
                                                                   {{1, 9}, {7, 1}},
                                                                   {{4, 1, 3}, {2, 1}}}) {
      cases.push_back({any_values(a), draw_b(b)});
    }
    rows.push_back({std::move(name), std::move(f), std::move(cases), std::move(note)});
  };

  // ---- Elementwise binary, broadcasting ------------------------------------
  binary(
      "add", [](const Inputs& x) { return add(x[0], x[1]); }, any_values, "linear");
  binary(
      "sub", [](const Inputs& x) { return sub(x[0], x[1]); }, any_values, "linear");
  binary(
      "mul", [](const Inputs& x) { return mul(x[0], x[1]); }, any_values, "bilinear");
  binary(
      "div", [](const Inputs& x) { return div(x[0], x[1]); }, positive_values,
      "denominators in [0.5, 2], away from the pole at 0");
  rows.push_back({"mul: a value times itself",
                  [](const Inputs& x) { return mul(x[0], x[0]); },
                  {{any_values({7})}},
                  "both gradients land on one input"});
  rows.push_back({"add: operators with a real on either side",
                  [](const Inputs& x) {
                    return (real(2.5) * x[0] - real(1)) / real(3) + real(1) / x[0] +
                           (real(4) - x[0]) * real(0.5) + (x[0] + real(2)) + (-x[0]);
                  },
                  {{positive_values({9})}},
                  "x in [0.5, 2] for 1/x"});

  // ---- Elementwise unary ---------------------------------------------------
  auto unary = [&](std::string name, GradcheckFunction f, Tensor (*draw)(const Shape&),
                   std::string note) {
    rows.push_back(
        {std::move(name), std::move(f), each_shape(draw, kElementwiseShapes), std::move(note)});
  };
  unary(
      "neg", [](const Inputs& x) { return neg(x[0]); }, any_values, "linear");
  unary(
      "exp", [](const Inputs& x) { return exp(x[0]); }, any_values, "smooth");
  unary(
      "log", [](const Inputs& x) { return log(x[0]); }, positive_values,
      "x in [0.5, 2]: log needs x > 0");
  unary(
      "sqrt", [](const Inputs& x) { return sqrt(x[0]); }, positive_values,
      "x in [0.5, 2]: away from the infinite slope at 0");
  unary(
      "sin", [](const Inputs& x) { return sin(x[0]); }, any_values, "smooth");
  unary(
      "cos", [](const Inputs& x) { return cos(x[0]); }, any_values, "smooth");
  unary(
      "tanh", [](const Inputs& x) { return tanh(x[0]); }, any_values, "smooth");
  unary(
      "sigmoid", [](const Inputs& x) { return sigmoid(x[0]); }, any_values, "smooth");
  unary(
      "relu", [](const Inputs& x) { return relu(x[0]); }, off_zero_values,
      "kink at 0: inputs moved off it, |x| >= 0.1 with random signs");
  unary(
      "softplus", [](const Inputs& x) { return softplus(x[0]); }, any_values, "smooth");
  unary(
      "gelu", [](const Inputs& x) { return gelu(x[0]); }, any_values, "smooth (tanh form)");
  unary(
      "pow: p = 3", [](const Inputs& x) { return pow(x[0], real(3)); }, any_values,
      "integer power, any sign");
  unary(
      "pow: p = 2.5", [](const Inputs& x) { return pow(x[0], real(2.5)); }, positive_values,
      "fractional power needs x > 0");
  unary(
      "pow: p = -1.5", [](const Inputs& x) { return pow(x[0], real(-1.5)); }, positive_values,
      "negative power: x in [0.5, 2], away from the pole");

  // ---- Reductions ------------------------------------------------------------
  rows.push_back({"sum: everything", [](const Inputs& x) { return sum(x[0]); },
                  each_shape(any_values, {{1}, {9}, {}, {2, 3, 4}}), "linear"});
  for (bool keepdim : {false, true}) {
    const std::string kd = keepdim ? " keepdim" : "";
    for (std::vector<int64_t> axes :
         std::vector<std::vector<int64_t>>{{0}, {1}, {2}, {-1}, {0, 2}, {1, 2}}) {
      rows.push_back({fmt::format("sum: axes {}{}", fmt::join(axes, ","), kd),
                      [axes, keepdim](const Inputs& x) { return sum(x[0], axes, keepdim); },
                      each_shape(any_values, {{2, 3, 4}, {7, 1, 9}}), "linear"});
      rows.push_back({fmt::format("mean: axes {}{}", fmt::join(axes, ","), kd),
                      [axes, keepdim](const Inputs& x) { return mean(x[0], axes, keepdim); },
                      each_shape(any_values, {{2, 3, 4}, {1, 8, 9}}), "linear"});
    }
    for (int64_t axis : {0, 1, 2, -1}) {
      rows.push_back({fmt::format("max: axis {}{}", axis, kd),
                      [axis, keepdim](const Inputs& x) { return max(x[0], axis, keepdim); },
                      each_shape(distinct_values, {{2, 3, 4}, {7, 1, 9}}),
                      "kink where two entries tie: entries distinct, >= 0.05 apart"});
    }
  }
  rows.push_back({"mean: everything", [](const Inputs& x) { return mean(x[0]); },
                  each_shape(any_values, {{1}, {8}, {}, {2, 3, 4}}), "linear"});
  rows.push_back({"max: everything", [](const Inputs& x) { return max(x[0]); },
                  each_shape(distinct_values, {{1}, {7}, {9}, {3, 5}}),
                  "entries distinct, >= 0.05 apart"});

  // ---- Matrix products ---------------------------------------------------------
  rows.push_back({"matmul",
                  [](const Inputs& x) { return matmul(x[0], x[1]); },
                  {{any_values({3, 4}), any_values({4, 5})},
                   {any_values({7, 9}), any_values({9, 8})},
                   {any_values({1, 17}), any_values({17, 1})},
                   {any_values({9, 1}), any_values({1, 7})},
                   {any_values({8, 8}), any_values({8, 8})},
                   {any_values({1, 1}), any_values({1, 1})}},
                  "bilinear; odd sizes exercise the kernel's column tails"});
  rows.push_back(
      {"matmul: transposed left operand (a view)",
       [](const Inputs& x) { return matmul(transpose(x[0], 0, 1), x[1]); },
       {{any_values({9, 7}), any_values({9, 8})}, {any_values({4, 3}), any_values({4, 5})}},
       "the kernel reads the view as Layout::transposed"});
  rows.push_back(
      {"matmul: transposed right operand (a view, like Linear's Wᵀ)",
       [](const Inputs& x) { return matmul(x[0], transpose(x[1], 0, 1)); },
       {{any_values({7, 9}), any_values({8, 9})}, {any_values({1, 17}), any_values({3, 17})}},
       "bilinear"});
  rows.push_back(
      {"matmul: both operands transposed views",
       [](const Inputs& x) { return matmul(transpose(x[0], 0, 1), transpose(x[1], 0, 1)); },
       {{any_values({9, 7}), any_values({8, 9})}},
       "bilinear"});
  rows.push_back({"matmul: strided operand that must be copied",
                  [](const Inputs& x) { return matmul(slice(x[0], 1, 0, 9, 2), x[1]); },
                  {{any_values({7, 9}), any_values({5, 8})}},
                  "every other column: neither layout fits, so the op copies"});
  rows.push_back({"bmm",
                  [](const Inputs& x) { return bmm(x[0], x[1]); },
                  {{any_values({2, 3, 4}), any_values({2, 4, 5})},
                   {any_values({1, 7, 9}), any_values({1, 9, 8})},
                   {any_values({3, 1, 9}), any_values({3, 9, 1})}},
                  "bilinear"});
  rows.push_back({"bmm: transposed views (attention's Q Kᵀ)",
                  [](const Inputs& x) { return bmm(x[0], transpose(x[1], 1, 2)); },
                  {{any_values({2, 3, 4}), any_values({2, 5, 4})}},
                  "bilinear"});

  // ---- Shapes and views -----------------------------------------------------------
  rows.push_back({"reshape",
                  [](const Inputs& x) {
                    return reshape(x[0], {4, -1});
                  },
                  each_shape(any_values, {{2, 3, 4}, {8}}), "a permutation of entries"});
  rows.push_back({"reshape: a transposed (non-contiguous) input",
                  [](const Inputs& x) { return reshape(transpose(x[0], 0, 1), {-1}); },
                  each_shape(any_values, {{3, 4}}), "reshape has to copy"});
  rows.push_back({"view",
                  [](const Inputs& x) {
                    return view(x[0], {6, 4});
                  },
                  each_shape(any_values, {{2, 3, 4}}), "a permutation of entries"});
  rows.push_back({"contiguous", [](const Inputs& x) { return contiguous(transpose(x[0], 0, 2)); },
                  each_shape(any_values, {{2, 3, 4}}), "the copy of a permuted view"});
  rows.push_back({"transpose", [](const Inputs& x) { return transpose(x[0], 0, -1); },
                  each_shape(any_values, {{2, 3, 4}, {7, 9}}), "a permutation of entries"});
  rows.push_back({"permute",
                  [](const Inputs& x) {
                    return permute(x[0], {2, 0, 1});
                  },
                  each_shape(any_values, {{2, 3, 4}}), "a permutation of entries"});
  rows.push_back({"squeeze", [](const Inputs& x) { return squeeze(x[0], 1); },
                  each_shape(any_values, {{3, 1, 4}}), "a permutation of entries"});
  rows.push_back({"unsqueeze", [](const Inputs& x) { return unsqueeze(x[0], -1); },
                  each_shape(any_values, {{3, 4}, {}}), "a permutation of entries"});
  rows.push_back({"expand",
                  [](const Inputs& x) {
                    return expand(x[0], {2, 3, 4});
                  },
                  each_shape(any_values, {{3, 1}, {1, 4}, {}}),
                  "each input entry appears several times: its gradient is a sum"});
  rows.push_back({"expand: feeding mul (stride-0 view into an elementwise op)",
                  [](const Inputs& x) {
                    return mul(expand(x[0], {3, 4}), x[1]);
                  },
                  {{any_values({3, 1}), any_values({3, 4})}},
                  "bilinear"});
  rows.push_back({"repeat",
                  [](const Inputs& x) {
                    return repeat(x[0], {2, 1, 3});
                  },
                  each_shape(any_values, {{3, 2}, {2, 3, 1}}), "tiles: gradient sums the copies"});
  rows.push_back({"repeat_interleave",
                  [](const Inputs& x) { return repeat_interleave(x[0], 3, 1); },
                  each_shape(any_values, {{2, 3}, {2, 1, 4}}), "each entry three times in place"});
  rows.push_back({"narrow", [](const Inputs& x) { return narrow(x[0], 1, 2, 5); },
                  each_shape(any_values, {{3, 9}, {2, 7, 2}}),
                  "a window; the rest gets zero gradient"});
  rows.push_back({"slice", [](const Inputs& x) { return slice(x[0], -1, 1, 8, 3); },
                  each_shape(any_values, {{3, 9}, {8}}), "step 3: a strided window"});
  rows.push_back({"slice: negative start and end",
                  [](const Inputs& x) { return slice(x[0], 0, -3, -1); },
                  each_shape(any_values, {{7, 2}}), "a window"});
  rows.push_back({"select", [](const Inputs& x) { return select(x[0], 1, -1); },
                  each_shape(any_values, {{3, 4, 2}, {2, 9}}), "drops the axis"});
  rows.push_back({"cat",
                  [](const Inputs& x) {
                    return cat({x[0], x[1], x[2]}, 1);
                  },
                  {{any_values({2, 1, 3}), any_values({2, 4, 3}), any_values({2, 2, 3})}},
                  "each input gets its slice of the gradient"});
  rows.push_back({"cat: 1-D, sizes 7, 1 and 9",
                  [](const Inputs& x) {
                    return cat({x[0], x[1], x[2]}, 0);
                  },
                  {{any_values({7}), any_values({1}), any_values({9})}},
                  "each input gets its slice of the gradient"});
  rows.push_back({"cat: the same tensor twice",
                  [](const Inputs& x) {
                    return cat({x[0], x[0]}, 0);
                  },
                  {{any_values({2, 3})}},
                  "both slices accumulate into one input"});
  rows.push_back({"stack: axis 0",
                  [](const Inputs& x) {
                    return stack({x[0], x[1], x[0]}, 0);
                  },
                  {{any_values({3, 4}), any_values({3, 4})}},
                  "new axis; x[0] used twice"});
  rows.push_back({"stack: last axis",
                  [](const Inputs& x) {
                    return stack({x[0], x[1]}, -1);
                  },
                  {{any_values({3, 4}), any_values({3, 4})}, {any_values({}), any_values({})}},
                  "new axis"});

  // ---- Indexing and masks --------------------------------------------------------
  rows.push_back({"index_select: a repeated index",
                  [](const Inputs& x) {
                    return index_select(x[0], 0, {2, 0, 2, 3, 2});
                  },
                  each_shape(any_values, {{4, 3}, {5}}),
                  "row 2 picked three times: its gradient is the sum of three"});
  rows.push_back({"index_select: inner axis",
                  [](const Inputs& x) {
                    return index_select(x[0], 1, {1, 1, 0});
                  },
                  each_shape(any_values, {{2, 3, 4}}), "a permutation with repeats"});
  rows.push_back({"gather",
                  [](const Inputs& x) {
                    return gather(x[0], 1, {0, 2, 2, 1, 1, 0}, {2, 3});
                  },
                  each_shape(any_values, {{2, 4}, {3, 3}}), "repeated indices within a row"});
  rows.push_back({"gather: axis 0",
                  [](const Inputs& x) {
                    return gather(x[0], 0, {1, 0, 1, 1}, {2, 2});
                  },
                  each_shape(any_values, {{2, 3}}), "index shape smaller than the input"});
  rows.push_back({"masked_fill",
                  [](const Inputs& x) {
                    return masked_fill(x[0], mask_of({1, 0, 0, 1}, {1, 4}), real(-5));
                  },
                  each_shape(any_values, {{3, 4}}),
                  "mask broadcast over rows; filled entries get no gradient. Fill value -5, "
                  "not attention's -1e9: a huge constant in the output swamps the ±ε change "
                  "of Σ f ⊙ R in double"});
  rows.push_back({"masked_select",
                  [](const Inputs& x) {
                    return masked_select(x[0], mask_of({0, 1, 1, 0, 1, 0}, {2, 3}));
                  },
                  each_shape(any_values, {{2, 3}, {4, 2, 3}}),
                  "mask broadcast over the leading axis"});

  // ---- Softmax ---------------------------------------------------------------------
  for (int64_t axis : {0, 1, 2, -1}) {
    rows.push_back({fmt::format("softmax: axis {}", axis),
                    [axis](const Inputs& x) { return softmax(x[0], axis); },
                    each_shape(any_values, {{2, 3, 4}, {7, 1, 9}}), "smooth"});
    rows.push_back({fmt::format("log_softmax: axis {}", axis),
                    [axis](const Inputs& x) { return log_softmax(x[0], axis); },
                    each_shape(any_values, {{2, 3, 4}, {1, 8, 9}}), "smooth"});
  }
  rows.push_back({"softmax: a transposed view",
                  [](const Inputs& x) { return softmax(transpose(x[0], 0, 1), 1); },
                  each_shape(any_values, {{9, 7}}), "smooth"});

  // ---- Non-contiguous inputs to elementwise ops --------------------------------------
  rows.push_back(
      {"exp: a transposed view", [](const Inputs& x) { return exp(transpose(x[0], 0, 1)); },
       each_shape(any_values, {{7, 9}}), "smooth; the view is copied before the kernel"});
  rows.push_back({"mul: transposed view times a contiguous tensor",
                  [](const Inputs& x) { return mul(transpose(x[0], 0, 1), x[1]); },
                  {{any_values({9, 7}), any_values({7, 9})}, {any_values({4, 3}), any_values({4})}},
                  "bilinear"});
  rows.push_back(
      {"add: strided slices",
       [](const Inputs& x) { return add(slice(x[0], 1, 0, 9, 2), slice(x[1], 0, 1, 4)); },
       {{any_values({3, 9}), any_values({4, 5})}},
       "linear"});

  // ---- Recurrent ----------------------------------------------------------------------
  rows.push_back({"gru_cell",
                  [](const Inputs& x) { return gru_cell(x[0], x[1], x[2], x[3], x[4], x[5]); },
                  {{any_values({3, 4}), any_values({3, 5}), any_values({15, 4}),
                    any_values({15, 5}), any_values({15}), any_values({15})},
                   {any_values({1, 7}), any_values({1, 9}), any_values({27, 7}),
                    any_values({27, 9}), any_values({27}), any_values({27})}},
                  "smooth (sigmoid, tanh, products)"});
  rows.push_back(
      {"gru_cell: without biases",
       [](const Inputs& x) { return gru_cell(x[0], x[1], x[2], x[3], Tensor(), Tensor()); },
       {{any_values({2, 3}), any_values({2, 4}), any_values({12, 3}), any_values({12, 4})}},
       "smooth"});

  rows.push_back({"gru_sequence",
                  [](const Inputs& x) { return gru_sequence(x[0], x[1], x[2], x[3], x[4], x[5]); },
                  {{any_values({3, 2, 4}), any_values({2, 5}), any_values({15, 4}),
                    any_values({15, 5}), any_values({15}), any_values({15})},
                   {any_values({2, 1, 7}), any_values({1, 9}), any_values({27, 7}),
                    any_values({27, 9}), any_values({27}), any_values({27})},
                   {any_values({1, 8, 8}), any_values({8, 8}), any_values({24, 8}),
                    any_values({24, 8}), any_values({24}), any_values({24})}},
                  "smooth; h reaches the loss directly and through every later step"});
  rows.push_back({"gru_sequence: batch-first input read through a transpose, no h0, no biases",
                  [](const Inputs& x) {
                    return gru_sequence(transpose(x[0], 0, 1), Tensor(), x[1], x[2], Tensor(),
                                        Tensor());
                  },
                  {{any_values({2, 4, 3}), any_values({12, 3}), any_values({12, 4})}},
                  "smooth"});

  // ---- Linear (autograd/ops_linear.hpp) ------------------------------------------------
  rows.push_back({"linear: x Wᵀ + b",
                  [](const Inputs& x) { return linear(x[0], x[1], x[2]); },
                  {{any_values({3, 7}), any_values({5, 7}), any_values({5})},
                   {any_values({1, 9}), any_values({17, 9}), any_values({17})},
                   {any_values({8, 1}), any_values({1, 1}), any_values({1})}},
                  "affine"});
  rows.push_back(
      {"linear: three steps sharing the weight, no bias",
       [](const Inputs& x) {
         const Tensor first = linear(x[0], x[2], Tensor());
         return first * linear(x[1], x[2], Tensor()) + linear(first, x[3], Tensor());
       },
       {{any_values({2, 4}), any_values({2, 4}), any_values({3, 4}), any_values({3, 3})}},
       "bilinear in the weight; W's gradient is the sum of two products"});
  rows.push_back({"linear_columns: a block of W's columns, x at column 2 (sizes 1, 7, 8, 9)",
                  [](const Inputs& x) { return linear_columns(x[0], x[1], 2, x[2]); },
                  {{any_values({3, 7}), any_values({5, 11}), any_values({5})},
                   {any_values({1, 8}), any_values({9, 10}), any_values({9})},
                   {any_values({9, 1}), any_values({1, 3}), any_values({1})},
                   {any_values({1, 9}), any_values({7, 17}), any_values({7})}},
                  "affine"});
  rows.push_back(
      {"linear_columns: a layer over [a; b] as two blocks, the first's output the second's bias",
       [](const Inputs& x) {
         // rows of x[0] and x[1] are the halves of one row of input each
         const Tensor part = linear_columns(x[0], x[2], 0, x[3]);  // (1,out)
         return linear_columns(x[1], x[2], 4, reshape(part, {x[2].shape()[0]}));
       },
       {{any_values({1, 4}), any_values({1, 5}), any_values({8, 9}), any_values({8})},
        {any_values({1, 4}), any_values({1, 3}), any_values({1, 7}), any_values({1})}},
       "affine"});
  rows.push_back({"linear_columns: KnownInputsLinear's T steps over [a_t; b_t] (T = 1, 7, 8, 9)",
                  [](const Inputs& x) {
                    // x[0] (T,n_a): the known a_t; x[1] (T,n_b): the b_t; x[2] W; x[3] bias
                    std::vector<Tensor> known;
                    const int64_t T = x[0].shape()[0];
                    for (int64_t t = 0; t < T; ++t)
                      known.push_back(reshape(select(x[0], 0, t), {1, -1}));
                    const KnownInputsLinear layer(known, x[2], x[3]);
                    std::vector<Tensor> steps;
                    for (int64_t t = 0; t < T; ++t) {
                      steps.push_back(layer.step(t, reshape(select(x[1], 0, t), {1, -1})));
                    }
                    return cat(steps, 0);
                  },
                  {{any_values({1, 4}), any_values({1, 5}), any_values({8, 9}), any_values({8})},
                   {any_values({7, 3}), any_values({7, 2}), any_values({1, 5}), any_values({1})},
                   {any_values({8, 2}), any_values({8, 7}), any_values({9, 9}), any_values({9})},
                   {any_values({9, 1}), any_values({9, 1}), any_values({7, 2}), any_values({7})}},
                  "affine"});
  rows.push_back({"linear_with_values: the values computed beforehand, the gradients of linear",
                  [](const Inputs& x) {
                    Tensor values;
                    {
                      const NoGradGuard no_grad;
                      values = linear(x[0], x[1], x[2]);
                    }
                    return linear_with_values(x[0], x[1], x[2], values);
                  },
                  {{any_values({3, 7}), any_values({5, 7}), any_values({5})},
                   {any_values({1, 9}), any_values({17, 9}), any_values({17})}},
                  "affine"});

  // ---- Layer normalisation (autograd/ops_norm.hpp) --------------------------------------
  // The output is multiplied by random weights x[3] so the gradient of x is
  // not the zero that Σ_j x̂_j = 0 would give for a plain sum.
  for (const bool fused : {true, false}) {
    const std::string op = fused ? "layer_norm" : "layer_norm_composed";
    rows.push_back(
        {op + ": gain and bias over the last axis",
         [fused](const Inputs& x) {
           const Shape last{x[0].shape()[x[0].dim() - 1]};
           return (fused ? layer_norm(x[0], last, x[1], x[2])
                         : layer_norm_composed(x[0], last, x[1], x[2])) *
                  x[3];
         },
         {{any_values({3, 7}), any_values({7}), any_values({7}), any_values({3, 7})},
          {any_values({2, 2, 8}), any_values({8}), any_values({8}), any_values({2, 2, 8})},
          {any_values({9}), any_values({9}), any_values({9}), any_values({9})},
          {any_values({5, 2}), any_values({2}), any_values({2}), any_values({5, 2})}},
         "smooth: σ² + ε ≥ 1e-5 stays away from √'s kink at 0"});
    rows.push_back({op + ": two normalised axes, no gain or bias",
                    [fused](const Inputs& x) {
                      return (fused ? layer_norm(x[0], {3, 4}, Tensor(), Tensor())
                                    : layer_norm_composed(x[0], {3, 4}, Tensor(), Tensor())) *
                             x[1];
                    },
                    {{any_values({2, 3, 4}), any_values({2, 3, 4})},
                     {any_values({1, 3, 4}), any_values({1, 3, 4})}},
                    "smooth"});
  }

  // ---- Lookup, masked softmax, losses ----------------------------------------------------
  rows.push_back(
      {"embedding: ids repeated, a padding row",
       [](const Inputs& x) {
         // The padding row (id 1) gets no gradient by definition, so
         // the loss must not depend on it: its positions are masked.
         const Tensor not_padding = reshape(from_vector({1, 0, 1, 1, 1, 0, 0, 1}), {2, 4, 1});
         return embedding(x[0], {3, 1, 3, 0, 6, 1, 1, 2}, Shape{2, 4}, 1, false) *
                (x[1] * not_padding);
       },
       {{any_values({7, 9}), any_values({2, 4, 9})}, {any_values({7, 1}), any_values({2, 4, 1})}},
       "linear in the table; the padding positions are masked out of the loss"});
  rows.push_back(
      {"embedding: sparse, the gradient named as the rows read",
       [](const Inputs& x) {
         return embedding(x[0], {5, 0, 5, 2, 8}, Shape{5}, std::nullopt, true) * x[1];
       },
       {{any_values({9, 8}), any_values({5, 8})}, {any_values({9, 16}), any_values({5, 16})}},
       "linear in the table"});
  rows.push_back({"masked_softmax: one valid length per example",
                  [](const Inputs& x) {
                    return masked_softmax(x[0], {2, 7}) * x[1];
                  },
                  {{any_values({2, 3, 7}), any_values({2, 3, 7})},
                   {any_values({2, 1, 9}), any_values({2, 1, 9})}},
                  "smooth; masked entries get 0"});
  rows.push_back(
      {"masked_softmax: one valid length per query, and none",
       [](const Inputs& x) {
         return masked_softmax(x[0], {1, 8, 9, 3}) * x[1] + masked_softmax(x[0], {}) * x[1];
       },
       {{any_values({2, 2, 9}), any_values({2, 2, 9})}},
       "smooth"});
  // attention_pool's fused kernel keeps rows of up to 4W scalar values in
  // registers (W = 8 doubles): Tk 7, 8, 9 and 17 there, 40 past it; dv 4
  // takes the row-by-row path. On the reference path it is mul, softmax and bmm.
  rows.push_back({"attention_pool: softmax over the keys, the weighted sum of the values",
                  [](const Inputs& x) { return attention_pool(x[0], x[1]) * x[2]; },
                  {{any_values({2, 3, 7}), any_values({2, 7, 1}), any_values({2, 3, 1})},
                   {any_values({1, 1, 8}), any_values({1, 8, 1}), any_values({1, 1, 1})},
                   {any_values({3, 1, 9}), any_values({3, 9, 1}), any_values({3, 1, 1})},
                   {any_values({2, 2, 17}), any_values({2, 17, 1}), any_values({2, 2, 1})},
                   {any_values({2, 2, 40}), any_values({2, 40, 1}), any_values({2, 2, 1})},
                   {any_values({2, 2, 9}), any_values({2, 9, 4}), any_values({2, 2, 4})},
                   {any_values({1, 1, 1}), any_values({1, 1, 1}), any_values({1, 1, 1})}},
                  "smooth"});
  rows.push_back({"attention_pool: scaled by one factor, and by one per key",
                  [](const Inputs& x) {
                    return attention_pool(x[0], x[1], x[2]) * x[3] +
                           attention_pool(x[0], x[1], x[4]) * x[3];
                  },
                  {{any_values({2, 3, 7}), any_values({2, 7, 1}), any_values({1}),
                    any_values({2, 3, 1}), any_values({7})},
                   {any_values({3, 1, 9}), any_values({3, 9, 1}), any_values({}),
                    any_values({3, 1, 1}), any_values({9})},
                   {any_values({2, 2, 40}), any_values({2, 40, 1}), any_values({1}),
                    any_values({2, 2, 1}), any_values({40})},
                   {any_values({2, 2, 9}), any_values({2, 9, 4}), any_values({1}),
                    any_values({2, 2, 4}), any_values({9})}},
                  "smooth"});
  rows.push_back(
      {"attention_pool: scores read through a transposed view",
       [](const Inputs& x) { return attention_pool(transpose(x[0], 1, 2), x[1]) * x[2]; },
       {{any_values({2, 9, 3}), any_values({2, 9, 1}), any_values({2, 3, 1})}},
       "smooth"});
  // causal_attention: L = 1, 7, 8, 9 and 35 (past one 32-key tile of the
  // online softmax, so a row is rescaled), d = 1, 7, 8, 9 (the SIMD tails),
  // N = B·H = 1 and 3. On both paths and under create_graph the fused op;
  // its recorded backward is causal_attention_composed's.
  for (const bool fused : {true, false}) {
    rows.push_back({fused ? "causal_attention: q, k, v of (N,L,d), query i sees keys 0 … i"
                          : "causal_attention_composed: bmm, masked softmax, bmm",
                    [fused](const Inputs& x) {
                      return (fused ? causal_attention(x[0], x[1], x[2])
                                    : causal_attention_composed(x[0], x[1], x[2])) *
                             x[3];
                    },
                    {{any_values({1, 1, 1}), any_values({1, 1, 1}), any_values({1, 1, 1}),
                      any_values({1, 1, 1})},
                     {any_values({3, 7, 8}), any_values({3, 7, 8}), any_values({3, 7, 8}),
                      any_values({3, 7, 8})},
                     {any_values({1, 8, 9}), any_values({1, 8, 9}), any_values({1, 8, 9}),
                      any_values({1, 8, 9})},
                     {any_values({3, 9, 1}), any_values({3, 9, 1}), any_values({3, 9, 1}),
                      any_values({3, 9, 1})},
                     {any_values({1, 9, 7}), any_values({1, 9, 7}), any_values({1, 9, 7}),
                      any_values({1, 9, 7})},
                     {any_values({1, 35, 2}), any_values({1, 35, 2}), any_values({1, 35, 2}),
                      any_values({1, 35, 2})}},
                    "smooth; the output weighted by x[3] so every position's gradient differs"});
  }
  for (const Reduction reduction : {Reduction::none, Reduction::sum, Reduction::mean}) {
    rows.push_back(
        {fmt::format("squared_errors: reduction {}", static_cast<int>(reduction)),
         [reduction](const Inputs& x) { return squared_errors(x[0], x[1], reduction) * x[2]; },
         {{any_values({3, 7}), any_values({3, 7}),
           reduction == Reduction::none ? any_values({3, 7}) : any_values({})},
          {any_values({9}), any_values({9}),
           reduction == Reduction::none ? any_values({9}) : any_values({})}},
         "quadratic"});
  }
  rows.push_back({"negative_log_likelihood: an ignored target",
                  [](const Inputs& x) {
                    return negative_log_likelihood(x[0], {2, -100, 0, 6}, -100) * x[1];
                  },
                  {{any_values({4, 7}), any_values({4})}, {any_values({4, 9}), any_values({4})}},
                  "linear in the log-probabilities"});
  return rows;
}

std::string shapes_of(const Inputs& inputs) {
  std::vector<std::string> shapes;
  for (const Tensor& t : inputs) shapes.push_back(t.shape().str());
  return fmt::format("{}", fmt::join(shapes, " "));
}

// The first word of a row's name: the op it checks.
std::string op_of(const std::string& row_name) {
  return row_name.substr(0, row_name.find_first_of(": "));
}

// y = x² elementwise, but with the gradient of element `bad` scaled by
// `factor`: a backward that is wrong in exactly one place.
Tensor square_with_scaled_gradient(const Tensor& x, int64_t bad, real factor) {
  const Tensor values = x.contiguous_data();
  Tensor y = Tensor::empty(x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) y.data()[i] = values.data()[i] * values.data()[i];
  return record("square_with_scaled_gradient", y, {x}, [values, bad, factor](const Tensor& dy) {
    Tensor dx = (dy * (real(2) * values)).clone_data();  // dx = dy ⊙ 2x
    dx.data()[bad] *= factor;
    return Gradients{dx};
  });
}

}  // namespace

namespace {

// Runs `check` (gradcheck or gradgradcheck) on every case of every row,
// twice: on the fast path (the default, autograd/fast/fast.hpp) and on the
// reference path, so both forms of every gradient are checked.
void check_every_row(GradcheckResult (*check)(const GradcheckFunction&, const std::vector<Tensor>&,
                                              const GradcheckOptions&)) {
  int64_t cases = 0, elements = 0;
  for (const GradcheckRow& row : gradcheck_table()) {
    for (size_t c = 0; c < row.cases.size() * 2; ++c) {
      const Inputs& inputs = row.cases[c / 2];
      std::optional<fast::ReferencePath> reference;
      if (c % 2 == 1) reference.emplace();
      INFO(row.name << " | case " << c / 2 << (reference ? " (reference path)" : " (fast path)")
                    << ": inputs " << shapes_of(inputs) << " | " << row.note);
      GradcheckResult result;
      CHECK_NOTHROW(result = check(row.function, inputs, GradcheckOptions()));
      INFO(result.report);
      CHECK(result.passed);
      ++cases;
      elements += result.elements_checked;
    }
  }
  // Guard against a table that silently lost its rows.
  CHECK(cases > 200);
  CHECK(elements > 5000);
}

}  // namespace

TEST_CASE("every op passes gradcheck on the table's shapes", "[autograd][gradcheck][f64]") {
  check_every_row(gradcheck);
}

// The same rows, second derivatives: gradgradcheck (autograd/gradcheck.hpp)
// differentiates each row's gradient, formed with create_graph, again. With
// the coverage test below, every op declared under autograd/ is checked
// twice differentiable, on the fast path and on the reference path.
TEST_CASE("every op passes gradgradcheck on the table's shapes",
          "[autograd][gradcheck][higher-order][f64]") {
  check_every_row(gradgradcheck);
}

// Every header under autograd/ (fast/ included) is read: an op declared
// anywhere there needs a row, wherever it was added — and every row runs
// both gradcheck and gradgradcheck (the two test cases above).
TEST_CASE("the gradcheck table covers every op declared under autograd/", "[autograd][gradcheck]") {
  std::stringstream text;
  int headers = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           std::filesystem::path(ATTOGRAD_SOURCE_DIR) / "autograd")) {
    // engine.hpp declares the engine (record, grad, detach, sum_to …),
    // gradcheck.hpp the checker and op_helpers.hpp what writing an op takes
    // (adjoint …): functions on tensors, not ops.
    const std::string file = entry.path().filename().string();
    if (entry.path().extension() != ".hpp" || file == "engine.hpp" || file == "gradcheck.hpp" ||
        file == "op_helpers.hpp") {
      continue;
    }
    std::ifstream header(entry.path());
    REQUIRE(header.good());
    text << header.rdbuf() << '\n';
    ++headers;
  }
  REQUIRE(headers > 5);
  // Declarations look like "Tensor name(..." at the start of a line; operators
  // are named "operator+" and are checked through the rows of add, sub, …
  // Functions in a `namespace detail` block are the ops' own plumbing.
  const std::regex declaration(R"(^Tensor ([a-z_0-9]+)\()");
  std::set<std::string> declared;
  std::string line;
  bool in_detail = false;
  while (std::getline(text, line)) {
    if (line.rfind("namespace detail {", 0) == 0 ||
        line.rfind("namespace attograd::detail {", 0) == 0) {
      in_detail = true;
    }
    if (line.rfind("}  // namespace detail", 0) == 0 ||
        line.rfind("}  // namespace attograd::detail", 0) == 0) {
      in_detail = false;
    }
    std::smatch match;
    if (!in_detail && std::regex_search(line, match, declaration)) declared.insert(match[1]);
  }
  REQUIRE(declared.size() > 40);  // the parse found the header's ops

  std::set<std::string> covered;
  for (const GradcheckRow& row : gradcheck_table()) covered.insert(op_of(row.name));
  for (const std::string& op : declared) {
    INFO("a header under autograd/ declares "
         << op << " but tests/autograd/test_gradcheck.cpp has no row for it");
    CHECK(covered.count(op) == 1);
  }
  // And no row names an op that does not exist (a typo would hide a missing row).
  for (const std::string& op : covered) {
    INFO("row for unknown op " << op);
    CHECK(declared.count(op) == 1);
  }
}

TEST_CASE("gradcheck catches a backward that is 1% off in one element",
          "[autograd][gradcheck][f64]") {
  const Tensor x = any_values({3, 5});
  constexpr int64_t kBad = 7;
  // The same op with the factor 1 passes: the failure below is the 1%.
  const GradcheckResult right = gradcheck(
      [](const Inputs& in) { return square_with_scaled_gradient(in[0], kBad, real(1)); }, {x});
  INFO(right.report);
  CHECK(right.passed);

  const GradcheckResult wrong = gradcheck(
      [](const Inputs& in) { return square_with_scaled_gradient(in[0], kBad, real(1.01)); }, {x});
  INFO(wrong.report);
  CHECK_FALSE(wrong.passed);
  CHECK(wrong.input == 0);
  CHECK(wrong.element == kBad);
  CHECK(wrong.analytic == Approx(1.01 * wrong.numeric).epsilon(1e-6));
  CHECK_THAT(wrong.report, Catch::StartsWith("gradcheck FAILED: 15 elements; worst is input 0 "
                                             "element 7: analytic"));
}

TEST_CASE("gradcheck points at the input that is wrong", "[autograd][gradcheck][f64]") {
  // Two inputs; only the second one's gradient is wrong (element 2 of 4).
  auto f = [](const Inputs& in) {
    return in[0] + square_with_scaled_gradient(in[1], 2, real(1.01));
  };
  const GradcheckResult result = gradcheck(f, {any_values({4}), any_values({4})});
  INFO(result.report);
  CHECK_FALSE(result.passed);
  CHECK(result.input == 1);
  CHECK(result.element == 2);
  CHECK(result.elements_checked == 8);
}

}  // namespace test_gradcheck
