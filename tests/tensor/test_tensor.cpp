// tests/tensor/test_tensor.cpp — storage, views, factories and random numbers.
//
// Views are checked by where they point (data pointers, strides, offsets) and
// by writing through one view and reading through another. Random factories
// are checked for reproducibility (same seed, same numbers) and for plausible
// moments over 10,000 draws, with bounds of several standard errors.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <new>
#include <numeric>
#include <string>
#include <vector>

#include "attograd.hpp"

namespace test_tensor {

using namespace attograd;

namespace {

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> out;
  for (real v : t.to_vector()) out.push_back(v);
  return out;
}

struct Moments {
  double mean = 0, stddev = 0, low = INFINITY, high = -INFINITY;
};

Moments moments_of(const Tensor& t) {
  const std::vector<double> v = as_doubles(t);
  Moments m;
  for (double x : v) {
    m.mean += x;
    m.low = std::min(m.low, x);
    m.high = std::max(m.high, x);
  }
  m.mean /= double(v.size());
  for (double x : v) m.stddev += (x - m.mean) * (x - m.mean);
  m.stddev = std::sqrt(m.stddev / double(v.size() - 1));
  return m;
}

}  // namespace

// ---------------------------------------------------------------- storage

TEST_CASE("storage is 64-byte aligned", "[tensor]") {
  for (int64_t n : {1, 3, 7, 16, 17, 1000, 4097}) {
    const Tensor t = zeros({n});
    INFO("numel " << n);
    CHECK(reinterpret_cast<std::uintptr_t>(t.storage()->data()) % 64 == 0);
    CHECK(t.storage()->size() == n);
  }
  CHECK(Tensor::empty({0}).numel() == 0);
}

TEST_CASE("a fresh tensor is contiguous with row-major strides", "[tensor]") {
  const Tensor t = zeros({2, 3, 4});
  CHECK(t.strides() == Strides{12, 4, 1});
  CHECK(t.is_contiguous());
  CHECK(t.dim() == 3);
  CHECK(t.numel() == 24);
  CHECK(t.size(-1) == 4);
  CHECK(t.offset() == 0);
  CHECK(scalar(5).dim() == 0);
  CHECK(scalar(5).numel() == 1);
  CHECK(scalar(5).item() == 5);
}

TEST_CASE("numel refuses a product that overflows 64 bits, naming the sizes", "[tensor][shape]") {
  const int64_t two_to_62 = int64_t{1} << 62;
  CHECK(Shape{two_to_62, 1}.numel() == two_to_62);
  CHECK(Shape{two_to_62, 4, 0}.numel() == 0);  // a zero size empties it, overflow or not
  CHECK(Shape{0, two_to_62, 4}.numel() == 0);
  for (const Shape& shape :
       {Shape{two_to_62, 4}, Shape{3, two_to_62}, Shape{1 << 30, 1 << 30, 1 << 30}}) {
    INFO(shape.str());
    CHECK_THROWS_WITH(shape.numel(),
                      Catch::Contains(shape.str()) && Catch::Contains("overflow a 64-bit count"));
  }
  CHECK_THROWS_WITH(Shape({two_to_62, 4}).numel(),
                    Catch::StartsWith("shape (4611686018427387904,4): its 4611686018427387904 × 4 "
                                      "elements overflow a 64-bit count"));
  CHECK_THROWS_AS(contiguous_strides(Shape{two_to_62, 4, 2}), Error);
  // An empty shape whose other sizes overflow has no element to step to: strides 0.
  CHECK(contiguous_strides(Shape{0, two_to_62, 4}) == Strides{0, 0, 0});
  CHECK(contiguous_strides(Shape{2, 3, 4}) == Strides{12, 4, 1});
  CHECK_THROWS_AS(Tensor::empty({two_to_62, 4}), Error);
}

