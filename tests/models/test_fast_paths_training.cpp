// tests/models/test_fast_paths_training.cpp — the same training on the fast
// path and on the reference path (autograd/fast/fast.hpp), compared.
//
// Each recipe runs twice from the same seed: once as shipped (every speed
// mechanism on) and once under fast::ReferencePath (dense gradients formed by
// every op, no reuse of forward values, no pooled allocation). Where the two
// make the same sums in the same order the results are equal bit for bit;
// where a weight's gradient over T steps is one product of T·B rows on the
// fast path and T products added up on the reference path, the sums run in
// another order, and the runs agree to a tolerance that float rounding
// explains (stated at each check; in the double build it is far tighter).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/fast/fast.hpp"
#include "models/batched_seq2seq/batched_seq2seq.hpp"
#include "models/nw_regression/nw_regression.hpp"
#include "models/seq2seq/corpus.hpp"
#include "models/seq2seq/seq2seq.hpp"
#include "models/seq2seq/training.hpp"
#include "models/text/batching.hpp"
#include "models/text/pairs.hpp"
#include "tests/support/tensor_checks.hpp"

namespace test_fast_paths_training {

using namespace attograd;
using testing::max_difference;

namespace {

constexpr bool kDouble = std::is_same_v<real, double>;
// The sanitizers make a training step about 30 times slower, and qemu-user
// emulating ARM64 (scripts/test_aarch64.sh) about 40 times (the 300
// iterations took 376 s there): those builds run the long tutorial
// comparison for 20 iterations, enough to take every path once, and the
// native builds check the rounding over all 300.
#if defined(__SANITIZE_ADDRESS__) || defined(ATTOGRAD_TEST_EMULATOR)
constexpr int64_t kTutorialIterations = 20;
#else
constexpr int64_t kTutorialIterations = 300;
#endif

// The largest |a − b| over two lists of parameters, and over two loss lists.
struct TutorialRun {
  std::vector<double> losses;  // per iteration, loss per target word
  std::vector<Tensor> parameters;
};

// The fast path as shipped, the same without sentence products (every other
// mechanism on), or the reference path.
enum class Path { fast, fast_without_sentence_products, reference };

// The tutorial recipe (H 256, SGD lr 0.01, teacher forcing 0.5, dropout 0.1)
// for `iterations` iterations on the shipped data, on `path`.
TutorialRun run_tutorial(const seq2seq::Corpus& corpus, seq2seq::DecoderKind decoder,
                         int64_t iterations, Path path) {
  std::optional<fast::ReferencePath> reference;
  if (path == Path::reference) reference.emplace();
  struct SentenceProducts {  // restores the switch however the run ends
    explicit SentenceProducts(bool on) { fast::set_sentence_products(on); }
    ~SentenceProducts() { fast::set_sentence_products(true); }
  } const sentence_products(path == Path::fast);
  Generator generator(5);
  seq2seq::Seq2Seq model(
      seq2seq::Seq2SeqOptions(corpus.source_vocabulary.size(), corpus.target_vocabulary.size())
          .decoder(decoder),
      generator);
  seq2seq::Trainer trainer(
      model,
      seq2seq::encode_pairs(corpus.split.train, corpus.source_vocabulary, corpus.target_vocabulary),
      seq2seq::TrainingOptions().iterations(iterations).seed(3));
  TutorialRun run;
  for (int64_t i = 1; i <= iterations; ++i) run.losses.push_back(trainer.train_iteration(i));
  run.parameters = model.parameters();
  return run;
}

}  // namespace

TEST_CASE(
    "fast paths: 300 tutorial iterations (20 under the sanitizers or an emulator) equal the "
    "reference path's, both decoders",
    "[fast_paths][seq2seq]") {
  const seq2seq::Corpus corpus = seq2seq::load_corpus(seq2seq::CorpusOptions().path(
      std::filesystem::path(ATTOGRAD_SOURCE_DIR) / "data" / "eng-fra.tsv"));
  for (const auto decoder : {seq2seq::DecoderKind::location, seq2seq::DecoderKind::bahdanau}) {
    INFO("decoder " << seq2seq::to_string(decoder));
    const TutorialRun fast_run = run_tutorial(corpus, decoder, kTutorialIterations, Path::fast);
    const TutorialRun reference_run =
        run_tutorial(corpus, decoder, kTutorialIterations, Path::reference);
    // The weights' gradients are sums over a sentence's steps in another
    // order (one product over the steps' rows, not one per step), and sparse
    // table rows are applied one by one rather than through a dense matrix:
    // float rounding, compounded over 300 SGD steps of a recurrent model.
    const double tolerance = kDouble ? 1e-12 : 1e-5;  // measured: 1.8e-15 and 1.1e-6
    const double loss_difference = max_difference(fast_run.losses, reference_run.losses);
    const double parameter_difference =
        max_difference(fast_run.parameters, reference_run.parameters);
    INFO("largest loss difference " << loss_difference << ", parameter difference "
                                    << parameter_difference);
    CHECK(loss_difference <= tolerance);
    CHECK(parameter_difference <= tolerance);
    // The first forward: with sentence products on, a teacher-forced step's
    // layer is two sums (the known word's columns for the whole sentence,
    // then the step's own) where the reference makes one, so it agrees to
    // rounding; with them off, every other mechanism computes the
    // reference's sums, so it is the same bits on every instruction set —
    // which also shows that both runs saw the same pairs.
    const double first_difference =
        std::abs(fast_run.losses.front() - reference_run.losses.front());
    CHECK(first_difference <= (kDouble ? 1e-13 : 1e-5) * std::abs(reference_run.losses.front()));
    const TutorialRun whole_layers =
        run_tutorial(corpus, decoder, 1, Path::fast_without_sentence_products);
    CHECK(whole_layers.losses.front() == reference_run.losses.front());
  }
}

TEST_CASE("fast paths: 20 batched-recipe steps equal the reference path's",
          "[fast_paths][batched_seq2seq]") {
  const text::BatchedData data = testing::shipped_pairs(320);
  auto run = [&](bool reference_path) {
    std::optional<fast::ReferencePath> reference;
    if (reference_path) reference.emplace();
    Generator generator(4);
    batched_seq2seq::BatchedSeq2Seq model(
        batched_seq2seq::BatchedSeq2SeqOptions(data.source_vocabulary.size(),
                                               data.target_vocabulary.size()),
        generator);  // d2l's sizes: embed 32, hidden 32, two layers, dropout 0.1
    // One epoch of 320 pairs in batches of 16: 20 Adam steps.
    const translation::TrainingReport report = translation::train(
        model, data, translation::BatchedTrainingOptions().epochs(1).batch_size(16).seed(2));
    return std::make_pair(report.final_loss, model.parameters());
  };
  const auto [fast_loss, fast_parameters] = run(false);
  const auto [reference_loss, reference_parameters] = run(true);
  // The GRUs' W_hh gradients are sums over the steps in another order.
  // Adam's step m̂/(√v̂ + ε) does not shrink with the gradient: where an entry
  // is near zero its rounding difference can change that step by a good part
  // of lr = 0.005. Measured here: 4.2e-5 in float, 1.2e-14 in double.
  const double tolerance = kDouble ? 1e-12 : 2e-4;
  const double parameter_difference = max_difference(fast_parameters, reference_parameters);
  INFO("final loss " << fast_loss << " vs " << reference_loss << ", largest parameter difference "
                     << parameter_difference);
  CHECK(std::abs(fast_loss - reference_loss) <= tolerance);
  CHECK(parameter_difference <= tolerance);
}

TEST_CASE("fast paths: 100 NW epochs equal the reference path's, scalar and vector w",
          "[fast_paths][nw_regression]") {
  for (const int64_t weight_count : {1, 49}) {
    INFO("w of " << weight_count << " entries");
    auto run = [weight_count](bool reference_path) {
      std::optional<fast::ReferencePath> reference;
      if (reference_path) reference.emplace();
      Generator generator(0);
      const nw_regression::Dataset data = nw_regression::make_dataset(generator);
      nw_regression::NWKernelRegression model(
          nw_regression::NWKernelRegressionOptions(weight_count), generator);
      const nw_regression::TrainResult result = nw_regression::train(
          model, data.x_train, data.y_train, nw_regression::TrainOptions().epochs(100));
      return std::make_pair(result.losses, std::vector<Tensor>{model.w.clone_data()});
    };
    const auto fast_run = run(false);
    const auto reference_run = run(true);
    REQUIRE(fast_run.first.size() == 100);
    // The fused attention_pool (autograd/fast/fused.hpp) sums the pooled
    // values and the scores' gradient in another order than softmax and bmm:
    // float rounding over 100 SGD steps. The losses are about 14-20; measured
    // here: losses 5.7e-6 and 9.2e-5 apart, w 9.5e-7 and 3.8e-6 (scalar,
    // vector w; float).
    const double loss_tolerance = kDouble ? 1e-10 : 5e-4;
    const double w_tolerance = kDouble ? 1e-12 : 2e-5;
    const double loss_difference = max_difference(fast_run.first, reference_run.first);
    const double w_difference = max_difference(fast_run.second, reference_run.second);
    INFO("largest loss difference " << loss_difference << ", w difference " << w_difference);
    CHECK(loss_difference <= loss_tolerance);
    CHECK(w_difference <= w_tolerance);
    CHECK(fast_run.first.front() == Approx(reference_run.first.front()).epsilon(1e-6));
    // Both trained: the loss fell by a good part.
    CHECK(fast_run.first.back() < 0.8 * fast_run.first.front());
  }
}

}  // namespace test_fast_paths_training
