// bench/bench_seq2seq.cpp — how long does one step of the tutorial's
// translator training take, against what this machine can do at all?
//
//   ./build/bench/bench_seq2seq [--iters 1000] [--rounds 3]   (the float library, one core)
//
// One training iteration (Trainer::train_iteration: zero_grad, encoder and
// decoder forward, backward, SGD step) of the
// tutorial's model at its real sizes — V_in = 3544, V_out = 2231 (the shipped
// data's vocabularies), H = 256, L = 10 — on one fixed synthetic pair of 8
// source and 8 target ids (EOS included, the corpus's typical lengths). Twice:
// teacher forced, and fed greedily (each word's argmax over the output layer
// chooses the next input, as in half of the real iterations; the untrained
// model does not stop early, so both run all 8 words).
//
// Both are timed on the fast path (as shipped), on the reference path
// (fast::ReferencePath, autograd/fast/fast.hpp), and with each mechanism of
// fast.hpp off alone, the others on.
//
// It is reported against two references measured in the same process:
//   stream — reading every parameter of the model once (the library's SIMD
//            sum over 3 million floats): a floor on the memory traffic of a
//            step, which must at least read and update the dense parameters;
//   matvec — one plain scalar loop y = W x over the decoder's largest matrix,
//            `out` (V_out × H), the per-word product a naive step repeats.
// Each figure is the median of 15 samples of thread CPU time (not wall time,
// so other processes sharing the core do not inflate it). Ratios, not pass/fail.
//
// When /usr/bin/python3 has torch, it then runs the tutorial's recipe in
// PyTorch (bench/reference/tutorial.py) on the same fixed pair, and the
// recipe itself on the shipped data on both sides (`translate train --iters
// N`), alternately, and prints attograd's speed over PyTorch's.
#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "attograd.hpp"
#include "bench/pytorch.hpp"
#include "bench/recipe_runs.hpp"
#include "bench/timing.hpp"
#include "models/seq2seq/seq2seq.hpp"
#include "models/seq2seq/training.hpp"
#include "tensor/parallel.hpp"

using namespace attograd;
using namespace attograd::seq2seq;

using attograd::bench::thread_seconds;

namespace {

constexpr int kSamples = 15;

// Median seconds of one call of `work`, each sample `calls` calls.
template <typename Work>
double median_seconds(int64_t calls, Work&& work) {
  std::vector<double> samples;
  for (int s = 0; s < kSamples; ++s) {
    const double start = thread_seconds();
    for (int64_t i = 0; i < calls; ++i) work();
    samples.push_back((thread_seconds() - start) / double(calls));
  }
  return bench::median(samples);
}

// The tutorial's recipe in PyTorch (bench/reference/tutorial.py): its fixed
// 8 + 8 pair, teacher forced and greedy, against the figures above; and
// `iterations` iterations of the recipe on the shipped data by both sides
// (`translate train --iters N` and tutorial.py --iters N, the same pairs
// and coins in the same order), alternately, `rounds` times.
void compare_with_pytorch(double step, double greedy_step, int iterations, int rounds) {
  if (!bench::have_pytorch()) {
    fmt::print("\nPyTorch: not run (/usr/bin/python3 has no torch)\n");
    return;
  }
  std::vector<double> ours, theirs, theirs_forced, theirs_greedy;
  const std::string ours_command =
      fmt::format("'{}' train --iters {} --threads 1 --json --out '{}/bench-tutorial'",
                  bench::example_program("translate"), iterations, ATTOGRAD_BINARY_DIR);
  for (int round = 0; round < rounds; ++round) {
    if (const auto run = bench::last_json_line(ours_command)) {
      ours.push_back((*run)["ms_per_iteration"].get<double>());
    }
    if (const auto run =
            bench::run_reference("tutorial.py", fmt::format("--iters {}", iterations))) {
      theirs.push_back((*run)["ms_per_iteration_wall"].get<double>());
      theirs_forced.push_back(
          (*run)["fixed_pair_teacher_forced_ms_per_iteration_cpu"].get<double>());
      theirs_greedy.push_back((*run)["fixed_pair_greedy_ms_per_iteration_cpu"].get<double>());
    }
  }
  if (theirs.empty() || ours.empty()) {
    fmt::print("\nPyTorch comparison failed: `{}` or bench/reference/tutorial.py\n", ours_command);
    return;
  }
  const double forced = bench::median(theirs_forced), greedy = bench::median(theirs_greedy);
  const double our_run = bench::median(ours), their_run = bench::median(theirs);
  fmt::print(
      "\nagainst PyTorch (bench/reference/tutorial.py, one thread; medians of {} alternating "
      "rounds)\n",
      rounds);
  fmt::print("  fixed pair, teacher forced    {:8.3f} ms   attograd = {:5.1f} x its speed\n",
             forced, forced / (1e3 * step));
  fmt::print("  fixed pair, greedy            {:8.3f} ms   attograd = {:5.1f} x its speed\n",
             greedy, greedy / (1e3 * greedy_step));
  fmt::print(
      "  the recipe, {} iterations: attograd {:.3f} ms, PyTorch {:.3f} ms per iteration (wall)"
      "   attograd = {:5.1f} x its speed\n",
      iterations, our_run, their_run, their_run / our_run);
}

}  // namespace

