// bench/bench_nw_regression.cpp — how long do 100 epochs of the learned
// Nadaraya–Watson attention pooling (models/nw_regression/nw_regression.hpp) take?
//
//   ./build/bench/bench_nw_regression [trainings] [--rounds R]
//     (the float library, one core; default 301 trainings, 3 rounds)
//
// One training is nw_regression::train on the seed-0 data set (50 pairs, so
// 50 queries × 49 keys), from the same initial w every time: 100 epochs of
// forward, backward and an SGD step through autograd. Its time is the
// TrainResult::compute_ms the example reports (this thread's CPU time of the
// epochs, not the setup). The figure is the median over many trainings.
//
// The floor it is measured against is the same computation written by hand:
// one scalar loop doing the forward, the backward and the SGD step on raw
// arrays, with no graph, no tensors and no allocation — what attograd would
// cost if it had no overhead at all. The hand loop's final w is printed next
// to attograd's, so a wrong floor shows. The same training also runs on the
// reference path (fast::ReferencePath) and on the fast path with pooled
// allocation off, so docs/fast_paths.md's figures come from this run too.
// When /usr/bin/python3 has torch,
// the same training in PyTorch (bench/reference/nw.py, the same data and
// starting w) is timed too, alternately: a round is `trainings` trainings of
// attograd, then as many of PyTorch, and each side's figure is the median of
// its rounds' medians, so a slow spell of a shared machine falls on both
// sides rather than on one. Timings are for reading, never for pass/fail: the
// tests check correctness only.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "attograd.hpp"
#include "bench/pytorch.hpp"
#include "bench/timing.hpp"
#include "models/nw_regression/nw_regression.hpp"
#include "tensor/fast/pool.hpp"
#include "tensor/parallel.hpp"

using namespace attograd;
using namespace attograd::nw_regression;

using attograd::bench::thread_seconds;

namespace {

int trainings = 301;  // odd, so the median is one of them (argv[1] overrides)
int rounds = 3;       // --rounds
constexpr int64_t kEpochs = 100;
constexpr double kLearningRate = 0.5;

using bench::median;

// The hand-written floor. d: (N,K) squared distances (x_i − x_j)², j ≠ i;
// v: (N,K) the matching y_j; y: (N) targets; w: (P) with P = 1 or K.
//   s_ij = −w²·d_ij/2,  α = softmax_j(s),  f_i = Σ_j α_ij v_ij,  L = Σ_i (f_i − y_i)²
//   df_i = 2(f_i − y_i),  dα_ij = df_i v_ij,  ds_ij = α_ij (dα_ij − Σ_k dα_ik α_ik)
//   dw = Σ ds_ij · (−w d_ij)   (summed over i, and over j too when P = 1)
//   w ← w − lr·dw
struct HandLoop {
  std::vector<real> d, v, y, w;
  int64_t n = 0, k = 0;
  std::vector<real> alpha, dw;

