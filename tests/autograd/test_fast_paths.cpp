// tests/autograd/test_fast_paths.cpp — the engine's side of the speed
// mechanisms (autograd/fast/): deferred gradients stored, added and formed
// like any other, and the switch that turns every mechanism off.
#include <catch2/catch.hpp>
#include <cmath>
#include <optional>
#include <vector>

#include "attograd.hpp"

namespace test_fast_paths {

using namespace attograd;

namespace {

// Two dense gradients or a deferred and a dense one: equal to float rounding
// (the deferred one sums its rows in one product, in another order).
void require_close(const Tensor& a, const Tensor& b, double epsilon = 1e-5, double margin = 1e-6) {
  const std::vector<real> x = a.to_vector(), y = b.to_vector();
  REQUIRE(x.size() == y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    CHECK(double(x[i]) == Approx(double(y[i])).epsilon(epsilon).margin(margin));
  }
}

// grad(t) for the function f of the leaves, on the fast or the reference path.
template <typename Function>
std::vector<Tensor> gradients(const std::vector<Tensor>& leaves, bool reference_path, Function f) {
  std::optional<fast::ReferencePath> reference;
  if (reference_path) reference.emplace();
  for (const Tensor& leaf : leaves) zero_grad(leaf);
  backward(f());
  std::vector<Tensor> result;
  for (const Tensor& leaf : leaves) result.push_back(grad(leaf).clone_data());
  return result;
}

// apply_scaled(p, −0.1) gives p − 0.1·G bit for bit, G formed first and
// added in one rounding per entry (SGD::update's std::fma).
void check_applied_in_one_rounding(const fast::DeferredGradient& deferred, Generator& generator) {
  const Tensor dense = deferred.to_dense();
  Tensor p = randn(deferred.shape(), generator);
  Tensor expected = p.clone_data();
  for (int64_t i = 0; i < expected.numel(); ++i) {
    expected.data()[i] = std::fma(real(-0.1), dense.data()[i], expected.data()[i]);
  }
  deferred.apply_scaled(p.data(), real(-0.1));
  CHECK(p.to_vector() == expected.to_vector());
}

}  // namespace

TEST_CASE("a deferred weight gradient reaching a computed tensor is formed for its op",
          "[autograd][fast_paths]") {
  Generator generator(1);
  const Tensor v = requires_grad_(randn({4, 3}, generator));
  const Tensor x = randn({5, 3}, generator);
  // W = 2v is not a leaf: its deferred gradient is formed before mul's backward.
  auto f = [&] {
    const Tensor w = v * real(2);
    return sum(pow(linear(x, w, Tensor()), 2)) + sum(linear(x * real(0.5), w, Tensor()));
  };
  const auto fast_path = gradients({v}, false, f);
  const auto reference = gradients({v}, true, f);
  require_close(fast_path[0], reference[0]);
}

TEST_CASE("deferred gradients accumulate over backward calls and with dense ones",
          "[autograd][fast_paths]") {
  Generator generator(2);
  const Tensor w = requires_grad_(randn({6, 8}, generator));  // 48 entries; factors 2·(6 + 8)
  const Tensor x = randn({2, 8}, generator);
  auto once = [&] { return sum(pow(linear(x, w, Tensor()), 2)) + sum(w * w); };
  // Fast path: backward twice without zero_grad.
  zero_grad(w);
  backward(once());
  REQUIRE(fast::deferred_gradient_of(w) != nullptr);
  CHECK(autograd_meta(w)->grad.dense().defined());  // w * w's part, dense
  backward(once());
  CHECK(fast::deferred_gradient_of(w)->product_rows() == 4);  // 2 rows, twice
  const Tensor fast_total = grad(w).clone_data();
  CHECK(fast::deferred_gradient_of(w) == nullptr);
  // The same on the reference path.
  zero_grad(w);
  {
    const fast::ReferencePath reference;
    backward(once());
    CHECK(fast::deferred_gradient_of(w) == nullptr);
    backward(once());
  }
  require_close(fast_total, grad(w));
}

TEST_CASE("retain_graph runs a graph with deferred gradients twice", "[autograd][fast_paths]") {
  Generator generator(3);
  const Tensor w = requires_grad_(randn({2, 3}, generator));
  const Tensor x = randn({4, 3}, generator);
  const Tensor loss = sum(pow(linear(x, w, Tensor()), 2));
  backward(loss, Tensor(), {.retain_graph = true});
  const Tensor first = grad(w).clone_data();
  backward(loss);
  require_close(grad(w), first * real(2));
}

TEST_CASE("sparse embedding rows: repeated ids add, the padding row gets nothing",
          "[autograd][fast_paths]") {
  Generator generator(4);
  const Tensor table = requires_grad_(randn({6, 3}, generator));
  const Tensor readout = randn({5, 3}, generator);
  const std::vector<int64_t> ids = {4, 0, 4, 2, 0};
  auto f = [&](bool sparse) {
    return [&, sparse] { return sum(embedding(table, ids, Shape{5}, 2, sparse) * readout); };
  };
  const auto dense = gradients({table}, true, f(false));
  const auto sparse_fast = gradients({table}, false, f(true));
  const auto sparse_reference = gradients({table}, true, f(true));
  // The same additions in the same order, whichever form: bit for bit.
  CHECK(sparse_fast[0].to_vector() == dense[0].to_vector());
  CHECK(sparse_reference[0].to_vector() == dense[0].to_vector());
  for (int64_t k = 0; k < 3; ++k) CHECK(dense[0].at({2, k}) == 0);  // padding_idx 2
  for (int64_t k = 0; k < 3; ++k) CHECK(dense[0].at({5, k}) == 0);  // never read
  // On the fast path only the 4 rows not at padding wait.
  zero_grad(table);
  backward(f(true)());
  CHECK(fast::deferred_gradient_of(table)->table_rows() == 4);
}

TEST_CASE("DeferredGradient::apply_scaled adds its product in one rounding, as SGD would",
          "[autograd][fast_paths]") {
  Generator generator(5);
  for (const int64_t rows : {int64_t{1}, int64_t{7}, int64_t{9}, int64_t{17}}) {
    INFO("rows " << rows);
    const Tensor dy = randn({rows, 9}, generator), x = randn({rows, 8}, generator);
    fast::DeferredGradient deferred(Shape{9, 8});
    deferred.add_product(dy, x);
    check_applied_in_one_rounding(deferred, generator);
  }
}

TEST_CASE("DeferredGradient: blocks of columns kept apart, formed and applied in place",
          "[autograd][fast_paths]") {
  Generator generator(6);
  for (const int64_t rows : {int64_t{1}, int64_t{7}, int64_t{9}}) {
    INFO("rows " << rows);
    // Columns [0,3) twice, [3,8) once, of a (9,8) gradient: disjoint blocks.
    const Tensor dy1 = randn({rows, 9}, generator), x1 = randn({rows, 3}, generator);
    const Tensor dy2 = randn({rows, 9}, generator), x2 = randn({rows, 5}, generator);
    const Tensor dy3 = randn({2, 9}, generator), x3 = randn({2, 3}, generator);
    fast::DeferredGradient deferred(Shape{9, 8});
    deferred.add_product(dy1, x1, 0);
    deferred.add_product(dy2, x2, 3);
    deferred.add_product(dy3, x3, 0);
    CHECK(deferred.product_rows() == 2 * rows + 2);
    // The same gradient from whole-width factors with the zeros written out.
    fast::DeferredGradient padded(Shape{9, 8});
    auto place = [](const Tensor& x, int64_t first) {
      Tensor wide = zeros({x.shape()[0], 8});
      for (int64_t r = 0; r < x.shape()[0]; ++r) {
        for (int64_t c = 0; c < x.shape()[1]; ++c) wide.data()[r * 8 + first + c] = x.at({r, c});
      }
      return wide;
    };
    padded.add_product(cat({dy1, dy3}, 0), cat({place(x1, 0), place(x3, 0)}, 0));
    padded.add_product(dy2, place(x2, 3));
    require_close(deferred.to_dense(), padded.to_dense());
    // Disjoint blocks: each entry is one block's product, added in one rounding.
    check_applied_in_one_rounding(deferred, generator);
    // A whole-width product beside a block: added block by block.
    fast::DeferredGradient mixed(Shape{9, 8}), mixed_padded(Shape{9, 8});
    mixed.add_product(dy2, place(x2, 3));
    mixed.add_product(dy1, x1, 0);
    mixed_padded.add_product(cat({dy2, dy1}, 0), cat({place(x2, 3), place(x1, 0)}, 0));
    require_close(mixed.to_dense(), mixed_padded.to_dense());
    Tensor q = randn({9, 8}, generator);
    const Tensor q_expected = q - mixed_padded.to_dense() * real(0.1);
    mixed.apply_scaled(q.data(), real(-0.1));
    require_close(q, q_expected);
  }
}

TEST_CASE("linear_columns is linear on the input with zeros around it, on both paths",
          "[autograd][fast_paths]") {
  Generator generator(7);
  for (const int64_t B : {int64_t{1}, int64_t{3}, int64_t{9}}) {
    for (const int64_t first : {int64_t{0}, int64_t{5}, int64_t{11}}) {
      INFO("B = " << B << ", first column " << first);
      const int64_t n = 6, in = 17, out = 10;
      const Tensor x = requires_grad_(randn({B, n}, generator));
      const Tensor w = requires_grad_(randn({out, in}, generator));
      const Tensor b = requires_grad_(randn({out}, generator));
      const Tensor readout = randn({B, out}, generator);
      auto padded_input = [&] {
        std::vector<Tensor> parts;
        if (first > 0) parts.push_back(zeros({B, first}));
        parts.push_back(x);
        if (first + n < in) parts.push_back(zeros({B, in - first - n}));
        return cat(parts, 1);
      };
      {
        const NoGradGuard no_grad;
        const Tensor y = linear_columns(x, w, first, b);
        const Tensor reference = linear(padded_input(), w, b);
        require_close(y, reference);
      }
      for (const bool reference_path : {false, true}) {
        INFO("reference path " << reference_path);
        const auto ours = gradients({x, w, b}, reference_path,
                                    [&] { return sum(linear_columns(x, w, first, b) * readout); });
        const auto theirs =
            gradients({x, w, b}, true, [&] { return sum(linear(padded_input(), w, b) * readout); });
        for (size_t i = 0; i < ours.size(); ++i) require_close(ours[i], theirs[i]);
      }
    }
  }
  CHECK_THROWS_WITH(
      linear_columns(zeros({2, 6}), zeros({3, 8}), 3, Tensor()),
      Catch::Contains("linear_columns") && Catch::Contains("(2,6)") && Catch::Contains("(3,8)"));
}

TEST_CASE("fast::ReferencePath turns every mechanism off and restores them",
          "[autograd][fast_paths]") {
  REQUIRE(fast::deferred_gradients());
  REQUIRE(fast::reuse_forward_values());
  REQUIRE(fast::fused_ops());
  REQUIRE(fast::sentence_products());
  {
    const fast::ReferencePath reference;
    CHECK_FALSE(fast::deferred_gradients());
    CHECK_FALSE(fast::reuse_forward_values());
    CHECK_FALSE(fast::fused_ops());
    CHECK_FALSE(fast::sentence_products());
    CHECK_FALSE(pool::pooling());
    {
      const fast::ReferencePath nested;
      CHECK_FALSE(fast::deferred_gradients());
    }
    CHECK_FALSE(fast::deferred_gradients());  // the outer guard still holds
  }
  CHECK(fast::deferred_gradients());
  CHECK(fast::reuse_forward_values());
  CHECK(fast::fused_ops());
  CHECK(fast::sentence_products());
  CHECK(pool::pooling());
}

TEST_CASE("a backward closure may still return std::vector<Tensor>", "[autograd][engine]") {
  const Tensor x = requires_grad_(from_vector({1, 2, 3}));
  const Tensor y = record("triple", (x * real(3)).clone_data(), {x},
                          [](const Tensor& dy) { return std::vector<Tensor>{dy * real(3)}; });
  backward(sum(y));
  CHECK(grad(x).to_vector() == std::vector<real>{3, 3, 3});
}

// The fused node against its composed twin, mul, softmax and bmm, on shapes
// that take each of the kernel's paths: scalar values in registers (Tk up to
// 4W, W = 16 floats with AVX-512), longer rows, several queries per batch
// sharing the values, values of several numbers; without a scale, with one
// factor for all scores and with one per key; and with constant scores, whose
// gradient the fused node never forms (Nadaraya–Watson's case).
TEST_CASE("attention_pool: the fused node equals mul, softmax and bmm", "[autograd][fast_paths]") {
  Generator generator(31);
  struct Case {
    int64_t B, Tq, Tk, dv;
  };
  for (const Case c : {Case{50, 1, 49, 1}, Case{3, 2, 7, 1}, Case{2, 3, 16, 1}, Case{4, 1, 17, 1},
                       Case{2, 2, 65, 1}, Case{1, 1, 1, 1}, Case{2, 3, 9, 5}, Case{3, 1, 200, 8},
                       Case{2, 2, 0, 3}}) {
    for (const int64_t scale_count : {int64_t(0), int64_t(1), c.Tk}) {
      for (const bool constant_scores : {false, true}) {
        INFO("B " << c.B << ", Tq " << c.Tq << ", Tk " << c.Tk << ", dv " << c.dv << ", "
                  << scale_count << " scale factors, constant scores " << constant_scores);
        Tensor scores = uniform({c.B, c.Tq, c.Tk}, -6.0, 6.0, generator);
        if (!constant_scores) requires_grad_(scores);
        const Tensor values = requires_grad_(uniform({c.B, c.Tk, c.dv}, -2.0, 2.0, generator));
        const Tensor scale = scale_count == 0
                                 ? Tensor()
                                 : requires_grad_(uniform({scale_count}, -1.5, 1.5, generator));
        const Tensor upstream = uniform({c.B, c.Tq, c.dv}, -1.0, 1.0, generator);
        std::vector<Tensor> leaves{values};
        if (!constant_scores) leaves.push_back(scores);
        if (scale.defined()) leaves.push_back(scale);
        Tensor fused_out, fused_weights, composed_out, composed_weights;
        const auto fused = gradients(leaves, false, [&] {
          fused_out = attention_pool(scores, values, scale, &fused_weights);
          return sum(fused_out * upstream);
        });
        const auto composed = gradients(leaves, true, [&] {
          composed_out = attention_pool(scores, values, scale, &composed_weights);
          return sum(composed_out * upstream);
        });
        // The weights come from the same softmax formula; the pooled sums and
        // the gradients are summed in other orders: float rounding.
        require_close(fused_weights, composed_weights);
        require_close(fused_out, composed_out);
        CHECK_FALSE(requires_grad(fused_weights));
        // The scale's gradient (the last leaf) sums B·Tq·Tk terms dz ⊙ scores
        // of either sign (one number, or one per key over B·Tq rows): its
        // rounding is relative to those terms, not to the smaller total.
        REQUIRE(fused.size() == composed.size());
        for (size_t i = 0; i < fused.size(); ++i) {
          REQUIRE(fused[i].defined() == composed[i].defined());
          const bool scale_gradient = scale.defined() && i + 1 == fused.size();
          if (fused[i].defined()) {
            require_close(fused[i], composed[i], scale_gradient ? 1e-4 : 1e-5,
                          scale_gradient ? 1e-5 : 1e-6);
          }
        }
      }
    }
  }
}

TEST_CASE("attention_pool: shapes are checked, naming both", "[autograd][fast_paths]") {
  const Tensor scores = zeros({2, 1, 5});
  CHECK_THROWS_WITH(attention_pool(scores, zeros({2, 4, 1})),
                    "attention_pool: scores (2,1,5) and values (2,4,1) must be (B,Tq,Tk) and "
                    "(B,Tk,dv), with the same batch B and one value per key (Tk)");
  CHECK_THROWS_WITH(attention_pool(zeros({2, 5}), zeros({2, 5, 1})),
                    Catch::StartsWith("attention_pool: scores (2,5) and values (2,5,1)"));
  CHECK_THROWS_WITH(attention_pool(Tensor(), zeros({2, 5, 1})),
                    Catch::StartsWith("attention_pool: got an undefined tensor"));
  CHECK_THROWS_WITH(attention_pool(scores, zeros({2, 5, 1}), zeros({3})),
                    "attention_pool: scale (3) must be one number or one per key (5) for scores "
                    "(2,1,5)");
}

}  // namespace test_fast_paths
