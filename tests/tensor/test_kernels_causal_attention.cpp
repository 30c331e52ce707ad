// tests/tensor/test_kernels_causal_attention.cpp — the causal attention
// kernels (tensor/kernels_causal_attention.cpp): SIMD against the scalar
// specification, in both test binaries.
//
// Sizes: every L from 0 to 33 and 63 to 65 (every remainder of the 32-key
// tile and of the blocks of 1, 2 or 4 rows, one tile and one past, two and
// one past) against head sizes d = 1, 7, 8, 9, 16, 17 (every ragged padded
// row for W = 4, 8 and 16); then L = 225 with d = 64 (8 tiles, the last
// ragged, a row's accumulator rescaled up to 7 times by the online softmax;
// one head, so the ARM64 suite under qemu runs it in seconds),
// d = 33 and 130 (past the 8 batches a row keeps in registers for W = 16, the
// accumulators then in memory), d = 0 and 3 heads at once.
//
// Tolerance, and why not bit for bit. Both versions take every dot product,
// every accumulator and every tile's Σ e^(s − m) in the same order, with the
// same fused multiply-adds, so without e^x they would agree bit for bit.
// They differ in e^x alone: std::exp in the specification, the SIMD
// polynomial in the kernel (within 1 ulp in float; xsimd::exp in double).
// An output is a sum of weights times numbers, so each is held to
//   |simd − scalar| ≤ tol · (Σ |weight · term| + |scalar|) + 1e-30
// with the terms' magnitudes recomputed here in long double — y_i: Σ_j P_ij
// |v_j|; dv_j: Σ_i P_ij |dy_i|; dk_j: Σ_i |dS_ij| |scale·q_i|; dq_i: scale ·
// Σ_j |dS_ij| |k_j| — and lse to tol · (1 + |lse|). tol is 1e-5 in float and
// 1e-12 in double (tests/tensor/test_kernels.cpp), far above the few units in
// the last place that a weight's e^x moves (once per tile it is rescaled in,
// ≤ 8 at L = 225), and independent of the lane count, so it holds with 2,
// 4, 8 and 16 lanes; 1e-30 covers the subnormals the kernel flushes to 0.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "tensor/kernels.hpp"
#include "tensor/random.hpp"
#include "tests/support/thread_settings.hpp"

namespace test_kernels_causal_attention {

using namespace attograd;
namespace k = attograd::kernels;

namespace {

constexpr double kTolerance = sizeof(real) == 4 ? 1e-5 : 1e-12;
constexpr double kFlushed = 1e-30;

using Values = std::vector<real>;

Values draw(int64_t n, double low, double high, Generator& generator) {
  Values v(static_cast<size_t>(n));
  for (real& x : v) x = static_cast<real>(generator.uniform(low, high));
  return v;
}

struct Problem {
  int64_t N, L, d;
  real scale;
  Values q, k, v, dy;
};

Problem problem(int64_t N, int64_t L, int64_t d, Generator& generator) {
  const int64_t n = N * L * d;
  return {N,
          L,
          d,
          d > 0 ? real(1) / std::sqrt(real(d)) : real(1),
          draw(n, -2, 2, generator),
          draw(n, -2, 2, generator),
          draw(n, -1, 1, generator),
          draw(n, -1, 1, generator)};
}

// The magnitudes the tolerances scale with (the header), in long double
// from the scalar forward's lse: |y| bounds, |dv|, |dk| and |dq| bounds.
struct Magnitudes {
  std::vector<double> y, dq, dk, dv;
};

Magnitudes magnitudes(const Problem& p, const Values& y, const Values& lse) {
  const int64_t N = p.N, L = p.L, d = p.d, n = N * L * d;
  Magnitudes m{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n),
               std::vector<double>(n)};
  for (int64_t h = 0; h < N; ++h) {
    const int64_t base = h * L * d;
    for (int64_t i = 0; i < L; ++i) {
      long double D = 0;
      for (int64_t c = 0; c < d; ++c)
        D += (long double)p.dy[base + i * d + c] * y[base + i * d + c];
      for (int64_t j = 0; j <= i; ++j) {
        long double s = 0, dp = 0;
        for (int64_t c = 0; c < d; ++c) {
          s += (long double)p.q[base + i * d + c] * p.scale * p.k[base + j * d + c];
          dp += (long double)p.dy[base + i * d + c] * p.v[base + j * d + c];
        }
        const long double P = std::exp(s - lse[h * L + i]);
        const long double dS = std::abs(P * (dp - D));
        for (int64_t c = 0; c < d; ++c) {
          const int64_t at_i = base + i * d + c, at_j = base + j * d + c;
          m.y[at_i] += double(P * std::abs(p.v[at_j]));
          m.dv[at_j] += double(P * std::abs(p.dy[at_i]));
          m.dk[at_j] += double(dS * std::abs(p.q[at_i] * p.scale));
          m.dq[at_i] += double(dS * std::abs(p.k[at_j]) * p.scale);
        }
      }
    }
  }
  return m;
}

// Every element within tol · (bound + |reference|) + kFlushed; names the worst.
void check_close(const std::string& what, const Values& simd, const Values& reference,
                 const std::vector<double>& bound) {
  REQUIRE(simd.size() == reference.size());
  int64_t failures = 0, worst = -1;
  double worst_excess = 0;
  for (size_t e = 0; e < simd.size(); ++e) {
    const double difference = std::abs(double(simd[e]) - double(reference[e]));
    const double limit = kTolerance * (bound[e] + std::abs(double(reference[e]))) + kFlushed;
    if (!(difference <= limit)) {  // NaN fails too
      ++failures;
      const double excess = std::isnan(difference) ? INFINITY : difference - limit;
      if (worst < 0 || excess > worst_excess)
        worst = static_cast<int64_t>(e), worst_excess = excess;
    }
  }
  INFO(what << ": " << failures << " of " << simd.size() << " elements differ"
            << (worst >= 0 ? fmt::format("; worst at {}: simd {} vs scalar {}", worst, simd[worst],
                                         reference[worst])
                           : std::string()));
  CHECK(failures == 0);
}

// Runs both versions of the forward and the backward on one problem and
// compares them. The outputs start as ±99, so an element one version
// forgets to write differs.
void compare(const Problem& p) {
  const int64_t n = p.N * p.L * p.d, rows = p.N * p.L;
  const std::string what = fmt::format("N={} L={} d={} ({})", p.N, p.L, p.d, k::simd_description());
  Values y(n, 99), y_ref(n, -99), lse(rows, 99), lse_ref(rows, -99);
  k::causal_attention_forward(y.data(), lse.data(), p.q.data(), p.k.data(), p.v.data(), p.scale,
                              p.N, p.L, p.d);
  k::scalar::causal_attention_forward(y_ref.data(), lse_ref.data(), p.q.data(), p.k.data(),
                                      p.v.data(), p.scale, p.N, p.L, p.d);
  const Magnitudes m = magnitudes(p, y_ref, lse_ref);
  check_close(what + " y", y, y_ref, m.y);
  check_close(what + " lse", lse, lse_ref, std::vector<double>(rows, 1.0));

  // Both backwards from the specification's forward, so that they differ by
  // their own e^x only.
  Values dq(n, 99), dk(n, 99), dv(n, 99), dq_ref(n, -99), dk_ref(n, -99), dv_ref(n, -99);
  k::causal_attention_backward(dq.data(), dk.data(), dv.data(), p.dy.data(), p.q.data(), p.k.data(),
                               p.v.data(), y_ref.data(), lse_ref.data(), p.scale, p.N, p.L, p.d);
  k::scalar::causal_attention_backward(dq_ref.data(), dk_ref.data(), dv_ref.data(), p.dy.data(),
                                       p.q.data(), p.k.data(), p.v.data(), y_ref.data(),
                                       lse_ref.data(), p.scale, p.N, p.L, p.d);
  check_close(what + " dq", dq, dq_ref, m.dq);
  check_close(what + " dk", dk, dk_ref, m.dk);
  check_close(what + " dv", dv, dv_ref, m.dv);
}

}  // namespace

