// models/gpt/gpt.hpp — a decoder-only character language model: nanoGPT's
// GPT (Karpathy), the shape GPT-2 gave it, on attograd's ops.
//
// Legend: B batch, T positions (≤ block size), V vocabulary, d n_embd,
// h n_head, d/h one head, L n_layer.
//
//   x = wte[ids] + wpe[0..T)                                    (B,T,d)
//   L × Block:   x = x + attn(ln_1(x))      causal self-attention, h heads
//                x = x + mlp(ln_2(x))       d → 4d → GELU (tanh form) → d
//   logits = ln_f(x) · wteᵀ                                      (B,T,V)
//
// The language-model head is tied to the token embedding (lm_head.weight is
// transformer.wte.weight, as nanoGPT and GPT-2 have it): one (V,d) table
// both reads a character in and scores every character out, which saves
// V·d parameters and trains the table from both ends.
//
// Causal self-attention: c_attn maps each position to its query, key and
// value at once (d → 3d, split in three), each split into h heads; position
// i attends to positions 0..i:
//   y_head = softmax(q kᵀ / √(d/h) + causal mask) v,   y = c_proj([y_1; …; y_h])
// From 128 positions on it runs through causal_attention (autograd/ops.hpp),
// one fused op for the whole softmax(·)v that stores no (T,T) matrix;
// shorter, composed of bmm, masked_softmax and bmm, which is faster there.
//
// Initialisation is nanoGPT's: every Linear and Embedding weight N(0, 0.02),
// biases 0, and the two projections into the residual stream (attn.c_proj,
// mlp.c_proj) N(0, 0.02/√(2L)), so the residual's variance does not grow
// with depth; LayerNorm weight 1, bias 0.
//
// Parameter names are nanoGPT's: transformer.wte.weight,
// transformer.wpe.weight, transformer.h.0.ln_1.weight,
// transformer.h.0.attn.c_attn.weight, ….attn.c_proj.weight,
// ….ln_2.weight, ….mlp.c_fc.weight, ….mlp.c_proj.weight,
// transformer.ln_f.weight (and a .bias for each with bias(true)).
//
// Sampling appends one position at a time (KVCache): each block keeps the
// keys and values of the positions so far, so a step costs O(T·d) for
// attention instead of recomputing the context (a test proves both give
// the same characters).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/embedding.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "tensor/random.hpp"

namespace attograd::gpt {

struct GPTOptions {
  explicit GPTOptions(int64_t vocab_size) : vocab_size_(vocab_size) {}
  // The longest context, T ≤ block_size (nanoGPT's CPU recipe: 64).
  GPTOptions& block_size(int64_t value) {
    block_size_ = value;
    return *this;
  }
  GPTOptions& n_layer(int64_t value) {
    n_layer_ = value;
    return *this;
  }
  // Heads; must divide n_embd.
  GPTOptions& n_head(int64_t value) {
    n_head_ = value;
    return *this;
  }
  GPTOptions& n_embd(int64_t value) {
    n_embd_ = value;
    return *this;
  }
  // Biases in every Linear and LayerNorm (nanoGPT's train.py: false).
  GPTOptions& bias(bool on) {
    bias_ = on;
    return *this;
  }

  int64_t vocab_size() const { return vocab_size_; }
  int64_t block_size() const { return block_size_; }
  int64_t n_layer() const { return n_layer_; }
  int64_t n_head() const { return n_head_; }
  int64_t n_embd() const { return n_embd_; }
  bool bias() const { return bias_; }

 private:
  int64_t vocab_size_;
  int64_t block_size_ = 64;
  int64_t n_layer_ = 4;
  int64_t n_head_ = 4;
  int64_t n_embd_ = 128;
  bool bias_ = false;
};

// One block's keys and values of the positions so far: (h, capacity, d/h)
// each, the first `length` positions filled.
struct LayerCache {
  Tensor keys;
  Tensor values;
};

// What sampling keeps between steps: every block's keys and values, and how
// many positions they hold.
struct KVCache {
  std::vector<LayerCache> layers;
  int64_t length = 0;
};

class CausalSelfAttention : public nn::Module {
 public:
  CausalSelfAttention(const GPTOptions& options, Generator& generator);
  // x: (B,T,d) -> (B,T,d); with `fill` (B = 1), the T keys and values also
  // go into the cache's first T positions.
  Tensor forward(const Tensor& x, LayerCache* fill = nullptr);
  // x: (1,d), the next position; appends its key and value to `cache`
  // (whose length is the positions before it) -> (1,d)
  Tensor forward_cached(const Tensor& x, LayerCache& cache, int64_t length);
  // (B,h,T,T): each head's weights in the last forward, without history;
  // kept only after keep_attention_weights(true) (the report's maps).
  const Tensor& attention_weights() const { return attention_weights_; }
  void keep_attention_weights(bool on) { keep_weights_ = on; }