TEST_CASE("contiguous_strides into an existing Strides equals the returned one", "[tensor]") {
  const int64_t two_to_62 = int64_t(1) << 62;
  // Whatever `into` held before (longer, shorter, spilled past the inline
  // entries, or a spilled one shrinking back) is replaced.
  const std::vector<Strides> before = {Strides{}, Strides{7, 7, 7, 7, 7},
                                       Strides{1, 2, 3, 4, 5, 6, 7, 8}};
  const std::vector<Shape> shapes = {
      Shape{},    Shape{5}, Shape{2, 3, 4}, Shape{0, two_to_62, 4}, Shape{2, 1, 3, 1, 2, 2, 3, 2},
      Shape{1, 1}};
  for (const Strides& old : before) {
    for (const Shape& shape : shapes) {
      Strides into = old;
      contiguous_strides(shape, into);
      INFO("shape " << fmt::format("{}", shape) << " into " << old.size() << " entries");
      CHECK(into == contiguous_strides(shape));
      CHECK(into.size() == shape.size());
    }
    Strides into = old;
    CHECK_THROWS_AS(contiguous_strides(Shape{two_to_62, 4, 2}, into), Error);
  }
  // Tensor::empty builds its strides this way, past the inline entries too.
  CHECK(Tensor::empty({2, 1, 3, 1, 2, 2, 3, 2}).strides() == Strides{72, 72, 24, 24, 12, 6, 2, 1});
  CHECK(Tensor::empty({2, 3}).strides() == Strides{3, 1});
}

TEST_CASE("copying a Tensor shares it", "[tensor]") {
  Tensor a = zeros({2});
  Tensor b = a;
  b.set({1}, 3);
  CHECK(a.at({1}) == 3);
  CHECK(a.same(b));
  const Tensor c = a.clone_data();
  CHECK_FALSE(c.same(a));
  CHECK(c.data() != a.data());
  a.set({0}, 9);
  CHECK(c.at({0}) == 0);
}

// ---------------------------------------------------------------- views

TEST_CASE("transpose is a view with swapped strides", "[tensor][views]") {
  Tensor x = reshape(arange(0, 6), {2, 3});
  Tensor t = transpose(x, 0, 1);
  CHECK(t.shape() == Shape{3, 2});
  CHECK(t.strides() == Strides{1, 3});
  CHECK(t.storage() == x.storage());
  CHECK(t.data() == x.data());
  CHECK_FALSE(t.is_contiguous());
  CHECK(as_doubles(t) == std::vector<double>{0, 3, 1, 4, 2, 5});
  t.set({2, 1}, 50);  // x[1][2]
  CHECK(x.at({1, 2}) == 50);
}

TEST_CASE("slice and select are views at an offset", "[tensor][views]") {
  Tensor x = reshape(arange(0, 12), {3, 4});
  Tensor s = slice(x, 1, 1, 4, 2);  // columns 1 and 3
  CHECK(s.shape() == Shape{3, 2});
  CHECK(s.strides() == Strides{4, 2});
  CHECK(s.offset() == 1);
  CHECK(s.storage() == x.storage());
  CHECK(as_doubles(s) == std::vector<double>{1, 3, 5, 7, 9, 11});
  s.set({2, 1}, -1);
  CHECK(x.at({2, 3}) == -1);

  Tensor row = select(x, 0, 2);
  CHECK(row.shape() == Shape{4});
  CHECK(row.offset() == 8);
  CHECK(row.data() == x.data() + 8);
  CHECK(row.is_contiguous());

  Tensor column = narrow(x, 1, 2, 1);
  CHECK(column.shape() == Shape{3, 1});
  CHECK(column.offset() == 2);
}

TEST_CASE("expand repeats with stride 0 and copies nothing", "[tensor][views]") {
  Tensor x = tensor({{1}, {2}});  // (2,1)
  Tensor e = expand(x, {3, 2, 4});
  CHECK(e.shape() == Shape{3, 2, 4});
  CHECK(e.strides() == Strides{0, 1, 0});
  CHECK(e.storage() == x.storage());
  CHECK(e.storage()->size() == 2);
  CHECK(as_doubles(e) == std::vector<double>{1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1,
                                             2, 2, 2, 2, 1, 1, 1, 1, 2, 2, 2, 2});
  x.set({1, 0}, 7);
  CHECK(e.at({2, 1, 3}) == 7);
  CHECK(expand(x, {-1, 3}).shape() == Shape{2, 3});
}