TEST_CASE("causal attention kernels: SIMD equals scalar at every tile remainder", "[kernels]") {
  Generator generator(7);
  for (int64_t d : {1, 7, 8, 9, 16, 17}) {
    for (int64_t L = 0; L <= 33; ++L) compare(problem(2, L, d, generator));
    for (int64_t L = 63; L <= 65; ++L) compare(problem(2, L, d, generator));
  }
}

TEST_CASE("causal attention kernels: SIMD equals scalar on long rows and wide heads", "[kernels]") {
  Generator generator(8);
  compare(problem(1, 225, 64, generator));
  compare(problem(1, 70, 33, generator));
  compare(problem(1, 40, 130, generator));
  compare(problem(3, 49, 32, generator));
  compare(problem(2, 5, 0, generator));  // d = 0: every score 0, y has no numbers
  compare(problem(0, 9, 8, generator));  // no heads
}

// Scores of ±60 and more: most weights of a row underflow, and the running
// maximum jumps between tiles, so the rescaling factor e^(m − m') is tiny.
TEST_CASE("causal attention kernels: SIMD equals scalar with large scores", "[kernels]") {
  Generator generator(9);
  Problem p = problem(2, 100, 16, generator);
  for (real& x : p.q) x *= real(8);
  for (real& x : p.k) x *= real(8);
  compare(p);
}

// The heads are shared between threads whole: one thread or two, every bit
// is the same.
TEST_CASE("causal attention kernels: the same bits on one thread and two", "[kernels]") {
  Generator generator(10);
  const Problem p = problem(5, 70, 24, generator);
  const int64_t n = p.N * p.L * p.d, rows = p.N * p.L;
  Values runs[2][5];
  for (int threads : {1, 2}) {
    const testing::ThreadSettings settings(threads, 1);
    Values y(n), lse(rows), dq(n), dk(n), dv(n);
    k::causal_attention_forward(y.data(), lse.data(), p.q.data(), p.k.data(), p.v.data(), p.scale,
                                p.N, p.L, p.d);
    k::causal_attention_backward(dq.data(), dk.data(), dv.data(), p.dy.data(), p.q.data(),
                                 p.k.data(), p.v.data(), y.data(), lse.data(), p.scale, p.N, p.L,
                                 p.d);
    Values* run = runs[threads - 1];
    run[0] = y, run[1] = lse, run[2] = dq, run[3] = dk, run[4] = dv;
  }
  for (int a = 0; a < 5; ++a) CHECK(runs[0][a] == runs[1][a]);
}

}  // namespace test_kernels_causal_attention
