// models/transformer/transformer.hpp — d2l.ai's Transformer encoder–decoder
// ("Transformer", d2l §10.7), English -> French on the batched recipe's data.
//
// Legend: B batch, T target positions, S source positions (= num_steps),
// d num_hiddens, f ffn_num_hiddens, h num_heads, N blocks, V_src / V_tgt
// vocabulary sizes.
//
//   encoder   x = PositionalEncoding(Embedding(source) · √d)          (B,S,d)
//             N × TransformerEncoderBlock(x, source valid lengths)      (B,S,d)
//   decoder   y = PositionalEncoding(Embedding(target inputs) · √d)    (B,T,d)
//             N × TransformerDecoderBlock(y, encoder output)           (B,T,d)
//             logits = Dense(y)                                         (B,T,V_tgt)
//
// The positional encoding's entries lie in [−1, 1]; d2l multiplies the
// learned embeddings by √d before adding it, so the two are summed on the
// scale the textbook chose (its recipe, kept as is).
//
// Training sees the whole target at once, each position attending to itself
// and those before it. Prediction feeds one token per step; every decoder
// block keeps its inputs so far (nn::DecoderBlockMemory::past) as the keys
// and values of its self-attention, and step t adds position t's encoding.
// (d2l's predict_seq2seq calls the decoder with one token per step, so its
// PositionalEncoding adds position 0's row at every step; here step t gets
// row t, which is what training taught the model, and the cached steps then
// equal recomputing the whole prefix with the causal mask — a test proves it.)
//
// Parameter names follow d2l's PyTorch model: encoder.embedding.weight,
// encoder.blks.block0.attention.W_q.weight, ….addnorm1.ln.weight,
// ….ffn.dense1.weight/bias, decoder.blks.block0.attention1…, attention2…,
// addnorm3…, decoder.dense.weight/bias.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/translation/batched_translator.hpp"
#include "nn/embedding.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "nn/transformer.hpp"
#include "tensor/random.hpp"

namespace attograd::transformer {

using translation::Prediction;

struct TransformerOptions {
  TransformerOptions(int64_t source_vocabulary, int64_t target_vocabulary)
      : source_vocabulary_(source_vocabulary), target_vocabulary_(target_vocabulary) {}
  // d, the size of every position's vector (d2l: 32).
  TransformerOptions& num_hiddens(int64_t value) {
    num_hiddens_ = value;
    return *this;
  }
  // N, the blocks of encoder and of decoder (d2l: 2).
  TransformerOptions& num_blocks(int64_t value) {
    num_blocks_ = value;
    return *this;
  }
  // h, the attention heads; must divide d (d2l: 4).
  TransformerOptions& num_heads(int64_t value) {
    num_heads_ = value;
    return *this;
  }
  // f, the hidden size of the position-wise FFN (d2l: 64).
  TransformerOptions& ffn_num_hiddens(int64_t value) {
    ffn_num_hiddens_ = value;
    return *this;
  }
  // Dropout after the positional encoding, in every AddNorm and on the
  // attention weights (d2l: 0.1).
  TransformerOptions& dropout(double value) {
    dropout_ = value;
    return *this;
  }
  // The longest sequence the positional encoding covers (d2l: 1000).
  TransformerOptions& max_len(int64_t value) {
    max_len_ = value;
    return *this;
  }

  int64_t source_vocabulary() const { return source_vocabulary_; }
  int64_t target_vocabulary() const { return target_vocabulary_; }
  int64_t num_hiddens() const { return num_hiddens_; }
  int64_t num_blocks() const { return num_blocks_; }
  int64_t num_heads() const { return num_heads_; }
  int64_t ffn_num_hiddens() const { return ffn_num_hiddens_; }
  double dropout() const { return dropout_; }
  int64_t max_len() const { return max_len_; }
  nn::TransformerBlockOptions block() const {
    return nn::TransformerBlockOptions(num_hiddens_, ffn_num_hiddens_, num_heads_)
        .dropout(dropout_);
  }

 private:
  int64_t source_vocabulary_;
  int64_t target_vocabulary_;
  int64_t num_hiddens_ = 32;
  int64_t num_blocks_ = 2;
  int64_t num_heads_ = 4;
  int64_t ffn_num_hiddens_ = 64;
  double dropout_ = 0.1;
  int64_t max_len_ = 1000;
};

// N blocks registered as block0 … block{N−1}, as d2l's nn.Sequential `blks`.
template <typename Block>
class BlockStack : public nn::Module {
 public:
  BlockStack(int64_t count, const nn::TransformerBlockOptions& options, Generator& generator)
      : nn::Module("Sequential") {
    for (int64_t i = 0; i < count; ++i) {
      blocks.push_back(register_module("block" + std::to_string(i),
                                       std::make_shared<Block>(options, generator)));
    }
  }
  std::vector<std::shared_ptr<Block>> blocks;
};

class TransformerEncoder : public nn::Module {
 public:
  explicit TransformerEncoder(const TransformerOptions& options,
                              Generator& generator = default_generator());

  // ids: (B,S) row-major, valid_lens: (B) in [1, S] -> (B,S,d)
  Tensor forward(const std::vector<int64_t>& ids, const Shape& shape,
                 const std::vector<int64_t>& valid_lens);

