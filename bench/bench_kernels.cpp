// bench/bench_kernels.cpp — how fast are the kernels on this machine?
//
//   ./build/bench/bench_kernels [attention | matmul]   (the float library)
//
// The tables:
//   1. The machine's single-core FMA peak, measured here: a loop of
//      independent xsimd FMAs on registers, no memory traffic, so it runs at
//      the core's FMA throughput. That is the ceiling for every other number.
//   2. matmul GFLOP/s (2·M·K·N flops per product) for square sizes, the
//      shapes a seq2seq model hits (one row or a batch times a weight stored
//      (out, in), the NT layout; a weight gradient, TN) and attention's bmm,
//      with the fraction of the peak and, when CMake found OpenBLAS, its
//      cblas_sgemm on the same product in the same run and the ratio. 2b is
//      the same on two threads (wall clock). `bench_kernels matmul` runs
//      tables 1, 2 and 2b alone.
//   3. SIMD versus the scalar reference loops (kernels::scalar) for exp,
//      tanh, softmax's own e^x (exp_nonpositive), softmax rows (two that
//      stay in L1, and a batch of 64) and sum.
//   4. The same comparison per call for the small kernels of one epoch of
//      the Nadaraya–Watson attention pooling (rows of 49 keys; the fused
//      attention_pool and the softmax and bmm it replaces), and the
//      softmax row lengths seq2seq uses. `bench_kernels attention` runs
//      this table alone.
//   5. The memory-bound kernels (softmax rows, matvec, vecmat) in GB/s,
//      against a copy and a read of the same bytes measured in the same run.
//   6. nn::GRU over a sequence, forward and backward, in GFLOP/s.
// Every figure is the median of 7 timed samples; each sample repeats the
// work until it takes at least 20 ms of this thread's CPU time (not wall
// time, so other processes sharing the core do not inflate the numbers). Timings are for reading,
// never for pass/fail: the tests check correctness only.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attograd.hpp"
#include "bench/openblas.hpp"
#include "bench/timing.hpp"
#include "tensor/kernels_simd.hpp"
#include "tensor/parallel.hpp"

using namespace attograd;

using attograd::bench::openblas_matmul;

namespace {

using bench::kSamples;
using bench::median;

// The clock samples are timed with: this thread's CPU time, except while the
// two-thread table runs (bench/timing.hpp says why).
bench::Clock clock_seconds = bench::thread_seconds;

template <typename Work>
int64_t calls_per_sample(Work&& work) {
  return bench::calls_per_sample(work, clock_seconds);
}
template <typename Work>
double sample_seconds(Work&& work, int64_t calls) {
  return bench::sample_seconds(work, calls, clock_seconds);
}
template <typename Work>
double median_seconds(Work&& work) {
  return bench::median_seconds(work, clock_seconds);
}

// ---- 1. FMA peak ------------------------------------------------------------

// acc_j = acc_j · m + a for 12 accumulators: 12 independent dependency chains
// are more than (FMA latency × FMA units) on current x86 and ARM cores, so
// the loop is limited by FMA throughput alone. All values stay in registers.
class FmaPeak {
 public:
  static constexpr int kAccumulators = 12;
  static constexpr int64_t kIterations = 1 << 16;
  using Batch = xsimd::batch<real>;

  void operator()() {
    Batch acc[kAccumulators];
    const real start = start_;  // read afresh each call: the loop is not hoisted out of a sample
    for (int j = 0; j < kAccumulators; ++j) acc[j] = Batch(real(j + 1) * start);
    const Batch m(real(0.999999)), a(real(1e-7));
    for (int64_t i = 0; i < kIterations; ++i) {
      for (int j = 0; j < kAccumulators; ++j) acc[j] = kernels::simd::fma(acc[j], m, a);
    }
    Batch total = acc[0];
    for (int j = 1; j < kAccumulators; ++j) total += acc[j];
    // A volatile store keeps the loop from being optimised away, even where the
    // FmaPeak object is never read again (a sample timer's local one).
    sink_ = xsimd::hadd(total);
  }
  static double flops() { return 2.0 * double(Batch::size) * kAccumulators * double(kIterations); }