  double train(int64_t epochs, real lr, std::vector<real> w_start) {
    w = std::move(w_start);
    alpha.assign(size_t(n * k), 0);
    dw.assign(w.size(), 0);
    double loss = 0;
    const bool scalar = w.size() == 1;
    for (int64_t epoch = 0; epoch < epochs; ++epoch) {
      std::fill(dw.begin(), dw.end(), real(0));
      loss = 0;
      for (int64_t i = 0; i < n; ++i) {
        const real* di = &d[size_t(i * k)];
        const real* vi = &v[size_t(i * k)];
        real* ai = &alpha[size_t(i * k)];
        real largest = -INFINITY;
        for (int64_t j = 0; j < k; ++j) {
          const real wj = w[scalar ? 0 : size_t(j)];
          ai[j] = di[j] * (wj * wj * real(-0.5));
          largest = std::max(largest, ai[j]);
        }
        real total = 0;
        for (int64_t j = 0; j < k; ++j) total += (ai[j] = std::exp(ai[j] - largest));
        const real inverse = 1 / total;
        real f = 0;
        for (int64_t j = 0; j < k; ++j) f += (ai[j] *= inverse) * vi[j];
        const real error = f - y[size_t(i)];
        loss += double(error) * error;
        const real df = 2 * error;
        real dot = 0;
        for (int64_t j = 0; j < k; ++j) dot += df * vi[j] * ai[j];
        for (int64_t j = 0; j < k; ++j) {
          const real ds = ai[j] * (df * vi[j] - dot);
          const real wj = w[scalar ? 0 : size_t(j)];
          dw[scalar ? 0 : size_t(j)] += ds * (-wj * di[j]);
        }
      }
      for (size_t p = 0; p < w.size(); ++p) w[p] -= lr * dw[p];
    }
    return loss;
  }
};

void run(WeightShape shape) {
  Generator generator(0);
  const Dataset data = make_dataset(generator);
  const int64_t n = data.x_train.numel();
  const int64_t weight_count = shape == WeightShape::scalar ? 1 : n - 1;
  NWKernelRegression model(NWKernelRegressionOptions(weight_count), generator);
  const Tensor w_start = model.w.clone_data();

  // The same inputs for the hand loop, built with attograd once.
  HandLoop hand;
  hand.n = n;
  hand.k = n - 1;
  {
    NoGradGuard no_grad;
    const Tensor keys = leave_one_out(data.x_train);
    const Tensor distances = reshape(repeat_interleave(data.x_train, n - 1, 0), {n, n - 1}) - keys;
    hand.d = (distances * distances).to_vector();
    hand.v = leave_one_out(data.y_train).to_vector();
    hand.y = data.y_train.to_vector();
  }

  // One round: `trainings` trainings of attograd's fast path, of the fast
  // path without pooled allocation, of the reference path and of the hand
  // loop, interleaved; attograd's median.
  std::vector<double> reference_ms, unpooled_ms, hand_ms;
  double attograd_loss = 0, hand_loss = 0;
  std::vector<real> attograd_w;
  // One training of the model from w_start, with whatever mechanisms are on.
  auto train_from_start = [&] {
    {
      NoGradGuard no_grad;
      model.w.copy_from(w_start);
    }
    zero_grad(model.w);
    return train(model, data.x_train, data.y_train,
                 TrainOptions().epochs(kEpochs).lr(kLearningRate));
  };
  auto attograd_round = [&] {
    std::vector<double> attograd_ms;
    for (int t = 0; t < trainings; ++t) {
      const TrainResult result = train_from_start();
      attograd_ms.push_back(result.compute_ms);
      attograd_loss = result.losses.back();
      attograd_w = model.w.to_vector();

      {  // the fast path without pooled allocation (tensor/fast/pool.hpp)
        const bool pooling = pool::pooling();
        pool::set_pooling(false);
        unpooled_ms.push_back(train_from_start().compute_ms);
        pool::set_pooling(pooling);
      }

      {  // the same training on the reference path (autograd/fast/fast.hpp)
        const fast::ReferencePath reference;
        reference_ms.push_back(train_from_start().compute_ms);
      }

      const double start = thread_seconds();
      hand_loss = hand.train(kEpochs, real(kLearningRate), w_start.to_vector());
      hand_ms.push_back(1e3 * (thread_seconds() - start));
    }
    return median(attograd_ms) * 1e3;  // µs per training
  };

  // PyTorch on the same data from the same w (bench/reference/nw.py: its
  // median CPU time of 100 epochs over as many trainings), in a child process
  // after each of attograd's rounds.
  const bool torch = bench::have_pytorch();
  const std::string torch_arguments =
      fmt::format("--w {} --trainings {}", to_string(shape), trainings);
  std::vector<double> ours_rounds, torch_rounds;
  double torch_loss = 0, torch_w0 = 0;
  bool torch_failed = false;
  for (int round = 0; round < rounds; ++round) {
    ours_rounds.push_back(attograd_round());
    if (!torch || torch_failed) continue;
    const auto theirs = bench::run_reference("nw.py", torch_arguments);
    if (!theirs) {
      torch_failed = true;
      continue;
    }
    torch_rounds.push_back(1e3 * (*theirs)["ms_per_training_cpu"].get<double>());
    torch_loss = (*theirs)["final_loss"].get<double>();
    torch_w0 = (*theirs)["w"][0].get<double>();
  }

  const double ours = median(ours_rounds), floor = median(hand_ms) * 1e3;
  const double reference_path = median(reference_ms) * 1e3;
  const double unpooled = median(unpooled_ms) * 1e3;
  fmt::print(
      "{:<7} w ({:>2} entries)  attograd {:8.1f} µs/training {:6.2f} µs/epoch   "
      "hand loop {:6.1f} µs/training {:5.2f} µs/epoch   ratio {:5.1f}x\n",
      to_string(shape), weight_count, ours, ours / kEpochs, floor, floor / kEpochs, ours / floor);
  fmt::print("        reference path {:8.1f} µs/training: the fast path is {:4.2f} x its speed\n",
             reference_path, reference_path / ours);
  fmt::print("        fast path without pooled allocation {:8.1f} µs/training\n", unpooled);
  // The loss printed is the last epoch's, taken before its step.
  fmt::print(
      "        check: final loss attograd {:.6f} hand {:.6f}; w[0] attograd {:.6f} hand "
      "{:.6f}\n",
      attograd_loss, hand_loss, attograd_w[0], hand.w[0]);
  if (!torch) return;
  if (torch_failed) {
    fmt::print("        PyTorch: bench/reference/nw.py failed\n");
    return;
  }
  const double torch_us = median(torch_rounds);
  fmt::print(
      "        PyTorch (nw.py) {:8.1f} µs/training {:6.2f} µs/epoch   attograd = {:5.1f} x its "
      "speed; its final loss {:.6f}, w[0] {:.6f}\n",
      torch_us, torch_us / kEpochs, torch_us / ours, torch_loss, torch_w0);
  std::string per_round;
  for (size_t r = 0; r < ours_rounds.size(); ++r) {
    per_round += fmt::format("{}{:.1f} / {:.1f}", r == 0 ? "" : ", ", ours_rounds[r],
                             r < torch_rounds.size() ? torch_rounds[r] : 0.0);
  }
  fmt::print("        rounds, attograd / PyTorch µs per training: {}\n", per_round);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (!argument.empty() && argument[0] != '-') {
      trainings = std::max(1, std::atoi(argument.c_str()));
    } else {
      fmt::print(stderr, "usage: {} [trainings] [--rounds R]\n", argv[0]);
      return 2;
    }
  }
  parallel::set_num_threads(1);
  const bench::PinnedToOneCpu pinned;  // attograd and nw.py on the same core
  fmt::print(
      "bench_nw_regression: 100 epochs of nw_regression::train, seed-0 data (50 queries x "
      "49 keys), {}, {}\n",
      kernels::simd_description(), pinned.describe());
  fmt::print(
      "median of {} trainings, this thread's CPU time, and of {} alternating rounds with "
      "PyTorch; hand loop = the same forward, backward and SGD step as plain scalar loops "
      "(no autograd)\n",
      trainings, rounds);
  run(WeightShape::scalar);
  run(WeightShape::vector);
  return 0;
}
