// models/gpt/gpt.cpp — see gpt.hpp.
#include "models/gpt/gpt.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "nn/init.hpp"
#include "nn/loss.hpp"
#include "tensor/error.hpp"

namespace attograd::gpt {

namespace {

constexpr double kInitStd = 0.02;
// From this many positions on, forward and backward are faster through the
// fused causal_attention kernel than composed (bmm, masked_softmax, bmm):
// bench/bench_attention measured the crossover between 64 (composed 1.2-1.3x
// faster there) and 128 (docs/attention_kernel.md).
constexpr int64_t kFusedAttentionFrom = 128;
constexpr int64_t kMaxSize = 1 << 16;  // any one size: vocabulary, block, width

std::shared_ptr<nn::Linear> normal_linear(int64_t in, int64_t out, bool bias, double stddev,
                                          Generator& generator) {
  auto layer = std::make_shared<nn::Linear>(nn::LinearOptions(in, out).bias(bias), generator);
  nn::normal_(layer->weight, 0.0, stddev, generator);
  if (layer->bias.defined()) nn::zeros_(layer->bias);
  return layer;
}

std::shared_ptr<nn::LayerNorm> layer_norm(const GPTOptions& options) {
  return std::make_shared<nn::LayerNorm>(
      nn::LayerNormOptions({options.n_embd()}).bias(options.bias()));
}

// The causal prefix of every query row of (B·h, T, T) scores: row i sees i + 1 keys.
std::vector<int64_t> causal_lengths(int64_t rows, int64_t positions) {
  std::vector<int64_t> lengths(static_cast<size_t>(rows * positions));
  for (size_t i = 0; i < lengths.size(); ++i) {
    lengths[i] = static_cast<int64_t>(i) % positions + 1;
  }
  return lengths;
}

}  // namespace

void check_options(const GPTOptions& options) {
  const auto in_range = [](const char* name, int64_t value, int64_t low, int64_t high) {
    check(value >= low && value <= high,
          "GPT: {} is {}; it must be in [{}, {}] (a smaller value fits this machine)", name, value,
          low, high);
  };
  in_range("vocab_size", options.vocab_size(), 1, kMaxSize);
  in_range("block_size", options.block_size(), 1, 4096);
  in_range("n_layer", options.n_layer(), 1, 64);
  in_range("n_head", options.n_head(), 1, 64);
  in_range("n_embd", options.n_embd(), 1, 8192);
  check(options.n_embd() % options.n_head() == 0,
        "GPT: n_head {} does not divide n_embd {}; choose n_embd a multiple of n_head",
        options.n_head(), options.n_embd());
}

// ---- CausalSelfAttention ---------------------------------------------------------------

CausalSelfAttention::CausalSelfAttention(const GPTOptions& options, Generator& generator)
    : nn::Module("CausalSelfAttention"), n_head_(options.n_head()), n_embd_(options.n_embd()) {
  const int64_t d = options.n_embd();
  c_attn = register_module("c_attn", normal_linear(d, 3 * d, options.bias(), kInitStd, generator));
  c_proj = register_module(
      "c_proj", normal_linear(d, d, options.bias(),
                              kInitStd / std::sqrt(2.0 * double(options.n_layer())), generator));
}

// x (B,T,d) → q, k, v (B·h, T, d/h) each, by one c_attn and three views;
//   y = softmax(q kᵀ / √(d/h) + causal mask) v      (B·h, T, d/h)
//   out = c_proj(heads side by side)                (B,T,d)
Tensor CausalSelfAttention::forward(const Tensor& x, LayerCache* fill) {
  check(x.dim() == 3 && x.size(2) == n_embd_,
        "CausalSelfAttention: input of shape {}; expected (B, T, {})", x.shape(), n_embd_);
  const int64_t B = x.size(0), T = x.size(1), h = n_head_, dh = n_embd_ / n_head_;
  const Tensor qkv = c_attn->forward(x);  // (B,T,3d)
  const auto heads = [&](int64_t part) {  // (B,T,d) slice → (B·h,T,dh)
    const Tensor slice = narrow(qkv, 2, part * n_embd_, n_embd_);
    return reshape(permute(reshape(slice, {B, T, h, dh}), {0, 2, 1, 3}), {B * h, T, dh});
  };
  const Tensor q = heads(0), k = heads(1), v = heads(2);
  if (fill != nullptr) {  // (h,T,dh) into the cache's (h,capacity,dh)
    const int64_t capacity = fill->keys.size(1);
    check(B == 1 && T <= capacity,
          "CausalSelfAttention: cannot fill a cache of {} positions with a batch of {} x {}",
          capacity, B, T);
    const Tensor keys = k.contiguous_data(), values = v.contiguous_data();
    for (int64_t head = 0; head < h; ++head) {
      std::copy_n(keys.data() + head * T * dh, T * dh, fill->keys.data() + head * capacity * dh);
      std::copy_n(values.data() + head * T * dh, T * dh,
                  fill->values.data() + head * capacity * dh);
    }
  }
  Tensor y;  // (B·h,T,dh)
  if (T >= kFusedAttentionFrom && !keep_weights_) {
    y = causal_attention(q, k, v);  // no (T,T) weights stored
  } else {
    const Tensor scores = bmm(q, transpose(k, 1, 2)) * real(1.0 / std::sqrt(double(dh)));
    const Tensor weights = masked_softmax(scores, causal_lengths(B * h, T));  // (B·h,T,T)
    if (keep_weights_) attention_weights_ = reshape(detach(weights), {B, h, T, T});
    y = bmm(weights, v);
  }
  return c_proj->forward(
      reshape(permute(reshape(y, {B, h, T, dh}), {0, 2, 1, 3}), {B, T, n_embd_}));
}

// The same for one new position at `length`: its key and value go into the
// cache, its query attends to the cache's length + 1 keys.
Tensor CausalSelfAttention::forward_cached(const Tensor& x, LayerCache& cache, int64_t length) {
  const int64_t h = n_head_, dh = n_embd_ / n_head_;
  const int64_t capacity = cache.keys.size(1);
  check(length < capacity, "CausalSelfAttention: the cache holds {} positions, all filled",
        capacity);
  const Tensor qkv = c_attn->forward(x).contiguous_data();  // (1,3d)
  const real* row = qkv.data();
  for (int64_t head = 0; head < h; ++head) {
    std::copy_n(row + n_embd_ + head * dh, dh, cache.keys.data() + (head * capacity + length) * dh);
    std::copy_n(row + 2 * n_embd_ + head * dh, dh,
                cache.values.data() + (head * capacity + length) * dh);
  }
  const Tensor q = reshape(narrow(qkv, 1, 0, n_embd_), {h, 1, dh});
  const Tensor keys = narrow(cache.keys, 1, 0, length + 1);  // (h, t, dh)
  const Tensor values = narrow(cache.values, 1, 0, length + 1);
  const Tensor scores = bmm(q, transpose(keys, 1, 2)) * real(1.0 / std::sqrt(double(dh)));
  const Tensor y = bmm(softmax(scores, 2), values);  // (h,1,dh)
  return c_proj->forward(reshape(y, {1, n_embd_}));
}

// ---- MLP, Block, Body ---------------------------------------------------------------------

MLP::MLP(const GPTOptions& options, Generator& generator) : nn::Module("MLP") {
  const int64_t d = options.n_embd();
  c_fc = register_module("c_fc", normal_linear(d, 4 * d, options.bias(), kInitStd, generator));
  c_proj = register_module(
      "c_proj", normal_linear(4 * d, d, options.bias(),
                              kInitStd / std::sqrt(2.0 * double(options.n_layer())), generator));
}

Tensor MLP::forward(const Tensor& x) { return c_proj->forward(gelu(c_fc->forward(x))); }

Block::Block(const GPTOptions& options, Generator& generator) : nn::Module("Block") {
  ln_1 = register_module("ln_1", layer_norm(options));
  attn = register_module("attn", std::make_shared<CausalSelfAttention>(options, generator));
  ln_2 = register_module("ln_2", layer_norm(options));
  mlp = register_module("mlp", std::make_shared<MLP>(options, generator));
}

Tensor Block::forward(const Tensor& x, LayerCache* fill) {
  const Tensor after_attention = x + attn->forward(ln_1->forward(x), fill);
  return after_attention + mlp->forward(ln_2->forward(after_attention));
}

Tensor Block::forward_cached(const Tensor& x, LayerCache& cache, int64_t length) {
  const Tensor after_attention = x + attn->forward_cached(ln_1->forward(x), cache, length);
  return after_attention + mlp->forward(ln_2->forward(after_attention));
}

namespace {

// A list of blocks named "0", "1", …: nanoGPT's ModuleList `h`.
class Blocks : public nn::Module {
 public:
  Blocks(const GPTOptions& options, Generator& generator,
         std::vector<std::shared_ptr<Block>>& blocks)
      : nn::Module("ModuleList") {
    for (int64_t i = 0; i < options.n_layer(); ++i) {
      blocks.push_back(
          register_module(std::to_string(i), std::make_shared<Block>(options, generator)));
    }
  }
};

std::shared_ptr<nn::Embedding> normal_embedding(int64_t rows, int64_t width, Generator& generator) {
  auto table = std::make_shared<nn::Embedding>(nn::EmbeddingOptions(rows, width), generator);
  nn::normal_(table->weight, 0.0, kInitStd, generator);
  return table;
}

}  // namespace

Body::Body(const GPTOptions& options, Generator& generator) : nn::Module("Body") {
  wte = register_module("wte", normal_embedding(options.vocab_size(), options.n_embd(), generator));
  wpe = register_module("wpe", normal_embedding(options.block_size(), options.n_embd(), generator));
  register_module("h", std::make_shared<Blocks>(options, generator, h));
  ln_f = register_module("ln_f", layer_norm(options));
}

// ---- GPT ------------------------------------------------------------------------------------

GPT::GPT(const GPTOptions& options, Generator& generator) : nn::Module("GPT"), options_(options) {
  check_options(options);
  transformer = register_module("transformer", std::make_shared<Body>(options, generator));
}

// ids (B,T) at positions first … first + T − 1 -> wte[ids] + wpe[positions]  (B,T,d)
Tensor GPT::embed(const std::vector<int64_t>& ids, int64_t batch, int64_t positions,
                  int64_t first) {
  std::vector<int64_t> where(static_cast<size_t>(positions));
  for (int64_t t = 0; t < positions; ++t) where[size_t(t)] = first + t;
  return transformer->wte->forward(ids, {batch, positions}) +
         transformer->wpe->forward(where, {1, positions});
}

// x (N,d), the last block's output -> ln_f(x) · wteᵀ  (N,V): the tied head.
Tensor GPT::logits_of(const Tensor& x) {
  return matmul(transformer->ln_f->forward(x), transpose(transformer->wte->weight, 0, 1));
}

Tensor GPT::forward(const std::vector<int64_t>& ids, int64_t batch, int64_t positions) {
  check(positions >= 1 && positions <= options_.block_size(),
        "GPT: {} positions; the model reads 1 to block_size = {}", positions,
        options_.block_size());
  check(static_cast<int64_t>(ids.size()) == batch * positions,
        "GPT: {} ids for a batch of {} x {} positions", ids.size(), batch, positions);
  Tensor x = embed(ids, batch, positions, 0);  // (B,T,d)
  for (const auto& block : transformer->h) x = block->forward(x);
  const Tensor logits = logits_of(reshape(x, {batch * positions, options_.n_embd()}));
  return reshape(logits, {batch, positions, options_.vocab_size()});
}

Tensor GPT::loss(const std::vector<int64_t>& ids, const std::vector<int64_t>& targets,
                 int64_t batch, int64_t positions) {
  const Tensor logits = forward(ids, batch, positions);
  return nn::cross_entropy(reshape(logits, {batch * positions, options_.vocab_size()}), targets);
}

KVCache GPT::new_cache() const {
  KVCache cache;
  const int64_t h = options_.n_head(), dh = options_.n_embd() / h;
  for (int64_t i = 0; i < options_.n_layer(); ++i) {
    cache.layers.push_back({Tensor::empty({h, options_.block_size(), dh}),
                            Tensor::empty({h, options_.block_size(), dh})});
  }
  return cache;
}

Tensor GPT::prefill(const std::vector<int64_t>& ids, KVCache& cache) {
  check(cache.length == 0, "GPT::prefill: the cache holds {} positions; prefill an empty one",
        cache.length);
  const auto positions = static_cast<int64_t>(ids.size());
  check(positions >= 1 && positions <= options_.block_size(),
        "GPT::prefill: {} ids; the cache takes 1 to block_size = {}", positions,
        options_.block_size());
  const NoGradGuard no_grad;
  Tensor x = embed(ids, 1, positions, 0);
  for (size_t i = 0; i < transformer->h.size(); ++i) {
    x = transformer->h[i]->forward(x, &cache.layers[i]);
  }
  cache.length = positions;
  return reshape(logits_of(select(x, 1, positions - 1)), {options_.vocab_size()});  // x: (1,d)
}

Tensor GPT::step(int64_t token, KVCache& cache) {
  check(token >= 0 && token < options_.vocab_size(), "GPT::step: token {} is not in [0, {})", token,
        options_.vocab_size());
  check(cache.length < options_.block_size(),
        "GPT::step: the cache holds block_size = {} positions, all filled; start a new cache "
        "(GPT::new_cache) with the last positions",
        options_.block_size());
  const NoGradGuard no_grad;
  Tensor x = reshape(embed({token}, 1, 1, cache.length), {1, options_.n_embd()});
  for (size_t i = 0; i < transformer->h.size(); ++i) {
    x = transformer->h[i]->forward_cached(x, cache.layers[i], cache.length);
  }
  ++cache.length;
  return reshape(logits_of(x), {options_.vocab_size()});
}

std::vector<std::pair<std::string, Tensor>> GPT::decayed_parameters() const {
  std::vector<std::pair<std::string, Tensor>> chosen;
  for (const auto& [name, p] : named_parameters()) {
    if (p.dim() >= 2) chosen.emplace_back(name, p);
  }
  return chosen;
}

std::vector<std::pair<std::string, Tensor>> GPT::undecayed_parameters() const {
  std::vector<std::pair<std::string, Tensor>> chosen;
  for (const auto& [name, p] : named_parameters()) {
    if (p.dim() < 2) chosen.emplace_back(name, p);
  }
  return chosen;
}

void GPT::keep_attention_weights(bool on) {
  for (const auto& block : transformer->h) block->attn->keep_attention_weights(on);
}

std::vector<Tensor> GPT::attention_weights() const {
  std::vector<Tensor> maps;
  for (const auto& block : transformer->h) maps.push_back(block->attn->attention_weights());
  return maps;
}

}  // namespace attograd::gpt
