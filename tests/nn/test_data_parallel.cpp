// tests/nn/test_data_parallel.cpp — one step's batch split over copies of a
// model (nn::DataParallel): the summed gradient equals the whole batch's,
// bit for bit the same on one thread or two; the copies take the model's
// values, training mode, fast-path switches and grad mode; a step that throws
// adds nothing; the parts of a batch; and copies that do not match the model.
#include <atomic>
#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#include "attograd.hpp"
#include "autograd/fast/fast.hpp"
#include "nn/data_parallel.hpp"
#include "tensor/parallel.hpp"
#include "tests/support/tensor_checks.hpp"
#include "tests/support/thread_settings.hpp"

namespace test_data_parallel {

using namespace attograd;
using Catch::Matchers::Contains;
using testing::max_difference;

namespace {

// A table read at a few ids (its gradient kept as rows on the fast path) and
// a Linear (its gradient kept as the factors dyᵀx): both deferred forms.
struct Net : nn::Module {
  std::shared_ptr<nn::Embedding> embed;
  std::shared_ptr<nn::Linear> fc;

  Net(int64_t width, Generator& generator) : nn::Module("Net") {
    embed = register_module(
        "embed", std::make_shared<nn::Embedding>(nn::EmbeddingOptions(10, 4), generator));
    fc =
        register_module("fc", std::make_shared<nn::Linear>(nn::LinearOptions(4, width), generator));
  }

