// tests/models/test_gpt.cpp — the character GPT (models/gpt/gpt.hpp): its
// parameters carry nanoGPT's names and initialisation, the head is the
// token table, attention is causal, the AdamW split decays matrices only,
// and a step through the KV cache gives the logits of recomputing the whole
// context.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "models/gpt/char_data.hpp"
#include "models/gpt/gpt.hpp"
#include "models/gpt/sample.hpp"
#include "nn/optim.hpp"
#include "tensor/factory.hpp"
#include "tensor/random.hpp"

namespace test_gpt {

using namespace attograd;
using gpt::GPT;
using gpt::GPTOptions;

namespace {

double standard_deviation(const Tensor& t) {
  const std::vector<real> values = t.to_vector();
  double mean = 0, squares = 0;
  for (real v : values) mean += double(v);
  mean /= double(values.size());
  for (real v : values) squares += (double(v) - mean) * (double(v) - mean);
  return std::sqrt(squares / double(values.size()));
}

// The largest |a − b| over the entries.
double largest_difference(const Tensor& a, const Tensor& b) {
  const std::vector<real> x = a.to_vector(), y = b.to_vector();
  REQUIRE(x.size() == y.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(double(x[i] - y[i])));
  return worst;
}

}  // namespace

TEST_CASE("GPT: nanoGPT's parameter names, a tied head and its initialisation", "[gpt]") {
  Generator generator(1);
  GPT model(GPTOptions(65).block_size(64).n_layer(4).n_head(4).n_embd(128), generator);
  const auto named = model.named_parameters();
  std::vector<std::string> names;
  for (const auto& [name, p] : named) names.push_back(name);
  CHECK(names.front() == "transformer.wte.weight");
  CHECK(names[1] == "transformer.wpe.weight");
  CHECK(names[2] == "transformer.h.0.ln_1.weight");
  CHECK(names[3] == "transformer.h.0.attn.c_attn.weight");
  CHECK(names[4] == "transformer.h.0.attn.c_proj.weight");
  CHECK(names[5] == "transformer.h.0.ln_2.weight");
  CHECK(names[6] == "transformer.h.0.mlp.c_fc.weight");
  CHECK(names[7] == "transformer.h.0.mlp.c_proj.weight");
  CHECK(names.back() == "transformer.ln_f.weight");
  CHECK(names.size() == 2 + 4 * 6 + 1);  // no lm_head: it is wte
  // nanoGPT's count for this configuration, without the position table:
  // 4 · 12 · 128² + 65 · 128 + 9 · 128 (the norms) = 0.80M.
  CHECK(model.parameter_count() - 64 * 128 == 4 * 12 * 128 * 128 + 65 * 128 + 9 * 128);

  CHECK(standard_deviation(model.parameter("transformer.wte.weight")) ==
        Approx(0.02).epsilon(0.05));
  CHECK(standard_deviation(model.parameter("transformer.h.0.mlp.c_fc.weight")) ==
        Approx(0.02).epsilon(0.05));
  CHECK(standard_deviation(model.parameter("transformer.h.2.attn.c_proj.weight")) ==
        Approx(0.02 / std::sqrt(8.0)).epsilon(0.05));
  CHECK(standard_deviation(model.parameter("transformer.h.3.mlp.c_proj.weight")) ==
        Approx(0.02 / std::sqrt(8.0)).epsilon(0.05));
  CHECK(model.parameter("transformer.ln_f.weight").to_vector() == std::vector<real>(128, 1));

  // AdamW's split: the 2-D tables and matrices decay, the norms' weights do not.
  CHECK(model.decayed_parameters().size() == 2 + 4 * 4);
  CHECK(model.undecayed_parameters().size() == 4 * 2 + 1);

  GPT with_bias(GPTOptions(10).n_layer(1).n_head(2).n_embd(8).bias(true), generator);
  CHECK(with_bias.parameter("transformer.h.0.attn.c_attn.bias").to_vector() ==
        std::vector<real>(24, 0));
  CHECK(with_bias.parameter("transformer.ln_f.bias").numel() == 8);
}

TEST_CASE("GPT: a position's logits depend on it and the positions before it only", "[gpt]") {
  Generator generator(2);
  GPT model(GPTOptions(11).block_size(9).n_layer(2).n_head(2).n_embd(8), generator);
  const NoGradGuard no_grad;
  std::vector<int64_t> ids = {3, 1, 4, 1, 5, 9, 2, 6, 5};
  const Tensor before = model.forward(ids, 1, 9);
  ids[6] = 0;  // change position 6: positions 0..5 keep their logits, 6.. change
  const Tensor after = model.forward(ids, 1, 9);
  CHECK(largest_difference(narrow(before, 1, 0, 6), narrow(after, 1, 0, 6)) == 0);
  CHECK(largest_difference(narrow(before, 1, 6, 3), narrow(after, 1, 6, 3)) > 1e-4);
  // A batch of two rows is each row alone.
  std::vector<int64_t> two = ids;
  two.insert(two.end(), {1, 1, 2, 3, 5, 8, 2, 1, 3});
  const Tensor both = model.forward(two, 2, 9);
  CHECK(largest_difference(narrow(both, 0, 0, 1), after) < 1e-6);
}

TEST_CASE("GPT: each step through the KV cache gives the logits of recomputing the context",
          "[gpt]") {
  Generator generator(3);
  // Head sizes 4 and 9: a SIMD tail in every product.
  for (const int64_t n_embd : {8, 18}) {
    GPT model(GPTOptions(13).block_size(12).n_layer(2).n_head(2).n_embd(n_embd), generator);
    const NoGradGuard no_grad;
    const std::vector<int64_t> ids = {1, 12, 0, 5, 5, 7, 3, 11, 2, 9, 4, 6};
    gpt::KVCache cache = model.new_cache();
    for (int64_t t = 0; t < 12; ++t) {
      const Tensor cached = model.step(ids[size_t(t)], cache);
      const std::vector<int64_t> context(ids.begin(), ids.begin() + t + 1);
      const Tensor whole = model.forward(context, 1, t + 1);
      INFO("n_embd " << n_embd << ", position " << t);
      // The same sums in another order (one query row against a batched
      // product): float rounding apart.
      CHECK(largest_difference(cached, reshape(select(whole, 1, t), {13})) < 1e-5);
    }
    CHECK(cache.length == 12);
    CHECK_THROWS_WITH(model.step(1, cache), Catch::Matchers::Contains("all filled"));
    // prefill reads a prefix in one pass: the logits of the whole forward's
    // last row (the same ops but the head's product of one row, not six:
    // equal sums by design, allowed float rounding on every dispatch), and
    // the steps after it continue.
    gpt::KVCache filled = model.new_cache();
    const std::vector<int64_t> prefix(ids.begin(), ids.begin() + 6);
    const Tensor after_prefix = model.prefill(prefix, filled);
    CHECK(filled.length == 6);
    CHECK(largest_difference(after_prefix,
                             reshape(select(model.forward(prefix, 1, 6), 1, 5), {13})) < 1e-6);
    const Tensor next = model.step(ids[6], filled);
    const std::vector<int64_t> seven(ids.begin(), ids.begin() + 7);
    CHECK(largest_difference(next, reshape(select(model.forward(seven, 1, 7), 1, 6), {13})) < 1e-5);
    CHECK_THROWS_WITH(model.prefill(prefix, filled), Catch::Matchers::Contains("prefill an empty"));
  }
}

TEST_CASE("GPT: from 128 positions attention runs fused, with the composed path's logits",
          "[gpt]") {
  Generator generator(6);
  GPT model(GPTOptions(11).block_size(140).n_layer(1).n_head(2).n_embd(16), generator);
  std::vector<int64_t> ids(130);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t((i * 7 + 3) % 11);
  const NoGradGuard no_grad;
  const Tensor fused = model.forward(ids, 1, 130);
  model.keep_attention_weights(true);  // the maps need the weights: the composed path
  const Tensor composed = model.forward(ids, 1, 130);
  model.keep_attention_weights(false);
  CHECK(model.attention_weights()[0].shape() == Shape{1, 2, 130, 130});
  // The same softmax(q kᵀ/√d) v; the fused kernel's exponentials and sums
  // in another order (docs/attention_kernel.md): float rounding apart.
  CHECK(largest_difference(fused, composed) < 1e-4);
}

TEST_CASE("GPT: bad options and inputs are refused with the option named", "[gpt]") {
  CHECK_THROWS_WITH(GPT(GPTOptions(10).n_head(3).n_embd(8)),
                    Catch::Matchers::Contains("n_head 3 does not divide n_embd 8"));
  CHECK_THROWS_WITH(GPT(GPTOptions(0)), Catch::Matchers::Contains("vocab_size is 0"));
  GPT model(GPTOptions(10).block_size(4).n_layer(1).n_head(1).n_embd(4));
  CHECK_THROWS_WITH(model.forward({1, 2, 3, 4, 5}, 1, 5),
                    Catch::Matchers::Contains("5 positions; the model reads 1 to block_size = 4"));
  gpt::KVCache cache = model.new_cache();
  CHECK_THROWS_WITH(model.step(10, cache), Catch::Matchers::Contains("token 10 is not in [0, 10)"));
}

TEST_CASE("GPT: the loss starts near ln V and a few AdamW steps lower it", "[gpt]") {
  Generator generator(4);
  GPT model(GPTOptions(7).block_size(8).n_layer(1).n_head(2).n_embd(16), generator);
  std::vector<int64_t> ids, targets;  // a repeating pattern, easy to learn
  for (int64_t i = 0; i < 16; ++i) {
    ids.push_back(i % 7);
    targets.push_back((i + 1) % 7);
  }
  const double first = double(model.loss(ids, targets, 2, 8).item());
  CHECK(first == Approx(std::log(7.0)).epsilon(0.05));
  nn::AdamW adamw({{.parameters = model.decayed_parameters(), .lr = {}, .weight_decay = {}},
                   {.parameters = model.undecayed_parameters(), .lr = {}, .weight_decay = 0.0}},
                  nn::AdamOptions(1e-2).betas(0.9, 0.99).weight_decay(0.1));
  double last = first;
  for (int step = 0; step < 30; ++step) {
    adamw.zero_grad();
    const Tensor loss = model.loss(ids, targets, 2, 8);
    backward(loss);
    adamw.step();
    last = double(loss.item());
  }
  CHECK(last < 0.5 * first);
}

TEST_CASE("GPT: sampling with the KV cache emits the characters of recomputing the context",
          "[gpt]") {
  Generator generator(5);
  GPT model(GPTOptions(9).block_size(8).n_layer(2).n_head(2).n_embd(8), generator);
  // 40 characters from a block of 8: the window restarts several times.
  for (const int64_t top_k : {0, 3}) {
    const gpt::SampleOptions cached{
        .tokens = 40, .temperature = 1.0, .top_k = top_k, .seed = 7, .kv_cache = true};
    gpt::SampleOptions recomputed = cached;
    recomputed.kv_cache = false;
    const std::vector<int64_t> a = gpt::sample(model, {1, 2, 3}, cached);
    const std::vector<int64_t> b = gpt::sample(model, {1, 2, 3}, recomputed);
    CHECK(a.size() == 40);
    CHECK(a == b);
    for (int64_t id : a) CHECK((id >= 0 && id < 9));
    if (top_k == 3) {
      // Another seed, other characters: the draws are not constant.
      gpt::SampleOptions other = cached;
      other.seed = 8;
      CHECK(gpt::sample(model, {1, 2, 3}, other) != a);
    }
  }
}

TEST_CASE("GPT: draw keeps the top k and inverts the softmax at the uniform number", "[gpt]") {
  const Tensor logits = from_vector({0.0, 2.0, 1.0, 2.0});
  // Top 2: ids 1 and 3 (ties by id), each 1/2.
  CHECK(gpt::draw(logits, 1.0, 2, 0.49) == 1);
  CHECK(gpt::draw(logits, 1.0, 2, 0.51) == 3);
  // All four at temperature 1: weights 1, e², e, e² of 1 + 2e² + e.
  const double total = 1 + 2 * std::exp(2.0) + std::exp(1.0);
  CHECK(gpt::draw(logits, 1.0, 0, 0.5 / total) == 1);  // the largest first: 1, 3, 2, 0
  CHECK(gpt::draw(logits, 1.0, 0, 0.999999) == 0);
}

TEST_CASE("GPT text: characters, vocabulary, nanoGPT's split and the windows", "[gpt]") {
  const gpt::CharText text = gpt::char_text("été\nà", "test");
  CHECK(text.characters == std::vector<std::string>{"é", "t", "é", "\n", "à"});
  const gpt::Vocabulary vocabulary(text.characters);
  CHECK(vocabulary.size() == 4);
  CHECK(vocabulary.decode(vocabulary.encode(text.characters)) == "été\nà");
  CHECK_THROWS_WITH(vocabulary.encode({"é", "x"}),
                    Catch::Matchers::Contains("character 2 'x' is not in the model's vocabulary"));
  std::vector<int64_t> ids(100);
  for (int64_t i = 0; i < 100; ++i) ids[size_t(i)] = i;
  const gpt::Split split = gpt::split_90_10(ids);
  CHECK(split.train.size() == 90);
  CHECK(split.validation.front() == 90);
  CHECK(gpt::window_offsets(10, 4) == std::vector<int64_t>{0, 4});  // 8 + 1 <= 10, 12 > 10
  const gpt::Batch batch = gpt::random_batch(ids, 3, 5, 11);
  REQUIRE(batch.inputs.size() == 15);
  for (size_t i = 0; i < 15; ++i) CHECK(batch.targets[i] == batch.inputs[i] + 1);
  CHECK(gpt::random_batch(ids, 3, 5, 11).inputs == batch.inputs);

  CHECK_THROWS_WITH(gpt::char_text("", "f"), Catch::Matchers::Contains("f is empty"));
  CHECK_THROWS_WITH(gpt::char_text(std::string("ab\0c", 4), "f"),
                    Catch::Matchers::Contains("NUL byte at byte 2"));
  CHECK_THROWS_WITH(gpt::char_text("ab\xff", "f"),
                    Catch::Matchers::Contains("not UTF-8 at byte 2"));
}

}  // namespace test_gpt