 private:
  volatile real start_ = real(1e-3);
  volatile real sink_ = 0;
};

double fma_peak_gflops() {
  FmaPeak peak;
  return FmaPeak::flops() / median_seconds(peak) * 1e-9;
}

// ---- 2. matmul ----------------------------------------------------------------

struct MatmulCase {
  std::string name;
  int64_t batches, M, K, N;  // batches > 1: a bmm of that many products
  kernels::Layout a_layout, b_layout;
};

const std::vector<MatmulCase>& matmul_cases() {
  using kernels::Layout;
  static const std::vector<MatmulCase> cases = {
      {"64 x 64 @ 64 x 64 (NN)", 1, 64, 64, 64, Layout::normal, Layout::normal},
      {"128 x 128 @ 128 x 128 (NN)", 1, 128, 128, 128, Layout::normal, Layout::normal},
      {"256 x 256 @ 256 x 256 (NN)", 1, 256, 256, 256, Layout::normal, Layout::normal},
      {"512 x 512 @ 512 x 512 (NN)", 1, 512, 512, 512, Layout::normal, Layout::normal},
      {"1024 x 1024 @ 1024 x 1024 (NN)", 1, 1024, 1024, 1024, Layout::normal, Layout::normal},
      {"256 x 256 @ (256 x 256)T (NT)", 1, 256, 256, 256, Layout::normal, Layout::transposed},
      {"(256 x 256)T @ 256 x 256 (TN)", 1, 256, 256, 256, Layout::transposed, Layout::normal},
      {"1 x 256 @ (768 x 256)T (NT, GRU gates)", 1, 1, 256, 768, Layout::normal,
       Layout::transposed},
      {"1 x 256 @ (2803 x 256)T (NT, output layer)", 1, 1, 256, 2803, Layout::normal,
       Layout::transposed},
      {"64 x 256 @ (768 x 256)T (NT, batch 64)", 1, 64, 256, 768, Layout::normal,
       Layout::transposed},
      {"(768 x 64)T @ 64 x 256 (TN, dW batch 64)", 1, 768, 64, 256, Layout::transposed,
       Layout::normal},
      {"640 x 256 @ (2297 x 256)T (NT, T 10 B 64)", 1, 640, 256, 2297, Layout::normal,
       Layout::transposed},
      {"bmm 64 x (10 x 256 @ 256 x 10) (NN)", 64, 10, 256, 10, Layout::normal, Layout::normal},
  };
  return cases;
}

// GFLOP/s of attograd and of OpenBLAS (0 without it) for one case, medians of
// kSamples alternating samples of attograd and OpenBLAS (when found).
struct MatmulRow {
  double attograd, openblas;
};

MatmulRow time_matmul(const MatmulCase& c, Generator& generator) {
  const int64_t a_size = c.M * c.K, b_size = c.K * c.N, c_size = c.M * c.N;
  const std::vector<real> a = uniform({c.batches * a_size}, -1, 1, generator).to_vector();
  const std::vector<real> b = uniform({c.batches * b_size}, -1, 1, generator).to_vector();
  std::vector<real> out(c.batches * c_size);
  auto ours = [&] {
    kernels::bmm_forward(out.data(), a.data(), c.a_layout, a_size, b.data(), c.b_layout, b_size,
                         c.batches, c.M, c.K, c.N);
  };
  auto theirs = [&] {
    for (int64_t i = 0; i < c.batches; ++i) {
      openblas_matmul(out.data() + i * c_size, a.data() + i * a_size, c.a_layout,
                      b.data() + i * b_size, c.b_layout, c.M, c.K, c.N);
    }
  };
  const double flops = 2.0 * double(c.batches * c.M) * double(c.K) * double(c.N);
  const int64_t our_calls = calls_per_sample(ours);
  const int64_t their_calls = bench::kHaveOpenblas ? calls_per_sample(theirs) : 0;
  std::vector<double> gflops, blas;
  for (int s = 0; s < kSamples; ++s) {
    gflops.push_back(flops / sample_seconds(ours, our_calls) * 1e-9);
    if (bench::kHaveOpenblas) blas.push_back(flops / sample_seconds(theirs, their_calls) * 1e-9);
  }
  return {median(gflops), bench::kHaveOpenblas ? median(blas) : 0};
}

// peak: the FMA peak in GFLOP/s the share is taken of (0: no share printed).
void print_matmul_row(const std::string& name, const MatmulRow& row, double peak) {
  const std::string share = peak > 0 ? fmt::format("{:.0f}%", 100 * row.attograd / peak) : "-";
  if (bench::kHaveOpenblas) {
    fmt::print("{:<44} {:>10.1f} {:>8} {:>10.1f} {:>9.2f}\n", name, row.attograd, share,
               row.openblas, row.attograd / row.openblas);
  } else {
    fmt::print("{:<44} {:>10.1f} {:>8} {:>10} {:>9}\n", name, row.attograd, share, "-", "-");
  }
}

void matmul_header() {
  fmt::print("{:<44} {:>10} {:>8} {:>10} {:>9}\n", "shape (layout)", "GFLOP/s", "of peak",
             "OpenBLAS", "ratio");
}

void matmul_table() {
  fmt::print(
      "\n2. matmul, one core (medians of {} samples; the share is of the FMA peak measured\n"
      "   again when the table starts; OpenBLAS {} in the same run, alternating with\n"
      "   attograd, one thread; ratio = attograd / OpenBLAS, above 1 is faster)\n\n",
      kSamples, bench::kHaveOpenblas ? "cblas_?gemm" : "not found at configure time");
  matmul_header();
  bench::openblas_threads(1);
  Generator generator(1);
  const double peak = fma_peak_gflops();
  for (const MatmulCase& c : matmul_cases()) {
    print_matmul_row(c.name, time_matmul(c, generator), peak);
  }
}

// The products of table 2 from 64 rows up, on two threads each (attograd's
// pool and OpenBLAS's), timed by the wall clock: on a shared host other
// processes inflate both sides of a row alike.
void matmul_two_threads_table() {
  fmt::print("\n2b. matmul, two threads (wall clock, medians of {} samples)\n\n", kSamples);
  matmul_header();
  const int threads = parallel::num_threads();
  parallel::set_num_threads(2);
  bench::openblas_threads(2);
  clock_seconds = bench::wall_seconds;
  Generator generator(2);
  for (const MatmulCase& c : matmul_cases()) {
    if (c.M == 1) continue;
    print_matmul_row(c.name, time_matmul(c, generator), 0);
  }
  clock_seconds = bench::thread_seconds;
  bench::openblas_threads(1);
  parallel::set_num_threads(threads);
}

// ---- 3. SIMD versus scalar -----------------------------------------------------

void speedup_row(const std::string& name, const std::string& size, int64_t elements,
                 const std::function<void()>& simd, const std::function<void()>& scalar) {
  const double simd_seconds = median_seconds(simd);
  const double scalar_seconds = median_seconds(scalar);
  fmt::print("{:<22} {:<16} {:>12.3f} {:>12.3f} {:>8.1f}x\n", name, size,
             scalar_seconds / double(elements) * 1e9, simd_seconds / double(elements) * 1e9,
             scalar_seconds / simd_seconds);
}

void speedup_table() {
  fmt::print("\n3. SIMD versus the scalar reference loops (median of {} samples)\n\n", kSamples);
  fmt::print("{:<22} {:<16} {:>12} {:>12} {:>9}\n", "kernel", "size", "scalar ns/el", "simd ns/el",
             "speedup");
  Generator generator(2);
  constexpr int64_t n = 4096;
  const std::vector<real> x = uniform({n}, -4, 4, generator).to_vector();
  std::vector<real> out(n);
  speedup_row(
      "exp", "4096", n,
      [&] { kernels::unary_forward(kernels::Unary::exp, out.data(), x.data(), n); },
      [&] { kernels::scalar::unary_forward(kernels::Unary::exp, out.data(), x.data(), n); });
  speedup_row(
      "tanh", "4096", n,
      [&] { kernels::unary_forward(kernels::Unary::tanh, out.data(), x.data(), n); },
      [&] { kernels::scalar::unary_forward(kernels::Unary::tanh, out.data(), x.data(), n); });

  // softmax's own e^x, for x <= 0 (x - the row's maximum), in L1
  const std::vector<real> shifted = uniform({n}, -8, 0, generator).to_vector();
  speedup_row(
      "exp_nonpositive", "4096", n,
      [&] { kernels::exp_nonpositive(out.data(), shifted.data(), n); },
      [&] { kernels::scalar::exp_nonpositive(out.data(), shifted.data(), n); });

  // Two rows of bench_ops' (640, 2297) softmax, in L1: the kernel without
  // the traffic from L3 that the whole matrix adds.
  constexpr int64_t few_rows = 2, vocabulary = 2297;
  const std::vector<real> two_rows = uniform({few_rows * vocabulary}, -4, 4, generator).to_vector();
  std::vector<real> two_out(few_rows * vocabulary);
  speedup_row(
      "softmax rows (in L1)", "2 x 2297", few_rows * vocabulary,
      [&] { kernels::softmax_forward(two_out.data(), two_rows.data(), few_rows, vocabulary); },
      [&] {
        kernels::scalar::softmax_forward(two_out.data(), two_rows.data(), few_rows, vocabulary);
      });

  constexpr int64_t rows = 64, cols = 2803;  // a batch of output-layer rows
  const std::vector<real> logits = uniform({rows * cols}, -4, 4, generator).to_vector();
  std::vector<real> probabilities(rows * cols);
  speedup_row(
      "softmax rows", "64 x 2803", rows * cols,
      [&] { kernels::softmax_forward(probabilities.data(), logits.data(), rows, cols); },
      [&] { kernels::scalar::softmax_forward(probabilities.data(), logits.data(), rows, cols); });
  speedup_row(
      "log_softmax rows", "64 x 2803", rows * cols,
      [&] { kernels::log_softmax_forward(probabilities.data(), logits.data(), rows, cols); },
      [&] {
        kernels::scalar::log_softmax_forward(probabilities.data(), logits.data(), rows, cols);
      });

  constexpr int64_t long_n = 1 << 16;
  const std::vector<real> values = uniform({long_n}, -1, 1, generator).to_vector();
  real total = 0;
  speedup_row(
      "sum", "65536", long_n,
      [&] { kernels::sum_axis_forward(&total, values.data(), 1, long_n, 1); },
      [&] { kernels::scalar::sum_axis_forward(&total, values.data(), 1, long_n, 1); });
}

// ---- 4. Attention-sized rows ------------------------------------------------------

void per_call_row(const std::string& name, const std::function<void()>& simd,
                  const std::function<void()>& scalar) {
  const double simd_seconds = median_seconds(simd);
  const double scalar_seconds = median_seconds(scalar);
  fmt::print("{:<44} {:>12.0f} {:>12.0f} {:>8.1f}x\n", name, scalar_seconds * 1e9,
             simd_seconds * 1e9, scalar_seconds / simd_seconds);
}

// The kernels one epoch of the learned Nadaraya–Watson pooling runs (50
// queries × 49 keys, models/nw_regression/nw_regression.cpp): attention_pool on the fast
// path, softmax and bmm on the reference path; plus the row lengths the
// seq2seq trainer's softmax and log_softmax see (10 and 2231). Nanoseconds
// per call: at this size everything is in L1 and a call costs well under a
// microsecond, so loop overheads and ragged tails show.
void attention_table() {
  using kernels::Binary;
  using kernels::Layout;
  fmt::print("\n4. attention-sized kernels, ns per call (median of {} samples)\n\n", kSamples);
  fmt::print("{:<44} {:>12} {:>12} {:>9}\n", "kernel (shape)", "scalar ns", "simd ns", "speedup");
  Generator generator(3);
  constexpr int64_t Q = 50, K = 49;
  const std::vector<real> scores = uniform({Q * K}, -30, 0, generator).to_vector();
  const std::vector<real> grad = uniform({Q * K}, -1, 1, generator).to_vector();
  const std::vector<real> row = uniform({K}, -1, 1, generator).to_vector();
  std::vector<real> out(Q * K), out2(Q * K);
  kernels::scalar::softmax_forward(out2.data(), scores.data(), Q, K);
  per_call_row(
      "softmax_forward (50,49)", [&] { kernels::softmax_forward(out.data(), scores.data(), Q, K); },
      [&] { kernels::scalar::softmax_forward(out.data(), scores.data(), Q, K); });
  per_call_row(
      "softmax_backward (50,49)",
      [&] { kernels::softmax_backward(out.data(), out2.data(), grad.data(), Q, K); },
      [&] { kernels::scalar::softmax_backward(out.data(), out2.data(), grad.data(), Q, K); });
  per_call_row(
      "log_softmax_forward (50,49)",
      [&] { kernels::log_softmax_forward(out.data(), scores.data(), Q, K); },
      [&] { kernels::scalar::log_softmax_forward(out.data(), scores.data(), Q, K); });
  kernels::scalar::log_softmax_forward(out2.data(), scores.data(), Q, K);
  per_call_row(
      "log_softmax_backward (50,49)",
      [&] { kernels::log_softmax_backward(out.data(), out2.data(), grad.data(), Q, K); },
      [&] { kernels::scalar::log_softmax_backward(out.data(), out2.data(), grad.data(), Q, K); });
  // seq2seq: a decoder step's log_softmax over the target vocabulary, and
  // attention over a 10-word source sentence.
  const std::vector<real> logits = uniform({4 * 2231}, -8, 8, generator).to_vector();
  std::vector<real> log_probabilities(4 * 2231);
  per_call_row(
      "log_softmax_forward (4,2231)",
      [&] { kernels::log_softmax_forward(log_probabilities.data(), logits.data(), 4, 2231); },
      [&] {
        kernels::scalar::log_softmax_forward(log_probabilities.data(), logits.data(), 4, 2231);
      });
  per_call_row(
      "softmax_forward (4,2231)",
      [&] { kernels::softmax_forward(log_probabilities.data(), logits.data(), 4, 2231); },
      [&] { kernels::scalar::softmax_forward(log_probabilities.data(), logits.data(), 4, 2231); });
  per_call_row(
      "softmax_forward (64,10)",
      [&] { kernels::softmax_forward(out.data(), scores.data(), 64, 10); },
      [&] { kernels::scalar::softmax_forward(out.data(), scores.data(), 64, 10); });

  // Nadaraya–Watson's epoch as it runs: attention_pool over (Q,1,K) unscaled
  // scores −(x − k)²/2 with one scale factor w² (about 79 at the end of
  // training), then its backward for the scale alone (the scores are constant).
  {
    const std::vector<real> distances = uniform({Q * K}, -12, 0, generator).to_vector();
    const std::vector<real> values = uniform({Q * K}, 0, 4, generator).to_vector();
    const std::vector<real> dout = uniform({Q}, -1, 1, generator).to_vector();
    const real scale = 78.7f;
    real dscale = 0;
    std::vector<real> pooled(Q), weights(Q * K);
    kernels::scalar::attention_pool_forward(pooled.data(), weights.data(), distances.data(), &scale,
                                            1, values.data(), Q, 1, K, 1);
    per_call_row(
        "attention_pool_forward (50,1,49), one scale",
        [&] {
          kernels::attention_pool_forward(pooled.data(), out.data(), distances.data(), &scale, 1,
                                          values.data(), Q, 1, K, 1);
        },
        [&] {
          kernels::scalar::attention_pool_forward(pooled.data(), out.data(), distances.data(),
                                                  &scale, 1, values.data(), Q, 1, K, 1);
        });
    per_call_row(
        "attention_pool_backward, the scale's only",
        [&] {
          kernels::attention_pool_backward(nullptr, &dscale, nullptr, dout.data(), weights.data(),
                                           distances.data(), &scale, 1, values.data(),
                                           pooled.data(), Q, 1, K, 1);
        },
        [&] {
          kernels::scalar::attention_pool_backward(nullptr, &dscale, nullptr, dout.data(),
                                                   weights.data(), distances.data(), &scale, 1,
                                                   values.data(), pooled.data(), Q, 1, K, 1);
        });
  }

  // f = bmm(α (Q,1,K), v (Q,K,1)) and its backward dα = bmm(df (Q,1,1), vᵀ (Q,1,K)).
  std::vector<real> f(Q);
  per_call_row(
      "bmm 50 x (1,49) @ (49,1)",
      [&] {
        kernels::bmm_forward(f.data(), out2.data(), Layout::normal, K, grad.data(), Layout::normal,
                             K, Q, 1, K, 1);
      },
      [&] {
        kernels::scalar::bmm_forward(f.data(), out2.data(), Layout::normal, K, grad.data(),
                                     Layout::normal, K, Q, 1, K, 1);
      });
  per_call_row(
      "bmm 50 x (1,1) @ (1,49)",
      [&] {
        kernels::bmm_forward(out.data(), f.data(), Layout::normal, 1, grad.data(), Layout::normal,
                             K, Q, 1, 1, K);
      },
      [&] {
        kernels::scalar::bmm_forward(out.data(), f.data(), Layout::normal, 1, grad.data(),
                                     Layout::normal, K, Q, 1, 1, K);
      });

  // scores = D ⊙ scale with scale (1) or (49), and the reductions of its backward.
  per_call_row(
      "mul (2450) * one value",
      [&] {
        kernels::binary_forward(Binary::mul, out.data(), scores.data(), 1, row.data(), 0, Q * K);
      },
      [&] {
        kernels::scalar::binary_forward(Binary::mul, out.data(), scores.data(), 1, row.data(), 0,
                                        Q * K);
      });
  per_call_row(
      "mul (50,49) * (49), row by row",
      [&] {
        for (int64_t r = 0; r < Q; ++r) {
          kernels::binary_forward(Binary::mul, out.data() + r * K, scores.data() + r * K, 1,
                                  row.data(), 1, K);
        }
      },
      [&] {
        for (int64_t r = 0; r < Q; ++r) {
          kernels::scalar::binary_forward(Binary::mul, out.data() + r * K, scores.data() + r * K, 1,
                                          row.data(), 1, K);
        }
      });
  real total = 0;
  std::vector<real> column_sums(K);
  per_call_row(
      "sum (2450) -> (1)", [&] { kernels::sum_axis_forward(&total, grad.data(), 1, Q * K, 1); },
      [&] { kernels::scalar::sum_axis_forward(&total, grad.data(), 1, Q * K, 1); });
  per_call_row(
      "sum (50,49) -> (49)",
      [&] { kernels::sum_axis_forward(column_sums.data(), grad.data(), 1, Q, K); },
      [&] { kernels::scalar::sum_axis_forward(column_sums.data(), grad.data(), 1, Q, K); });
  per_call_row(
      "accumulate (2450)", [&] { kernels::accumulate(out.data(), grad.data(), Q * K); },
      [&] { kernels::scalar::accumulate(out.data(), grad.data(), Q * K); });
}

// ---- 5. Memory-bound kernels --------------------------------------------------------

// Bytes a kernel must move at the least (each input read once, each output
// written once) over its time, beside what the core can move here: a copy of
// the same number of bytes (memcpy, read and write) and a read of them (a
// SIMD sum, read only), measured in the same run. The operands repeat from
// call to call, so they come from whichever cache holds them: a (640, 2297)
// float block (5.9 MB) from L3, a (768, 256) weight (786 KB) from L2 on a
// 1 MB-L2 core. A kernel that reaches the copy or read rate is as fast as the
// shape allows.
void bandwidth_row(const std::string& name, double bytes, double seconds, double copy_gbs,
                   double read_gbs) {
  const double gbs = bytes / seconds * 1e-9;
  fmt::print("{:<34} {:>10.1f} {:>9.1f} {:>10.1f} {:>9.0f}% {:>9.1f} {:>9.0f}%\n", name,
             seconds * 1e6, gbs, copy_gbs, 100 * gbs / copy_gbs, read_gbs, 100 * gbs / read_gbs);
}

// GB/s of memcpy over `bytes` (counting the bytes read and written) and of a
// read of them.
std::pair<double, double> copy_and_read(int64_t bytes) {
  const int64_t n = bytes / int64_t(sizeof(real));
  const std::vector<real> from(n, real(0.5));
  std::vector<real> to(n);
  const double copy =
      median_seconds([&] { std::memcpy(to.data(), from.data(), n * sizeof(real)); });
  volatile real sink = 0;
  const double read = median_seconds([&] {
    real total;
    kernels::sum_axis_forward(&total, from.data(), 1, n, 1);
    sink = total;
  });
  return {2.0 * double(bytes) / copy * 1e-9, double(bytes) / read * 1e-9};
}

void bandwidth_table() {
  fmt::print(
      "\n5. memory-bound kernels (medians of {} samples; GB/s = the bytes the kernel must read\n"
      "   and write over its time; copy = memcpy of the operand's size, counting read and\n"
      "   write; read = a SIMD sum over it; both in this run)\n\n",
      kSamples);
  fmt::print("{:<34} {:>10} {:>9} {:>10} {:>10} {:>9} {:>10}\n", "kernel (shape)", "us", "GB/s",
             "copy GB/s", "of copy", "read GB/s", "of read");
  Generator generator(5);
  {
    constexpr int64_t rows = 640, cols = 2297;  // an output layer's logits over T·B = 640 rows
    const std::vector<real> logits = uniform({rows * cols}, -4, 4, generator).to_vector();
    std::vector<real> out(rows * cols);
    const int64_t bytes = rows * cols * int64_t(sizeof(real));
    const auto [copy, read] = copy_and_read(bytes);
    bandwidth_row("softmax rows (640,2297)", 2.0 * double(bytes), median_seconds([&] {
                    kernels::softmax_forward(out.data(), logits.data(), rows, cols);
                  }),
                  copy, read);
    bandwidth_row("log_softmax rows (640,2297)", 2.0 * double(bytes), median_seconds([&] {
                    kernels::log_softmax_forward(out.data(), logits.data(), rows, cols);
                  }),
                  copy, read);
  }
  for (const int64_t N :
       {2297, 768}) {  // an output layer, the GRU's gates: y = x Wᵀ, and dx = dy W
    constexpr int64_t K = 256;
    const std::vector<real> weight = uniform({N * K}, -1, 1, generator).to_vector();
    const std::vector<real> x = uniform({std::max(N, K)}, -1, 1, generator).to_vector();
    std::vector<real> y(std::max(N, K));
    const int64_t bytes = N * K * int64_t(sizeof(real));
    const auto [copy, read] = copy_and_read(bytes);
    bandwidth_row(
        fmt::format("matvec_nt ({},{}) @ ({})", N, K, K), double(bytes),
        median_seconds([&] { kernels::matvec_nt(y.data(), x.data(), weight.data(), K, N); }), copy,
        read);
    bandwidth_row(fmt::format("vecmat ({}) @ ({},{})", N, N, K), double(bytes),
                  median_seconds([&] { kernels::vecmat(y.data(), x.data(), weight.data(), N, K); }),
                  copy, read);
  }
}

// ---- 6. A GRU over a sequence -------------------------------------------------------------

// nn::GRU forward and backward through the public API, every gradient formed:
// the products of one input projection, T recurrent steps, and the backward's
// per-step and whole-sequence products, in GFLOP/s of those products and as a
// share of the FMA peak (the gate kernels and bookkeeping count as time, not
// flops).
void gru_table(double peak) {
  constexpr int64_t T = 10, B = 64, I = 256, H = 256;
  fmt::print(
      "\n6. nn::GRU({}, {}) over T = {}, B = {}: forward and backward, every gradient formed\n\n",
      I, H, T, B);
  Generator generator(6);
  auto gru = std::make_shared<nn::GRU>(nn::GRUOptions(I, H), generator);
  const Tensor x = requires_grad_(randn({T, B, I}, generator));
  const double seconds = median_seconds([&] {
    gru->zero_grad();
    zero_grad(x);
    backward(sum(gru->forward(x).output));
    for (const Tensor& parameter : gru->parameters()) (void)grad(parameter);
    (void)grad(x);
  });
  // Forward: X W_ihᵀ and T steps of h W_hhᵀ; backward: T steps of dGH W_hh,
  // then dX, dW_ih and dW_hh over all T·B rows. 2 flops per multiply-add.
  const double flops = 2.0 * 6.0 * double(T * B) * double(3 * H) * double(H);
  fmt::print("{:<34} {:>10.1f} us {:>9.1f} GFLOP/s {:>6.0f}% of the FMA peak\n",
             "GRU fwd+bwd T10 B64 H256", seconds * 1e6, flops / seconds * 1e-9,
             100 * flops / seconds * 1e-9 / peak);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string only = argc > 1 ? argv[1] : "";
  if (argc > 2 || (argc == 2 && only != "attention" && only != "matmul")) {
    fmt::print(stderr, "usage: {} [attention | matmul]\n", argv[0]);
    return 2;
  }
  // OpenBLAS's worker threads spin for a long while after each call (by
  // default 2^28 polls), taking the second core from attograd's two-thread
  // samples that follow; OPENBLAS_THREAD_TIMEOUT=4 makes them sleep almost at
  // once. The library reads it when it loads, so the program restarts itself
  // with it set.
  if (bench::kHaveOpenblas && std::getenv("OPENBLAS_THREAD_TIMEOUT") == nullptr) {
    setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
    execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
  }
  // One core throughout: large products would otherwise be shared between
  // threads (tensor/parallel.hpp), and the thread-CPU-time clock used here
  // counts only the calling thread.
  const int threads = parallel::num_threads();
  parallel::set_num_threads(1);
  fmt::print("attograd kernel benchmark (1 thread; the library would use {})\n", threads);
  fmt::print("CPU: {}; kernels: {}\n", bench::cpu_model(), kernels::simd_description());
  if (bench::kHaveOpenblas) fmt::print("OpenBLAS: {}\n", bench::openblas_description());
  // The one-thread tables run on one CPU, so that attograd's samples and the
  // references alternating with them (OpenBLAS, the scalar loops, a copy)
  // share a core; table 2b, on two threads, is not pinned.
  std::optional<bench::PinnedToOneCpu> pinned(std::in_place);
  fmt::print("one-thread tables {}\n", pinned->describe());
  if (only == "attention") {  // table 4 alone
    attention_table();
    return 0;
  }
  const double peak = fma_peak_gflops();
  fmt::print(
      "\n1. FMA peak, one core: {:.1f} GFLOP/s ({}-lane {} FMAs, 12 chains, registers only)\n",
      peak, xsimd::batch<real>::size, sizeof(real) == 4 ? "float" : "double");
  matmul_table();
  pinned.reset();
  matmul_two_threads_table();
  if (only == "matmul") return 0;  // tables 1, 2 and 2b alone
  pinned.emplace();
  speedup_table();
  attention_table();
  bandwidth_table();
  gru_table(peak);
  return 0;
}
