// tests/tensor/test_kernels_gemm.cpp — kernels::gemm, the packed product,
// against its scalar specification kernels::scalar::gemm.
//
// Both sum every entry as one chain of fused multiply-adds over k in order,
// so where the hardware fuses them (FMA3 on x86-64-v3, AVX-512, or the scalar
// build, which runs the specification itself) the results are equal bit for
// bit, whatever the tile, block or thread that computed an entry. An
// instruction set without FMA rounds the product and the sum apart, and is
// held to tol·Σ|a·b| instead (tol as in test_kernels.cpp).
//
// The shapes walk every remainder of the tiles (every M up to two tile
// heights and one, every N up to two panels and one) and of the K block (every
// K up to two blocks and one), the sizes 0, 1, 7, 8, 9, 15, 16, 17, products
// that cross the M and N cache blocks, all four layouts, and leading
// dimensions longer than the rows, with c's padding checked untouched.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tensor/kernels_gemm.hpp"
#include "tensor/parallel.hpp"
#include "tensor/random.hpp"
#include "tests/support/thread_settings.hpp"

namespace test_kernels_gemm {

using namespace attograd;
namespace k = attograd::kernels;
using k::Layout;

namespace {

#if !ATTOGRAD_USE_SIMD || defined(__FMA__) || defined(__AVX512F__) || defined(__aarch64__)
constexpr bool kFused = true;
#else
constexpr bool kFused = false;
#endif
constexpr double kTolerance = sizeof(real) == 4 ? 1e-5 : 1e-12;
constexpr real kPad = real(-77);  // what c's padding holds, and must still hold

struct Sizes {
  int64_t M, K, N;
};

// One product's operands, stored with `extra` unused entries at the end of
// each stored row (the leading dimension is the row length + extra).
struct Operands {
  Sizes s;
  Layout a_layout, b_layout;
  int64_t extra, c_extra;
  std::vector<real> a, b, c0;

  // c's rows have `c_padding` unused entries (by default as many as a's and b's).
  Operands(Sizes sizes, Layout left, Layout right, int64_t padding, Generator& generator,
           int64_t c_padding = -1)
      : s(sizes),
        a_layout(left),
        b_layout(right),
        extra(padding),
        c_extra(c_padding < 0 ? padding : c_padding) {
    a = draw((left == Layout::normal ? s.M : s.K) * lda(), generator);
    b = draw((right == Layout::normal ? s.K : s.N) * ldb(), generator);
    c0 = draw(s.M * ldc(), generator);
  }
  int64_t lda() const { return (a_layout == Layout::normal ? s.K : s.M) + extra; }
  int64_t ldb() const { return (b_layout == Layout::normal ? s.N : s.K) + extra; }
  int64_t ldc() const { return s.N + c_extra; }
  k::MatrixRef left() const { return {a.data(), a_layout, lda()}; }
  k::MatrixRef right() const { return {b.data(), b_layout, ldb()}; }

  static std::vector<real> draw(int64_t n, Generator& generator) {
    std::vector<real> v(static_cast<size_t>(n));
    for (real& x : v) x = static_cast<real>(generator.uniform(-1, 1));
    return v;
  }

  // c after gemm (or its specification), from c0 with the padding set to kPad.
  template <typename Gemm>
  std::vector<real> run(Gemm&& gemm, k::GemmInto into) const {
    std::vector<real> c = c0;
    for (int64_t i = 0; i < s.M; ++i) {
      for (int64_t j = s.N; j < ldc(); ++j) c[i * ldc() + j] = kPad;
    }
    gemm(c.data(), ldc(), left(), right(), s.M, s.K, s.N, into);
    return c;
  }