TEST_CASE("reshape, permute, squeeze and unsqueeze", "[tensor][views]") {
  Tensor x = arange(0, 24);
  Tensor r = reshape(x, {2, 3, -1});
  CHECK(r.shape() == Shape{2, 3, 4});
  CHECK(r.data() == x.data());  // contiguous input: no copy
  Tensor p = permute(r, {2, 0, 1});
  CHECK(p.shape() == Shape{4, 2, 3});
  CHECK(p.strides() == Strides{1, 12, 4});
  CHECK(p.at({3, 1, 2}) == r.at({1, 2, 3}));
  // Reshaping a non-contiguous view has to copy, and keeps row-major order.
  Tensor flat = reshape(transpose(reshape(arange(0, 6), {2, 3}), 0, 1), {6});
  CHECK(as_doubles(flat) == std::vector<double>{0, 3, 1, 4, 2, 5});
  Tensor u = unsqueeze(r, 1);
  CHECK(u.shape() == Shape{2, 1, 3, 4});
  CHECK(squeeze(u, 1).shape() == Shape{2, 3, 4});
  CHECK(unsqueeze(scalar(1), 0).shape() == Shape{1});
  CHECK(view(r, {6, 4}).data() == x.data());
}

TEST_CASE("contiguous() copies only non-contiguous views", "[tensor][views]") {
  Tensor x = reshape(arange(0, 6), {2, 3});
  CHECK(contiguous(x).same(x));
  Tensor t = transpose(x, 0, 1);
  Tensor c = contiguous(t);
  CHECK(c.is_contiguous());
  CHECK(c.strides() == Strides{2, 1});
  CHECK(c.data() != x.data());
  CHECK(as_doubles(c) == as_doubles(t));
  // contiguous_data shares the storage of an already contiguous tensor.
  CHECK(x.contiguous_data().data() == x.data());
  CHECK(t.contiguous_data().data() != x.data());
}