  // Σ over the ids of Σ tanh(fc(embed(id)))²: a sum over the batch's rows.
  Tensor loss(const std::vector<int64_t>& ids) {
    const Tensor y = tanh(fc->forward(embed->forward(ids)));
    return sum(y * y);
  }
};

const std::vector<int64_t> kIds = {3, 1, 4, 1, 5, 9, 2, 6, 5};

std::vector<Tensor> gradients(const nn::Module& model) {
  std::vector<Tensor> result;
  for (const Tensor& parameter : model.parameters()) result.push_back(grad(parameter).clone_data());
  return result;
}

// The model's gradients after `replicas` replicas (on `threads` threads) each
// took their part of kIds; the model starts from seed 1, the copies from others.
std::vector<Tensor> replicated_gradients(int64_t replicas, int threads) {
  const testing::ThreadSettings settings(threads);
  Generator generator(1);
  Net model(3, generator);
  std::vector<std::shared_ptr<nn::Module>> copies;
  Generator other(99);
  for (int64_t r = 1; r < replicas; ++r) copies.push_back(std::make_shared<Net>(3, other));
  nn::DataParallel parallel(model, copies);
  model.zero_grad();
  parallel.run([&](int64_t replica, nn::Module& module) {
    const auto [begin, end] =
        nn::DataParallel::part(static_cast<int64_t>(kIds.size()), replica, replicas);
    const std::vector<int64_t> part(kIds.begin() + begin, kIds.begin() + end);
    backward(static_cast<Net&>(module).loss(part));
  });
  return gradients(model);
}

}  // namespace

TEST_CASE("DataParallel: the replicas' summed gradient is the whole batch's", "[data_parallel]") {
  Generator generator(1);
  Net whole(3, generator);
  whole.zero_grad();
  backward(whole.loss(kIds));
  const std::vector<Tensor> expected = gradients(whole);

  // The same sums in another order: each part's, then part 0 + part 1 + ….
  const double tolerance = std::is_same_v<real, double> ? 1e-12 : 2e-6;
  for (const int64_t replicas : {1, 2, 3, 9}) {
    INFO(replicas << " replicas");
    const std::vector<Tensor> one_thread = replicated_gradients(replicas, 1);
    const std::vector<Tensor> two_threads = replicated_gradients(replicas, 2);
    REQUIRE(one_thread.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      INFO("parameter " << i);
      CHECK(max_difference(one_thread[i], expected[i]) <= tolerance);
      // Which replica runs on which thread changes no sum.
      CHECK(max_difference(two_threads[i], one_thread[i]) == 0);
    }
  }
  // One replica is the model alone: the very same sums.
  const std::vector<Tensor> alone = replicated_gradients(1, 1);
  for (size_t i = 0; i < expected.size(); ++i) CHECK(max_difference(alone[i], expected[i]) == 0);
}

TEST_CASE("DataParallel: a copy steps with the model's values, modes and switches",
          "[data_parallel]") {
  const testing::ThreadSettings two_threads(2);
  Generator generator(1), other(2);
  Net model(3, generator);
  auto copy = std::make_shared<Net>(3, other);
  nn::DataParallel parallel(model, {copy});
  CHECK(parallel.replicas() == 2);

  struct Seen {
    nn::Module* module = nullptr;
    std::thread::id thread;
    bool training = true;
    fast::Switches switches;
    bool recording = true;
    std::vector<real> weight;  // fc.weight as the step saw it
  };
  // The pool lets the caller run a chunk a late worker has not claimed, and
  // a worker already awake may claim the first chunk (tensor/parallel.hpp).
  // So that the two replicas run on two threads here, each waits until the
  // other has started, and each run starts a new pool, which has not learnt
  // to run jobs alone.
  auto run = [&](bool reference) {
    std::vector<Seen> seen(2);
    std::optional<fast::ReferencePath> path;
    if (reference) path.emplace();
    parallel::set_num_threads(1);
    parallel::set_num_threads(2);
    std::atomic<int> started{0};
    parallel.run([&](int64_t replica, nn::Module& module) {
      started.fetch_add(1);
      while (started.load() < 2) std::this_thread::yield();
      Seen& s = seen[static_cast<size_t>(replica)];
      s.module = &module;
      s.thread = std::this_thread::get_id();
      s.training = module.is_training();
      s.switches = fast::Switches::current();
      s.recording = grad_enabled();
      // No Catch assertion here: Catch is not thread-safe, and this runs on the worker.
      s.weight = static_cast<Net&>(module).fc->weight.to_vector();
    });
    return seen;
  };

  {
    const NoGradGuard no_grad;
    model.fc->weight.copy_from(full({3, 4}, 0.25));
  }
  model.eval();
  const std::vector<Seen> fast_run = run(false);
  CHECK(fast_run[0].module == &model);
  CHECK(fast_run[1].module == copy.get());
  CHECK(fast_run[0].thread != fast_run[1].thread);            // two threads, one replica each
  CHECK(fast_run[1].weight == model.fc->weight.to_vector());  // copied in before the step
  CHECK_FALSE(fast_run[1].training);                          // and its evaluation mode
  CHECK(fast_run[1].switches.deferred_gradients);
  CHECK(fast_run[1].switches.pooling);
  CHECK(fast_run[1].switches.sentence_products);
  CHECK(fast_run[1].recording);

  model.train();
  const std::vector<Seen> reference_run = run(true);
  CHECK(reference_run[1].training);
  CHECK_FALSE(reference_run[1].switches.deferred_gradients);
  CHECK_FALSE(reference_run[1].switches.reuse_forward_values);
  CHECK_FALSE(reference_run[1].switches.fused_ops);
  CHECK_FALSE(reference_run[1].switches.pooling);
  CHECK_FALSE(reference_run[1].switches.sentence_products);
  CHECK(fast::Switches::current().deferred_gradients);  // the caller's own are restored

  {
    const NoGradGuard no_grad;
    const std::vector<Seen> quiet = run(false);
    CHECK_FALSE(quiet[1].recording);
  }
}

TEST_CASE("DataParallel: a step that throws is rethrown, and no copy's gradient is added",
          "[data_parallel]") {
  const testing::ThreadSettings two_threads(2);
  Generator generator(1), other(2);
  Net model(3, generator);
  nn::DataParallel parallel(model, {std::make_shared<Net>(3, other)});
  model.zero_grad();
  CHECK_THROWS_WITH(parallel.run([&](int64_t replica, nn::Module& module) {
    backward(static_cast<Net&>(module).loss({1, 2}));
    if (replica == 1) throw std::runtime_error("replica 1 failed");
  }),
                    Contains("replica 1 failed"));
  // The model keeps the gradient of its own step only.
  const std::vector<Tensor> kept = gradients(model);
  model.zero_grad();
  backward(model.loss({1, 2}));
  const std::vector<Tensor> own = gradients(model);
  for (size_t i = 0; i < own.size(); ++i) CHECK(max_difference(kept[i], own[i]) == 0);
}

TEST_CASE("DataParallel: the parts of a batch", "[data_parallel]") {
  using Part = std::pair<int64_t, int64_t>;
  CHECK(nn::DataParallel::part(10, 0, 3) == Part{0, 3});
  CHECK(nn::DataParallel::part(10, 1, 3) == Part{3, 6});
  CHECK(nn::DataParallel::part(10, 2, 3) == Part{6, 10});
  CHECK(nn::DataParallel::part(1, 0, 2) == Part{0, 0});  // fewer rows than replicas
  CHECK(nn::DataParallel::part(1, 1, 2) == Part{0, 1});
  CHECK(nn::DataParallel::part(7, 0, 1) == Part{0, 7});
  CHECK_THROWS_WITH(nn::DataParallel::part(10, 3, 3), Contains("replica 3 of 3"));
}

TEST_CASE("DataParallel: copies that do not match the model are refused", "[data_parallel]") {
  Generator generator(1);
  Net model(3, generator);
  CHECK_THROWS_WITH(nn::DataParallel(model, {std::make_shared<Net>(5, generator)}),
                    Contains("copy 1's parameter 1 is 'fc.weight' (5,4), the model's is "
                             "'fc.weight' (3,4)"));
  CHECK_THROWS_WITH(nn::DataParallel(model, {nullptr}), Contains("copy 1 is null"));
  std::shared_ptr<nn::Module> itself(&model, [](nn::Module*) {});
  CHECK_THROWS_WITH(nn::DataParallel(model, {itself}), Contains("copy 1 is the model itself"));
  struct Other : nn::Module {
    Other() : nn::Module("Other") { register_parameter("w", zeros({2})); }
  };
  CHECK_THROWS_WITH(nn::DataParallel(model, {std::make_shared<Other>()}),
                    Contains("copy 1 has 1 parameters and the model 3"));
}

}  // namespace test_data_parallel
