// tests/models/test_batched_trainer_resume.cpp — the pieces of an exact
// resume of the batched training loop, in memory: Generator::state,
// text::BatchIterator::position and translation::BatchedTrainer stopped
// between two steps, copied into a fresh trainer over a fresh model, and run
// to the end: the same weights and losses as a run never stopped.
// (tests/examples/test_interrupt_cli.cpp does the same through the program.)
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "models/batched_seq2seq/batched_seq2seq.hpp"
#include "models/text/batching.hpp"
#include "nn/optim.hpp"
#include "tensor/random.hpp"
#include "tests/support/tensor_checks.hpp"

namespace test_batched_trainer_resume {

using namespace attograd;
using namespace attograd::batched_seq2seq;
using namespace attograd::translation;

namespace {

std::unique_ptr<BatchedSeq2Seq> small_model(const text::BatchedData& data, uint64_t seed = 7) {
  Generator generator(seed);
  return std::make_unique<BatchedSeq2Seq>(
      BatchedSeq2SeqOptions(data.source_vocabulary.size(), data.target_vocabulary.size())
          .embed_size(8)
          .hidden_size(8)
          .dropout(0.3),
      generator);
}

BatchedTrainingOptions options(int64_t replicas) {
  return BatchedTrainingOptions().epochs(3).batch_size(8).seed(5).replicas(replicas).lr_schedule(
      nn::LRSchedule::step(1, 0.5));
}

std::vector<double> losses_of(const TrainingReport& report) {
  std::vector<double> losses;
  for (const EpochReport& epoch : report.epochs) losses.push_back(epoch.loss);
  return losses;
}

}  // namespace

TEST_CASE("Generator: state() carries the whole stream, and set_state refuses other text",
          "[resume][random]") {
  Generator a(11);
  for (int i = 0; i < 5; ++i) a.next_u64();
  Generator b(0);
  b.set_state(a.state());
  for (int i = 0; i < 100; ++i) CHECK(a.next_u64() == b.next_u64());
  const uint64_t next = Generator(b).next_u64();
  CHECK_THROWS_WITH(b.set_state("1 2 three"), Catch::Matchers::Contains("not the state"));
  CHECK(b.next_u64() == next);  // unchanged
}

TEST_CASE("BatchIterator: resume(position()) continues with the same batches", "[resume][text]") {
  const text::BatchedData data = testing::shipped_pairs(20);
  text::BatchIterator straight(data.source, data.target, 6, 3);
  text::BatchIterator other(data.source, data.target, 6, 99);
  straight.start_epoch();
  straight.next();
  other.resume(straight.position());  // mid-epoch: one batch of four taken
  for (int epoch = 0; epoch < 2; ++epoch) {
    while (auto batch = straight.next()) {
      const auto resumed = other.next();
      REQUIRE(resumed);
      CHECK(resumed->example_indices == batch->example_indices);
    }
    CHECK_FALSE(other.next());
    straight.start_epoch();
    other.start_epoch();
  }
  CHECK_THROWS(other.resume({"not a state", 0}));
  CHECK_THROWS(other.resume({straight.position().generator, 4}));  // an epoch has 4 batches
}

TEST_CASE(
    "BatchedTrainer: stopped at any step and restored into a fresh trainer, it ends as "
    "an uninterrupted run",
    "[resume][batched]") {
  const text::BatchedData data = testing::shipped_pairs(32);  // 4 steps per epoch
  for (const int64_t replicas : {1, 2}) {
    const auto reference = small_model(data);
    const TrainingReport whole = train(*reference, data, options(replicas));
    for (const int stop_after : {1, 4, 6, 11}) {
      DYNAMIC_SECTION(replicas << " replicas, stopped after step " << stop_after) {
        const auto first = small_model(data);
        BatchedTrainer stopped(*first, data, options(replicas));
        int steps = 0;
        CHECK_FALSE(
            stopped.run({.on_epoch = {}, .stop_requested = [&] { return steps++ == stop_after; }}));
        // A fresh model and trainer (other initial weights), given the saved state.
        const auto second = small_model(data, 123);
        BatchedTrainer resumed(*second, data, options(replicas));
        const std::vector<Tensor> saved = first->parameters();
        std::vector<Tensor> fresh = second->parameters();
        for (size_t i = 0; i < saved.size(); ++i) fresh[i].copy_from(saved[i]);
        resumed.optimizer().load_state(stopped.optimizer().state());
        resumed.restore(stopped.position());
        CHECK(resumed.run({}));
        CHECK(losses_of(resumed.report()) == losses_of(whole));
        CHECK(testing::values_of(second->parameters()) ==
              testing::values_of(reference->parameters()));
      }
    }
  }
}

}  // namespace test_batched_trainer_resume