  std::string name(k::GemmInto into) const {
    return fmt::format("gemm {}{} ({},{},{}) extra {} (c {}){}",
                       a_layout == Layout::normal ? "N" : "T",
                       b_layout == Layout::normal ? "N" : "T", s.M, s.K, s.N, extra, c_extra,
                       into.add_scaled ? " add_scaled" : "");
  }
};

// gemm against scalar::gemm for one product: equal bits where FMA is fused
// (else within tol·Σ|a·b|), and c's padding untouched.
void check_against_specification(const Operands& o, k::GemmInto into) {
  const std::vector<real> got = o.run(k::gemm, into);
  const std::vector<real> expected = o.run(k::scalar::gemm, into);
  INFO(o.name(into));
  int64_t wrong = 0;
  for (int64_t i = 0; i < o.s.M; ++i) {
    for (int64_t j = 0; j < o.ldc(); ++j) {
      const size_t at = static_cast<size_t>(i * o.ldc() + j);
      if (j >= o.s.N) {
        wrong += got[at] != kPad;
        continue;
      }
      if (kFused) {
        wrong += got[at] != expected[at];
      } else {
        double magnitude = std::abs(double(o.c0[at]));
        for (int64_t kk = 0; kk < o.s.K; ++kk) {
          magnitude += std::abs(double(o.left().at(i, kk)) * double(o.right().at(kk, j)));
        }
        wrong += !(std::abs(double(got[at]) - double(expected[at])) <= kTolerance * magnitude);
      }
    }
  }
  CHECK(wrong == 0);
}

// The specification itself against the plain triple loop, summed in long
// double: scalar::gemm rounds after every fused multiply-add, so it may differ
// from the exact sum by at most about K roundings of the running total, each
// ≤ ε·Σ|a·b| (ε = 2⁻²⁴ in float, 2⁻⁵³ in double); the tolerance
// 4·(K + 2)·ε·(|c0| + Σ|a·b|) leaves room for that and for the final α·t + c
// rounding, and is far below what a wrong index or a lost product would give
// (an error of the size of one term, ~1e-1 here).
void check_specification_against_triple_loop(const Operands& o, k::GemmInto into) {
  const std::vector<real> got = o.run(k::scalar::gemm, into);
  INFO(o.name(into) << " (scalar::gemm against the triple loop)");
  const long double epsilon = std::numeric_limits<real>::epsilon();
  int64_t wrong = 0;
  for (int64_t i = 0; i < o.s.M; ++i) {
    for (int64_t j = 0; j < o.s.N; ++j) {
      const size_t at = static_cast<size_t>(i * o.ldc() + j);
      long double total = 0, magnitude = 0;
      for (int64_t kk = 0; kk < o.s.K; ++kk) {
        const long double term = static_cast<long double>(o.left().at(i, kk)) * o.right().at(kk, j);
        total += term;
        magnitude += std::abs(term);
      }
      long double expected = total;
      if (into.add_scaled) {
        expected = into.alpha * total + o.c0[at];
        magnitude = std::abs(into.alpha) * magnitude + std::abs(o.c0[at]);
      }
      const long double bound = 4 * (o.s.K + 2) * epsilon * magnitude;
      wrong += !(std::abs(static_cast<long double>(got[at]) - expected) <= bound);
    }
  }
  CHECK(wrong == 0);
}

// Every (M, K, N) with M in [first, 2·tile height + 1] and N in [first, 2·panel
// width + 1]: every remainder of the micro-tile in both directions.
std::vector<Sizes> tile_remainders(int64_t first, int64_t K) {
  const k::GemmBlocking tiles = k::gemm_blocking();
  std::vector<Sizes> shapes;
  for (int64_t M = first; M <= 2 * tiles.tile_rows + 1; ++M) {
    for (int64_t N = first; N <= 2 * tiles.tile_cols + 1; ++N) shapes.push_back({M, K, N});
  }
  return shapes;
}

const Layout kLayouts[] = {Layout::normal, Layout::transposed};

// gemm reads an operand in place, unpacked, when packing would not pay
// (tensor/kernels_gemm.cpp, gemm_blocks): by its own rules (−1), packing
// every operand it can (0), and reading in place every one it can.
const int64_t kInPlaceLimits[] = {-1, 0, int64_t{1} << 40};

struct InPlaceLimit {
  explicit InPlaceLimit(int64_t bytes) { k::set_gemm_in_place_limit(bytes); }
  ~InPlaceLimit() { k::set_gemm_in_place_limit(-1); }
  InPlaceLimit(const InPlaceLimit&) = delete;
  InPlaceLimit& operator=(const InPlaceLimit&) = delete;
};

// check(a_layout, b_layout, shape) for every shape in all four layouts,
// with operands packed by gemm's own rules, all packed, and all in place.
template <typename Check>
void for_all_ways(const std::vector<Sizes>& shapes, Check&& check) {
  for (int64_t limit : kInPlaceLimits) {
    const InPlaceLimit in_place(limit);
    INFO("operands read in place up to " << limit << " bytes");
    for (Layout a_layout : kLayouts) {
      for (Layout b_layout : kLayouts) {
        for (const Sizes& s : shapes) check(a_layout, b_layout, s);
      }
    }
  }
}

// Every shape every way, overwriting c and adding into it.
void check_all_layouts(const std::vector<Sizes>& shapes, int64_t extra, Generator& generator) {
  for_all_ways(shapes, [&](Layout a_layout, Layout b_layout, const Sizes& s) {
    const Operands o(s, a_layout, b_layout, extra, generator);
    check_against_specification(o, {});
    check_against_specification(o, {true, real(-0.37)});
  });
}

}  // namespace

TEST_CASE("gemm equals its specification at every tile remainder in M and N", "[kernels][gemm]") {
  Generator generator(21);
  check_all_layouts(tile_remainders(0, 5), 0, generator);
  check_all_layouts({{7, 3, 9}, {17, 4, 33}, {9, 2, 65}}, 3, generator);  // strided
}

TEST_CASE("gemm equals its specification at every remainder of the K block", "[kernels][gemm]") {
  const k::GemmBlocking tiles = k::gemm_blocking();
  Generator generator(22);
  std::vector<Sizes> shapes;
  for (int64_t K = 0; K <= 2 * tiles.k_block + 1; ++K) shapes.push_back({9, K, 19});
  check_all_layouts(shapes, 0, generator);
  check_all_layouts({{5, tiles.k_block + 1, 17}, {3, 2 * tiles.k_block + 1, 4}}, 2, generator);
}

TEST_CASE("gemm equals its specification at the kernel sizes and past the cache blocks",
          "[kernels][gemm]") {
  const k::GemmBlocking tiles = k::gemm_blocking();
  Generator generator(23);
  std::vector<Sizes> shapes;
  for (int64_t M : {0, 1, 7, 8, 9, 15, 16, 17}) {
    for (int64_t K : {0, 1, 7, 8, 9, 15, 16, 17}) {
      for (int64_t N : {0, 1, 7, 8, 9, 15, 16, 17}) shapes.push_back({M, K, N});
    }
  }
  check_all_layouts(shapes, 0, generator);
  // Past the M block, past the N block, and a large square-ish product.
  check_all_layouts(
      {{tiles.m_block + 9, 40, 21}, {3, 6, tiles.n_block + 37}, {130, tiles.k_block + 70, 150}}, 1,
      generator);
}

TEST_CASE("gemm equals its specification either side of the small-product limits",
          "[kernels][gemm]") {
  // Products at most one vector wide and at most 64 long along k are summed
  // row by row without packing (tensor/kernels_gemm.cpp, small_product);
  // one wider or longer goes through the blocks.
  Generator generator(25);
  std::vector<Sizes> shapes;
  for (int64_t M : {1, 2, 10, 33}) {
    for (int64_t K : {1, 8, 63, 64, 65}) {
      for (int64_t N : {2, 10, 15, 16, 17}) shapes.push_back({M, K, N});
    }
  }
  check_all_layouts(shapes, 0, generator);
  check_all_layouts({{10, 8, 10}, {4, 64, 16}}, 5, generator);  // strided
}

TEST_CASE("gemm gives the same bits on one thread and on two", "[kernels][gemm][parallel]") {
  Generator generator(24);
  // N ≥ M splits column panels, M > N whole row tiles; partial last shares.
  for (const Sizes s : {Sizes{37, 300, 101}, Sizes{101, 77, 37}, Sizes{8, 5, 2000},
                        Sizes{1000, 9, 3}, Sizes{2, 1, 2}, Sizes{256, 256, 256}}) {
    for (Layout a_layout : kLayouts) {
      for (Layout b_layout : kLayouts) {
        const Operands o(s, a_layout, b_layout, 1, generator);
        for (k::GemmInto into : {k::GemmInto{}, k::GemmInto{true, real(0.5)}}) {
          std::vector<real> one, two;
          {
            const testing::ThreadSettings threads(1, 0);
            one = o.run(k::gemm, into);
          }
          {
            const testing::ThreadSettings threads(2, 0);
            two = o.run(k::gemm, into);
          }
          INFO(o.name(into));
          CHECK(one == two);
        }
      }
    }
  }
}

TEST_CASE("gemm's specification equals the plain triple loop", "[kernels][gemm]") {
  Generator generator(25);
  const k::GemmBlocking tiles = k::gemm_blocking();
  for (Layout a_layout : kLayouts) {
    for (Layout b_layout : kLayouts) {
      for (const Sizes s : {Sizes{0, 3, 4}, Sizes{1, 1, 1}, Sizes{7, 9, 17}, Sizes{16, 0, 8},
                            Sizes{17, 2 * tiles.k_block + 1, 15}}) {
        const Operands o(s, a_layout, b_layout, 2, generator, 5);
        check_specification_against_triple_loop(o, {});
        check_specification_against_triple_loop(o, {true, real(-0.37)});
      }
    }
  }
}

TEST_CASE("gemm equals its specification with leading dimensions of their own", "[kernels][gemm]") {
  // Blocks of larger matrices: a's and b's rows longer than the block by 1 or
  // by a whole vector and one (so no row starts aligned), and c's rows padded
  // differently from theirs (its padding checked untouched). Every M and N
  // tile remainder in all four layouts, K across the K block's remainders.
  const k::GemmBlocking tiles = k::gemm_blocking();
  Generator generator(26);
  std::vector<Sizes> shapes = tile_remainders(1, 3);
  for (int64_t K : {int64_t{1}, tiles.k_block - 1, tiles.k_block, tiles.k_block + 1}) {
    shapes.push_back({tiles.tile_rows + 1, K, tiles.tile_cols + 1});
  }
  for_all_ways(shapes, [&](Layout a_layout, Layout b_layout, const Sizes& s) {
    for (const auto& [extra, c_extra] :
         {std::pair<int64_t, int64_t>{1, 0}, {0, 3}, {tiles.tile_cols / 2 + 1, 1}}) {
      const Operands o(s, a_layout, b_layout, extra, generator, c_extra);
      check_against_specification(o, {});
      check_against_specification(o, {true, real(0.81)});
    }
  });
}

}  // namespace test_kernels_gemm