  std::shared_ptr<nn::Linear> c_attn;  // d -> 3d: queries, keys, values
  std::shared_ptr<nn::Linear> c_proj;  // d -> d

 private:
  int64_t n_head_;
  int64_t n_embd_;
  bool keep_weights_ = false;
  Tensor attention_weights_;
};

class MLP : public nn::Module {
 public:
  MLP(const GPTOptions& options, Generator& generator);
  Tensor forward(const Tensor& x);  // (*,d) -> (*,d)

  std::shared_ptr<nn::Linear> c_fc;    // d -> 4d
  std::shared_ptr<nn::Linear> c_proj;  // 4d -> d
};

class Block : public nn::Module {
 public:
  Block(const GPTOptions& options, Generator& generator);
  Tensor forward(const Tensor& x, LayerCache* fill = nullptr);                // (B,T,d) -> (B,T,d)
  Tensor forward_cached(const Tensor& x, LayerCache& cache, int64_t length);  // (1,d)

  std::shared_ptr<nn::LayerNorm> ln_1;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<nn::LayerNorm> ln_2;
  std::shared_ptr<MLP> mlp;
};

// The embeddings, the blocks and the final norm: nanoGPT's `transformer`.
class Body : public nn::Module {
 public:
  Body(const GPTOptions& options, Generator& generator);

  std::shared_ptr<nn::Embedding> wte;  // (V,d), also the head
  std::shared_ptr<nn::Embedding> wpe;  // (block_size,d)
  std::vector<std::shared_ptr<Block>> h;
  std::shared_ptr<nn::LayerNorm> ln_f;
};

class GPT : public nn::Module {
 public:
  explicit GPT(const GPTOptions& options, Generator& generator = default_generator());

  // ids: B·T token ids, row-major (B,T), T ≤ block_size -> logits (B,T,V)
  Tensor forward(const std::vector<int64_t>& ids, int64_t batch, int64_t positions);
  // The mean cross-entropy of predicting targets[i] at position i
  // (targets: B·T ids, the inputs shifted by one).
  Tensor loss(const std::vector<int64_t>& ids, const std::vector<int64_t>& targets, int64_t batch,
              int64_t positions);

  // A cache for up to block_size positions, empty.
  KVCache new_cache() const;
  // Reads `ids` (1 to block_size of them) in one forward pass into an empty
  // `cache` and returns the logits of the token after them (V), without
  // history: what `ids.size()` calls of step() give, as one batched pass.
  Tensor prefill(const std::vector<int64_t>& ids, KVCache& cache);
  // Appends `token` at position cache.length and returns the logits of the
  // next token (V), without history. Throws when the cache is full.
  Tensor step(int64_t token, KVCache& cache);

  // The weights split as nanoGPT's AdamW does: matrices and embeddings (2-D
  // and up) decay, biases and LayerNorm weights (1-D) do not.
  std::vector<std::pair<std::string, Tensor>> decayed_parameters() const;
  std::vector<std::pair<std::string, Tensor>> undecayed_parameters() const;

  // Each block's attention, (B,h,T,T), from the last forward after
  // keep_attention_weights(true).
  void keep_attention_weights(bool on);
  std::vector<Tensor> attention_weights() const;

  const GPTOptions& options() const { return options_; }

  std::shared_ptr<Body> transformer;

 private:
  // ids (batch, positions) at positions first, first + 1, … -> (batch,positions,d)
  Tensor embed(const std::vector<int64_t>& ids, int64_t batch, int64_t positions, int64_t first);
  // the last block's output (N,d) -> the logits (N,V), through ln_f and the tied head
  Tensor logits_of(const Tensor& x);

  GPTOptions options_;
};

// Checks the options: sizes positive and within what a machine can hold,
// n_head dividing n_embd; throws Error naming the option and the remedy.
void check_options(const GPTOptions& options);

}  // namespace attograd::gpt