TEST_CASE("repeat, repeat_interleave, cat and stack values", "[tensor][views]") {
  const Tensor x = tensor({1, 2});
  CHECK(as_doubles(repeat(x, {2, 2})) == std::vector<double>{1, 2, 1, 2, 1, 2, 1, 2});
  CHECK(repeat(x, {2, 2}).shape() == Shape{2, 4});
  CHECK(as_doubles(repeat_interleave(x, 3, 0)) == std::vector<double>{1, 1, 1, 2, 2, 2});
  const Tensor m = tensor({{1, 2}, {3, 4}});
  CHECK(as_doubles(cat({m, tensor({{5, 6}})}, 0)) == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(as_doubles(cat({m, tensor({{5}, {6}})}, 1)) == std::vector<double>{1, 2, 5, 3, 4, 6});
  const Tensor s = stack({x, tensor({3, 4})}, 1);
  CHECK(s.shape() == Shape{2, 2});
  CHECK(as_doubles(s) == std::vector<double>{1, 3, 2, 4});
}

TEST_CASE("indexing ops pick the right entries", "[tensor]") {
  const Tensor x = reshape(arange(0, 6), {2, 3});
  CHECK(as_doubles(index_select(x, 1, {2, 0, 2})) == std::vector<double>{2, 0, 2, 5, 3, 5});
  CHECK(as_doubles(gather(x, 1, {2, 1, 0, 0}, {2, 2})) == std::vector<double>{2, 1, 3, 3});
  const Tensor mask = tensor({1, 0, 1});
  CHECK(as_doubles(masked_fill(x, mask, -1)) == std::vector<double>{-1, 1, -1, -1, 4, -1});
  CHECK(as_doubles(masked_select(x, mask)) == std::vector<double>{0, 2, 3, 5});
}

TEST_CASE("strided loops visit a view row by row in row-major order", "[tensor][views]") {
  // Each view's elements, read by its own index arithmetic, against what
  // for_each_offset, to_vector, clone_data and fill_ do with it.
  const Tensor base = reshape(arange(0, 2 * 3 * 4 * 5), {2, 3, 4, 5});
  struct Case {
    const char* name;
    Tensor view;
  };
  const std::vector<Case> cases = {
      {"contiguous", base},
      {"permute (3,0,2,1)", permute(base, {3, 0, 2, 1})},
      {"transpose of the last two axes", transpose(base, 2, 3)},
      {"narrow of the last axis", narrow(base, 3, 1, 3)},
      {"select then narrow", narrow(select(base, 1, 2), 0, 1, 1)},
      {"expand with a stride-0 axis", expand(narrow(base, 3, 0, 1), {2, 3, 4, 7})},
      {"0-d", select(reshape(base, {-1}), 0, 17)},
      {"empty", narrow(base, 2, 1, 0)},
      {"one axis of stride 5", select(select(select(base, 0, 1), 0, 2), 1, 3)}};
  for (const Case& c : cases) {
    INFO(c.name);
    const Shape& shape = c.view.shape();
    const int64_t n = shape.numel();
    std::vector<real> expected;
    for (int64_t linear = 0; linear < n; ++linear) {
      int64_t rest = linear, position = c.view.offset();
      for (int64_t axis = shape.ndim() - 1; axis >= 0; --axis) {
        position += (rest % shape[axis]) * c.view.strides()[axis];
        rest /= shape[axis];
      }
      expected.push_back(c.view.storage()->data()[position]);
    }
    std::vector<int64_t> order;
    for_each_offset(shape, c.view.strides(), c.view.offset(),
                    [&](int64_t linear, int64_t) { order.push_back(linear); });
    std::vector<int64_t> row_major(static_cast<size_t>(n));
    std::iota(row_major.begin(), row_major.end(), 0);
    CHECK(order == row_major);
    CHECK(c.view.to_vector() == expected);
    const Tensor copy = c.view.clone_data();
    CHECK(copy.is_contiguous());
    CHECK(copy.to_vector() == expected);
  }
  // fill_ through a strided view writes only the view's elements.
  Tensor whole = zeros({3, 4});
  transpose(narrow(whole, 1, 1, 2), 0, 1).fill_(5);
  CHECK(whole.to_vector() == std::vector<real>{0, 5, 5, 0, 0, 5, 5, 0, 0, 5, 5, 0});
}

TEST_CASE("fill_ and copy_from write through a view", "[tensor][views]") {
  Tensor x = zeros({3, 3});
  transpose(x, 0, 1).copy_from(reshape(arange(0, 9), {3, 3}));
  CHECK(as_doubles(x) == std::vector<double>{0, 3, 6, 1, 4, 7, 2, 5, 8});
  select(x, 1, 0).fill_(9);
  CHECK(as_doubles(x) == std::vector<double>{9, 3, 6, 9, 4, 7, 9, 5, 8});
}

TEST_CASE("copy_from copies contiguous blocks and overlapping views correctly", "[tensor][views]") {
  // Both contiguous: one block (a row of a matrix into another row).
  Tensor x = reshape(arange(0, 6), {2, 3});
  select(x, 0, 1).copy_from(select(x, 0, 0));
  CHECK(as_doubles(x) == std::vector<double>{0, 1, 2, 0, 1, 2});
  // Overlapping contiguous ranges of one storage, either direction.
  Tensor y = arange(0, 6);
  slice(y, 0, 1, 6).copy_from(slice(y, 0, 0, 5));
  CHECK(as_doubles(y) == std::vector<double>{0, 0, 1, 2, 3, 4});
  Tensor z = arange(0, 6);
  slice(z, 0, 0, 5).copy_from(slice(z, 0, 1, 6));
  CHECK(as_doubles(z) == std::vector<double>{1, 2, 3, 4, 5, 5});
  // A matrix onto its own transpose: read whole before anything is written.
  Tensor m = reshape(arange(0, 4), {2, 2});
  m.copy_from(transpose(m, 0, 1));
  CHECK(as_doubles(m) == std::vector<double>{0, 2, 1, 3});
  // Nothing to copy.
  Tensor empty = zeros({0, 3});
  empty.copy_from(zeros({0, 3}));
  CHECK(empty.numel() == 0);
}

// ---------------------------------------------------------------- factories

TEST_CASE("deterministic factories", "[tensor][factory]") {
  CHECK(as_doubles(zeros({2, 2})) == std::vector<double>{0, 0, 0, 0});
  CHECK(as_doubles(ones({3})) == std::vector<double>{1, 1, 1});
  CHECK(as_doubles(full({2}, 2.5)) == std::vector<double>{2.5, 2.5});
  CHECK(zeros_like(zeros({2, 5})).shape() == Shape{2, 5});
  CHECK(as_doubles(ones_like(zeros({2}))) == std::vector<double>{1, 1});
  CHECK(as_doubles(arange(0, 5)) == std::vector<double>{0, 1, 2, 3, 4});
  CHECK(as_doubles(arange(1, 2, 0.25)) == std::vector<double>{1, 1.25, 1.5, 1.75});
  CHECK(as_doubles(arange(5, 0, -2)) == std::vector<double>{5, 3, 1});
  CHECK(arange(3, 1).numel() == 0);
  CHECK(as_doubles(linspace(-1, 1, 5)) == std::vector<double>{-1, -0.5, 0, 0.5, 1});
  CHECK(as_doubles(linspace(3, 7, 1)) == std::vector<double>{3});
  CHECK(as_doubles(eye(3)) == std::vector<double>{1, 0, 0, 0, 1, 0, 0, 0, 1});
  CHECK(from_vector({1, 2, 3, 4, 5, 6}, {3, 2}).at({2, 0}) == 5);
  CHECK(from_vector({1, 2}).shape() == Shape{2});
  const Tensor m = tensor({{1, 2, 3}, {4, 5, 6}});
  CHECK(m.shape() == Shape{2, 3});
  CHECK(m.at({1, 0}) == 4);
  CHECK(tensor({7, 8}).shape() == Shape{2});
  CHECK(scalar(3).shape() == Shape{});
  for (const Tensor& t : {zeros({2, 3}), arange(0, 4), eye(2), tensor({{1}})}) {
    CHECK(t.is_contiguous());
    CHECK(t.impl().attachment == nullptr);  // a plain tensor: nothing attached
  }
}

TEST_CASE("random factories are reproducible with a seed", "[tensor][random]") {
  Generator g1(42), g2(42), g3(43);
  const std::vector<real> a = randn({100}, g1).to_vector();
  const std::vector<real> b = randn({100}, g2).to_vector();
  const std::vector<real> c = randn({100}, g3).to_vector();
  CHECK(a == b);
  CHECK(a != c);
  // The default generator restarts with manual_seed.
  manual_seed(7);
  const std::vector<real> first = rand({50}).to_vector();
  manual_seed(7);
  CHECK(rand({50}).to_vector() == first);
  // Drawing advances the generator: the next draw differs.
  CHECK(rand({50}).to_vector() != first);
  Generator g4(5), g5(5);
  CHECK(uniform({20}, -3, 3, g4).to_vector() == uniform({20}, -3, 3, g5).to_vector());
  CHECK(normal({20}, 1, 2, g4).to_vector() == normal({20}, 1, 2, g5).to_vector());
}

TEST_CASE("random factories have plausible moments over 10,000 draws", "[tensor][random]") {
  // Standard error of a mean of 10,000 draws is σ/100; the bounds are ≥ 5 of them.
  Generator generator(2024);
  const Moments unit = moments_of(rand({10000}, generator));
  CHECK(unit.mean == Approx(0.5).margin(0.015));  // σ = 0.2887
  CHECK(unit.stddev == Approx(1 / std::sqrt(12.0)).margin(0.01));
  CHECK(unit.low >= 0);
  CHECK(unit.high < 1);

  const Moments standard = moments_of(randn({100, 100}, generator));
  CHECK(standard.mean == Approx(0).margin(0.05));
  CHECK(standard.stddev == Approx(1).margin(0.03));
  CHECK(standard.low < -3);  // 10,000 normal draws reach beyond ±3 with probability > 0.99
  CHECK(standard.high > 3);

  const Moments shifted = moments_of(normal({10000}, 3, 2, generator));
  CHECK(shifted.mean == Approx(3).margin(0.1));
  CHECK(shifted.stddev == Approx(2).margin(0.06));

  const Moments box = moments_of(uniform({10000}, -2, 4, generator));
  CHECK(box.mean == Approx(1).margin(0.09));  // σ = 6/√12 = 1.73
  CHECK(box.stddev == Approx(6 / std::sqrt(12.0)).margin(0.05));
  CHECK(box.low >= -2);
  CHECK(box.high < 4);
}

TEST_CASE("Generator helpers", "[tensor][random]") {
  Generator generator(9);
  std::vector<int> counts(5, 0);
  for (int i = 0; i < 5000; ++i) ++counts[generator.below(5)];
  for (int count : counts) CHECK(count == Approx(1000).margin(150));
  int heads = 0;
  for (int i = 0; i < 10000; ++i) heads += generator.bernoulli(0.25) ? 1 : 0;
  CHECK(heads == Approx(2500).margin(220));
}

TEST_CASE("Dims keeps six entries inline and spills deeper lists to the heap", "[tensor][shape]") {
  // Grow one entry at a time across the inline limit and back, checking the
  // values against a std::vector doing the same.
  Dims dims;
  std::vector<int64_t> expected;
  for (int64_t i = 0; i < 9; ++i) {
    dims.push_back(10 + i);
    expected.push_back(10 + i);
    CHECK(dims.to_vector() == expected);
  }
  dims.insert(dims.begin() + 2, {-1, -2});  // 11 entries
  expected.insert(expected.begin() + 2, {-1, -2});
  CHECK(dims.to_vector() == expected);
  dims.erase(dims.begin() + 1, dims.begin() + 7);  // back to 5: inline again
  expected.erase(expected.begin() + 1, expected.begin() + 7);
  CHECK(dims.to_vector() == expected);
  CHECK(dims.size() == 5);

  // Copies are deep and compare equal, inline or spilled.
  const Dims small{1, 2, 3};
  const Dims deep{1, 2, 3, 4, 5, 6, 7, 8};
  Dims copy = deep;
  CHECK(copy == deep);
  copy[7] = 0;
  CHECK(deep[7] == 8);
  CHECK(copy != deep);
  copy = small;
  CHECK(copy == small);
  CHECK(copy.size() == 3);
  copy = deep;
  CHECK(copy.to_vector() == deep.to_vector());
  CHECK(Dims{1, 2} != Dims{1, 2, 0});

  // resize fills new entries with the value given, also past the limit.
  Dims grown{7};
  grown.resize(8, 4);
  CHECK(grown.to_vector() == std::vector<int64_t>{7, 4, 4, 4, 4, 4, 4, 4});
  grown.resize(2);
  CHECK(grown.to_vector() == std::vector<int64_t>{7, 4});
  grown.resize(4, 9);
  CHECK(grown.to_vector() == std::vector<int64_t>{7, 4, 9, 9});
  // A copy of a shorter list, then grown: the new entries are the value given,
  // not what the longer list held there before.
  Dims reused{1, 2, 3, 4, 5};
  reused = Dims{9};
  reused.resize(4, 7);
  CHECK(reused.to_vector() == std::vector<int64_t>{9, 7, 7, 7});
  reused.resize(6);
  CHECK(reused.to_vector() == std::vector<int64_t>{9, 7, 7, 7, 0, 0});
  reused = deep;
  reused = Dims{3, 2};
  reused.resize(6, 1);
  CHECK(reused.to_vector() == std::vector<int64_t>{3, 2, 1, 1, 1, 1});

  // A tensor of more than six axes keeps working through the heap path.
  const Tensor t = zeros({1, 2, 1, 2, 1, 2, 1, 2});
  CHECK(t.shape().str() == "(1,2,1,2,1,2,1,2)");
  CHECK(t.strides().to_vector() == std::vector<int64_t>{16, 8, 8, 4, 4, 2, 2, 1});
  CHECK(sum(t).item() == 0);
}

TEST_CASE("a tensor too large to allocate throws Error naming its op, shape and bytes",
          "[tensor]") {
  // 2^40 elements: more than this machine's memory, refused before the
  // allocator is asked (so AddressSanitizer builds throw too, not abort).
  // The message starts with the function that allocates: zeros fills
  // through full.
  const int64_t count = int64_t{1} << 40;
  const std::string expected = fmt::format("full: allocating a tensor of shape ({}): {} bytes",
                                           count, uint64_t(count) * sizeof(real));
  CHECK_THROWS_WITH(zeros({count}),
                    Catch::StartsWith(expected) && Catch::Contains("use a smaller shape"));
  CHECK_THROWS_AS(Tensor::empty({count, 2}), Error);
  // An op's output: (2^20, 1) times (1, 2^20) asks for 2^40 elements.
  const Tensor column = ones({int64_t{1} << 20, 1});
  CHECK_THROWS_WITH(matmul(column, transpose(column, 0, 1)),
                    Catch::Matches("[a-z_]+: allocating a tensor of shape \\(1,1048576,1048576\\): "
                                   "4398046511104 bytes .*"));
  bool bad_alloc_escaped = false;
  try {
    (void)ones({count});
  } catch (const std::bad_alloc&) {
    bad_alloc_escaped = true;
  } catch (const Error&) {
  }
  CHECK_FALSE(bad_alloc_escaped);
}

}  // namespace test_tensor