  // Block i's self-attention weights in the last forward, (B,h,S,S), without history.
  std::vector<Tensor> attention_weights() const;

  std::shared_ptr<nn::Embedding> embedding;
  std::shared_ptr<nn::PositionalEncoding> pos_encoding;
  std::shared_ptr<BlockStack<nn::TransformerEncoderBlock>> blks;

 private:
  int64_t num_hiddens_;
};

// What the decoder carries from call to call: the encoder's output and each
// block's inputs so far.
struct TransformerDecoderState {
  std::vector<nn::DecoderBlockMemory> blocks;  // one per block
  int64_t positions = 0;                       // target positions seen so far
};

class TransformerDecoder : public nn::Module {
 public:
  explicit TransformerDecoder(const TransformerOptions& options,
                              Generator& generator = default_generator());

  // encoder_outputs: (B,S,d), valid_lens: (B) -> an empty cache
  TransformerDecoderState init_state(const Tensor& encoder_outputs,
                                     const std::vector<int64_t>& valid_lens) const;

  // ids: (B,T) row-major, at positions state.positions … + T − 1 -> logits (B,T,V_tgt);
  // the state's caches grow by T positions.
  Tensor forward(const std::vector<int64_t>& ids, const Shape& shape,
                 TransformerDecoderState& state);

  // Block i's self-attention (B,h,T,P+T) and encoder–decoder attention
  // (B,h,T,S) weights in the last forward, without history.
  std::vector<Tensor> self_attention_weights() const;
  std::vector<Tensor> cross_attention_weights() const;

  std::shared_ptr<nn::Embedding> embedding;
  std::shared_ptr<nn::PositionalEncoding> pos_encoding;
  std::shared_ptr<BlockStack<nn::TransformerDecoderBlock>> blks;
  std::shared_ptr<nn::Linear> dense;  // d -> V_tgt

 private:
  int64_t num_hiddens_;
};

// Every head's weights while predicting one sentence, for heatmaps:
// encoder[i] (h,S,S); decoder_self[i] (h,steps,steps), step t's row zero
// beyond t; decoder_cross[i] (h,steps,S).
struct AttentionMaps {
  std::vector<Tensor> encoder;
  std::vector<Tensor> decoder_self;
  std::vector<Tensor> decoder_cross;
};

// One decoding step of N hypotheses that share one source (beam search).
struct DecodeStep {
  Tensor log_probs;  // (N,V_tgt): log p(next token) of each hypothesis
  // N × N_blocks: each hypothesis's inputs so far to each decoder block, (1,t+1,d)
  std::vector<std::vector<Tensor>> caches;
  Tensor attention;  // (N,S): the last block's encoder–decoder weights, mean of the heads
};

class Transformer : public translation::BatchedTranslator {
 public:
  // Builds the layers from `generator`, then gives every Linear weight
  // Xavier-uniform values (d2l's xavier_init_weights).
  explicit Transformer(const TransformerOptions& options,
                       Generator& generator = default_generator());

  Tensor forward(const text::PaddedArray& source, const std::vector<int64_t>& decoder_inputs,
                 const Shape& decoder_shape) override;
  // Greedy, one token per step through the decoder's caches.
  // Prediction::attention holds the last block's encoder–decoder weights,
  // averaged over the heads; attention_maps() has every head.
  Prediction predict(const std::vector<int64_t>& source_ids, int64_t num_steps) override;
  // models/transformer/beam_decoder.hpp: the hypotheses as rows of one decoder step.
  std::vector<decoding::Hypothesis> beam_predict(
      const std::vector<int64_t>& source_ids, int64_t num_steps,
      const decoding::BeamSearchOptions& options) override;
  int64_t source_vocabulary_size() const override { return options_.source_vocabulary(); }
  int64_t target_vocabulary_size() const override { return options_.target_vocabulary(); }
  std::shared_ptr<translation::BatchedTranslator> replica(Generator& generator) const override;

  // The encoder's output for one sentence as predict reads it: source_ids
  // cut or padded to num_steps -> outputs (1,S,d) and the valid length
  // min(ids, num_steps). Records a graph unless called under a NoGradGuard.
  struct EncodedSentence {
    Tensor outputs;
    int64_t length = 0;
  };
  EncodedSentence encode_sentence(const std::vector<int64_t>& source_ids, int64_t num_steps);

  // For a search that keeps several hypotheses (the StepDecoder of
  // models/translation/beam_search.hpp): encoder_outputs (1,S,d) from
  // encoder->forward and the source's valid length; tokens: N ids at
  // position `step`; caches: N lists of the blocks' (1,step,d) inputs so far
  // (empty lists at step 0). No graph is recorded; call in eval mode.
  DecodeStep decode_step(const Tensor& encoder_outputs, int64_t source_length,
                         const std::vector<int64_t>& tokens,
                         const std::vector<std::vector<Tensor>>& caches, int64_t step);

  // The weights of the last predict().
  const AttentionMaps& attention_maps() const { return attention_maps_; }
  const TransformerOptions& options() const { return options_; }

  std::shared_ptr<TransformerEncoder> encoder;
  std::shared_ptr<TransformerDecoder> decoder;

 protected:
  std::string extra_repr() const override;

 private:
  TransformerOptions options_;
  AttentionMaps attention_maps_;
};

}  // namespace attograd::transformer