int main(int argc, char** argv) {
  int recipe_iterations = 1000, rounds = 3;
  if (!bench::read_count_flags(argc, argv,
                               {{"--iters", &recipe_iterations}, {"--rounds", &rounds}})) {
    // --help, or anything else: say what is understood, run nothing
    fmt::print(stderr, "usage: {} [--iters 1000] [--rounds 3]\n", argv[0]);
    return 2;
  }
  // One thread, as printed: a product shared with a worker would be timed
  // only in part by this thread's clock.
  parallel::set_num_threads(1);
  const bench::PinnedToOneCpu pinned;  // attograd and tutorial.py on the same core
  const int64_t V_in = 3544, V_out = 2231, H = 256;
  Generator init(1), greedy_init(1);
  Seq2Seq model(Seq2SeqOptions(V_in, V_out).hidden_size(H), init);
  Seq2Seq greedy_model(Seq2SeqOptions(V_in, V_out).hidden_size(H), greedy_init);
  const EncodedPair pair{{14, 215, 3, 98, 1203, 7, 5, kEos}, {22, 9, 301, 47, 1500, 6, 3, kEos}};
  Trainer trainer(model, {pair}, TrainingOptions().teacher_forcing(1.0));
  Trainer greedy_trainer(greedy_model, {pair}, TrainingOptions().teacher_forcing(0.0));
  model.train();
  greedy_model.train();

  // References: stream the parameters once; one scalar matvec over `out`.
  const std::vector<Tensor> parameters = model.parameters();
  volatile real sink = 0;
  const double stream = median_seconds(20, [&] {
    const NoGradGuard no_grad;
    real total = 0;
    for (const Tensor& p : parameters) total += sum(p).item();  // the library's SIMD sum
    sink = total;
  });
  const Tensor& out = std::dynamic_pointer_cast<AttnDecoderRNN>(model.decoder)->out->weight;
  std::vector<real> x(H, real(0.5)), y(V_out);
  const double matvec = median_seconds(50, [&] {
    const real* w = out.data();
    for (int64_t j = 0; j < V_out; ++j) {
      real total = 0;
      for (int64_t k = 0; k < H; ++k) total += w[j * H + k] * x[k];
      y[j] = total;
    }
    sink = y[0];
  });

  // One iteration's time on each trainer, teacher forced and greedy: five
  // warm-up iterations, then the median of 10 samples of 10, each in turn.
  int64_t iteration = 0, greedy_iteration = 0;
  auto time_iterations = [&] {
    for (int i = 0; i < 5; ++i) trainer.train_iteration(++iteration);
    const double forced = median_seconds(10, [&] { trainer.train_iteration(++iteration); });
    for (int i = 0; i < 5; ++i) greedy_trainer.train_iteration(++greedy_iteration);
    const double greedy =
        median_seconds(10, [&] { greedy_trainer.train_iteration(++greedy_iteration); });
    return std::pair{forced, greedy};
  };
  const auto [step, greedy_step] = time_iterations();
  double reference_step = 0, reference_greedy_step = 0;
  {
    const fast::ReferencePath reference;
    std::tie(reference_step, reference_greedy_step) = time_iterations();
  }

  // Each mechanism of autograd/fast/fast.hpp off alone, the rest on: what
  // each saves here (docs/fast_paths.md quotes these lines).
  struct Mechanism {
    const char* name;
    bool fast::Switches::*field;
  };
  // The first row, nothing off, is the fast path timed again after the
  // reference path: the figure the others compare with.
  const Mechanism mechanisms[] = {
      {"", nullptr},
      {"deferred gradients", &fast::Switches::deferred_gradients},
      {"forward values", &fast::Switches::reuse_forward_values},
      {"fused ops", &fast::Switches::fused_ops},
      {"pooling", &fast::Switches::pooling},
      {"sentence products", &fast::Switches::sentence_products},
      {"gradient stealing", &fast::Switches::gradient_stealing},
  };
  std::vector<std::pair<double, double>> without;
  for (const Mechanism& mechanism : mechanisms) {
    fast::Switches switches = fast::Switches::current();
    if (mechanism.field != nullptr) switches.*mechanism.field = false;
    const fast::UseSwitches one_off(switches);
    without.push_back(time_iterations());
  }

  fmt::print(
      "seq2seq training iteration (H = {}, V_in = {}, V_out = {}, {} parameters, 8 + 8 words, "
      "one thread, {}, {})\n",
      H, V_in, V_out, model.parameter_count(), kernels::simd_description(), pinned.describe());
  fmt::print("  one iteration, teacher forced {:8.3f} ms\n", 1e3 * step);
  fmt::print("  one iteration, greedy         {:8.3f} ms\n", 1e3 * greedy_step);
  fmt::print("  reference path, teacher forced{:8.3f} ms   fast path = {:4.2f} x its speed\n",
             1e3 * reference_step, reference_step / step);
  fmt::print("  reference path, greedy        {:8.3f} ms   fast path = {:4.2f} x its speed\n",
             1e3 * reference_greedy_step, reference_greedy_step / greedy_step);
  const auto [again, greedy_again] = without[0];
  fmt::print("  fast path again                {:8.3f} ms teacher forced, {:8.3f} ms greedy\n",
             1e3 * again, 1e3 * greedy_again);
  for (size_t m = 1; m < without.size(); ++m) {
    fmt::print(
        "  without {:<22}{:8.3f} ms teacher forced ({:+5.1f} %), {:8.3f} ms greedy ({:+5.1f} %)\n",
        mechanisms[m].name, 1e3 * without[m].first, 100 * (without[m].first / again - 1),
        1e3 * without[m].second, 100 * (without[m].second / greedy_again - 1));
  }
  fmt::print("  stream all parameters         {:8.3f} ms   teacher forced = {:4.1f} x this\n",
             1e3 * stream, step / stream);
  fmt::print("  scalar matvec over out        {:8.3f} ms   teacher forced = {:4.1f} x this\n",
             1e3 * matvec, step / matvec);
  compare_with_pytorch(step, greedy_step, recipe_iterations, rounds);
  return 0;
}
