// models/transformer/transformer.cpp — the Transformer encoder, decoder and
// model (the maths is in the header and in nn/transformer.hpp).
#include "models/transformer/transformer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "autograd/ops.hpp"
#include "models/text/batching.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"

namespace attograd::transformer {

namespace {

using translation::kBos;
using translation::kEos;
using translation::kPad;

void check_options(const TransformerOptions& options) {
  check(options.source_vocabulary() > 0 && options.target_vocabulary() > 0,
        "Transformer: vocabulary sizes {} (source) and {} (target) must be positive",
        options.source_vocabulary(), options.target_vocabulary());
  check(options.num_hiddens() > 0 && options.num_blocks() > 0 && options.num_heads() > 0 &&
            options.ffn_num_hiddens() > 0,
        "Transformer: num_hiddens ({}), num_blocks ({}), num_heads ({}) and ffn_num_hiddens ({}) "
        "must be positive",
        options.num_hiddens(), options.num_blocks(), options.num_heads(),
        options.ffn_num_hiddens());
  check(options.num_hiddens() % options.num_heads() == 0,
        "Transformer: num_heads = {} does not divide num_hiddens = {}; choose num_hiddens a "
        "multiple of num_heads",
        options.num_heads(), options.num_hiddens());
}

// Embedding · √d, then the positional encoding from position `start`: (B,T) -> (B,T,d)
Tensor embed(nn::Embedding& embedding, nn::PositionalEncoding& pos_encoding,
             const std::vector<int64_t>& ids, const Shape& shape, int64_t num_hiddens,
             int64_t start) {
  check(shape.ndim() == 2 && shape[0] >= 1 && shape[1] >= 1 &&
            static_cast<int64_t>(ids.size()) == shape.numel(),
        "Transformer: {} ids for a shape {}; the ids must be (B,T) with B, T >= 1, row-major",
        ids.size(), shape);
  const real scale = static_cast<real>(std::sqrt(static_cast<double>(num_hiddens)));
  return pos_encoding.forward(embedding.forward(ids, shape) * scale, start);
}

}  // namespace

// ---------------------------------------------------------------- encoder

TransformerEncoder::TransformerEncoder(const TransformerOptions& options, Generator& generator)
    : nn::Module("TransformerEncoder"), num_hiddens_(options.num_hiddens()) {
  const int64_t d = options.num_hiddens();
  embedding = register_module("embedding",
                              std::make_shared<nn::Embedding>(
                                  nn::EmbeddingOptions(options.source_vocabulary(), d), generator));
  pos_encoding = register_module(
      "pos_encoding",
      std::make_shared<nn::PositionalEncoding>(d, options.dropout(), options.max_len(), generator));
  blks = register_module("blks", std::make_shared<BlockStack<nn::TransformerEncoderBlock>>(
                                     options.num_blocks(), options.block(), generator));
}

// ids: (B,S) -> (B,S,d)
Tensor TransformerEncoder::forward(const std::vector<int64_t>& ids, const Shape& shape,
                                   const std::vector<int64_t>& valid_lens) {
  Tensor x = embed(*embedding, *pos_encoding, ids, shape, num_hiddens_, 0);
  for (const auto& block : blks->blocks) x = block->forward(x, valid_lens);
  return x;
}

std::vector<Tensor> TransformerEncoder::attention_weights() const {
  std::vector<Tensor> weights;
  for (const auto& block : blks->blocks) weights.push_back(block->attention->attention_weights());
  return weights;
}

// ---------------------------------------------------------------- decoder

TransformerDecoder::TransformerDecoder(const TransformerOptions& options, Generator& generator)
    : nn::Module("TransformerDecoder"), num_hiddens_(options.num_hiddens()) {
  const int64_t d = options.num_hiddens();
  embedding = register_module("embedding",
                              std::make_shared<nn::Embedding>(
                                  nn::EmbeddingOptions(options.target_vocabulary(), d), generator));
  pos_encoding = register_module(
      "pos_encoding",
      std::make_shared<nn::PositionalEncoding>(d, options.dropout(), options.max_len(), generator));
  blks = register_module("blks", std::make_shared<BlockStack<nn::TransformerDecoderBlock>>(
                                     options.num_blocks(), options.block(), generator));
  dense = register_module(
      "dense",
      std::make_shared<nn::Linear>(nn::LinearOptions(d, options.target_vocabulary()), generator));
}

TransformerDecoderState TransformerDecoder::init_state(
    const Tensor& encoder_outputs, const std::vector<int64_t>& valid_lens) const {
  TransformerDecoderState state;
  state.blocks.assign(blks->blocks.size(), nn::DecoderBlockMemory{encoder_outputs, valid_lens, {}});
  return state;
}

// ids: (B,T) -> logits (B,T,V_tgt)
Tensor TransformerDecoder::forward(const std::vector<int64_t>& ids, const Shape& shape,
                                   TransformerDecoderState& state) {
  check(state.blocks.size() == blks->blocks.size(),
        "TransformerDecoder: the state has {} block memories for {} blocks; make it with "
        "init_state",
        state.blocks.size(), blks->blocks.size());
  Tensor y = embed(*embedding, *pos_encoding, ids, shape, num_hiddens_, state.positions);
  for (size_t i = 0; i < blks->blocks.size(); ++i) y = blks->blocks[i]->forward(y, state.blocks[i]);
  state.positions += shape[1];
  return dense->forward(y);
}

std::vector<Tensor> TransformerDecoder::self_attention_weights() const {
  std::vector<Tensor> weights;
  for (const auto& block : blks->blocks) weights.push_back(block->attention1->attention_weights());
  return weights;
}

std::vector<Tensor> TransformerDecoder::cross_attention_weights() const {
  std::vector<Tensor> weights;
  for (const auto& block : blks->blocks) weights.push_back(block->attention2->attention_weights());
  return weights;
}

// ---------------------------------------------------------------- the model

Transformer::Transformer(const TransformerOptions& options, Generator& generator)
    : BatchedTranslator("EncoderDecoder"), options_(options) {
  check_options(options);
  encoder = register_module("encoder", std::make_shared<TransformerEncoder>(options, generator));
  decoder = register_module("decoder", std::make_shared<TransformerDecoder>(options, generator));
  translation::xavier_init_weights(*this, generator);
}

std::shared_ptr<translation::BatchedTranslator> Transformer::replica(Generator& generator) const {
  return std::make_shared<Transformer>(options_, generator);
}

Tensor Transformer::forward(const text::PaddedArray& source,
                            const std::vector<int64_t>& decoder_inputs,
                            const Shape& decoder_shape) {
  check(decoder_shape.ndim() == 2 && decoder_shape[0] == source.rows,
        "Transformer: decoder inputs of shape {} for {} source sentences; the batch sizes must "
        "match",
        decoder_shape, source.rows);
  const Tensor encoded =
      encoder->forward(source.ids, {source.rows, source.num_steps}, source.valid_lengths);
  TransformerDecoderState state = decoder->init_state(encoded, source.valid_lengths);
  return decoder->forward(decoder_inputs, decoder_shape, state);
}

namespace {

// (1,h,1,K) weights of one step -> a (h,1,width) row, zero-padded beyond K.
Tensor step_row(const Tensor& weights, int64_t width) {
  const int64_t h = weights.shape()[1], K = weights.shape()[3];
  Tensor row = reshape(weights, {h, 1, K});
  if (K < width) row = cat({row, zeros({h, 1, width - K})}, 2);
  return row;
}

}  // namespace

Transformer::EncodedSentence Transformer::encode_sentence(const std::vector<int64_t>& source_ids,
                                                          int64_t num_steps) {
  check(num_steps >= 1, "Transformer::encode_sentence: num_steps is {}; it must be at least 1",
        num_steps);
  check(!source_ids.empty(),
        "Transformer::encode_sentence: the source is empty; give at least its <eos> id");
  EncodedSentence encoded;
  encoded.length = std::min<int64_t>(static_cast<int64_t>(source_ids.size()), num_steps);
  encoded.outputs = encoder->forward(text::truncate_pad(source_ids, num_steps, kPad),
                                     {1, num_steps}, {encoded.length});
  return encoded;
}

Prediction Transformer::predict(const std::vector<int64_t>& source_ids, int64_t num_steps) {
  check(num_steps >= 1, "Transformer::predict: num_steps is {}; it must be at least 1", num_steps);
  check(!source_ids.empty(),
        "Transformer::predict: the source is empty; give at least its <eos> id");
  const nn::EvalModeGuard eval_mode(*this);
  const NoGradGuard no_grad;
  const EncodedSentence encoded = encode_sentence(source_ids, num_steps);
  attention_maps_ = AttentionMaps();
  for (const Tensor& weights : encoder->attention_weights()) {
    attention_maps_.encoder.push_back(select(weights, 0, 0));  // (h,S,S)
  }
  TransformerDecoderState state = decoder->init_state(encoded.outputs, {encoded.length});
  const size_t N = decoder->blks->blocks.size();
  std::vector<std::vector<Tensor>> self_rows(N), cross_rows(N);
  Prediction prediction;
  prediction.source_positions = num_steps;
  int64_t input = kBos;
  for (int64_t step = 0; step < num_steps; ++step) {
    const Tensor logits = decoder->forward({input}, {1, 1}, state);  // (1,1,V)
    const int64_t chosen = argmax(logits, 2).front();
    prediction.log_probability +=
        static_cast<double>(log_softmax(reshape(logits, {1, -1}), 1).at({0, chosen}));
    const std::vector<Tensor> self = decoder->self_attention_weights();
    const std::vector<Tensor> cross = decoder->cross_attention_weights();
    for (size_t i = 0; i < N; ++i) {
      self_rows[i].push_back(step_row(self[i], num_steps));
      cross_rows[i].push_back(step_row(cross[i], num_steps));
    }
    // The last block's encoder–decoder weights, averaged over the heads: (S)
    for (real weight : mean(reshape(cross.back(), {-1, num_steps}), {0}).to_vector()) {
      prediction.attention.push_back(weight);
    }
    ++prediction.steps;
    if (chosen == kEos) {
      prediction.reached_eos = true;
      break;
    }
    prediction.ids.push_back(chosen);
    input = chosen;
  }
  for (size_t i = 0; i < N; ++i) {
    attention_maps_.decoder_self.push_back(
        narrow(cat(self_rows[i], 1), 2, 0, prediction.steps));       // (h,steps,steps)
    attention_maps_.decoder_cross.push_back(cat(cross_rows[i], 1));  // (h,steps,S)
  }
  return prediction;
}

DecodeStep Transformer::decode_step(const Tensor& encoder_outputs, int64_t source_length,
                                    const std::vector<int64_t>& tokens,
                                    const std::vector<std::vector<Tensor>>& caches, int64_t step) {
  const auto N = static_cast<int64_t>(tokens.size());
  const size_t blocks = decoder->blks->blocks.size();
  check(N >= 1 && caches.size() == tokens.size() && encoder_outputs.defined() &&
            encoder_outputs.dim() == 3 && encoder_outputs.shape()[0] == 1,
        "Transformer::decode_step: {} tokens with {} caches for encoder outputs of shape {}; give "
        "one cache per token and the (1,S,d) output of encoder->forward",
        N, caches.size(), encoder_outputs.defined() ? encoder_outputs.shape() : Shape{});
  const NoGradGuard no_grad;
  TransformerDecoderState state =
      decoder->init_state(repeat(encoder_outputs, {N, 1, 1}),
                          std::vector<int64_t>(static_cast<size_t>(N), source_length));
  state.positions = step;
  for (size_t i = 0; i < blocks && step > 0; ++i) {
    std::vector<Tensor> pasts;
    for (const std::vector<Tensor>& cache : caches) {
      check(cache.size() == blocks && cache[i].defined() && cache[i].dim() == 3 &&
                cache[i].shape()[1] == step,
            "Transformer::decode_step: a cache must hold {} blocks' inputs of {} positions at "
            "step {}",
            blocks, step, step);
      pasts.push_back(cache[i]);
    }
    state.blocks[i].past = cat(pasts, 0);  // (N,step,d)
  }
  const Tensor logits = decoder->forward(tokens, {N, 1}, state);  // (N,1,V)
  DecodeStep result;
  result.log_probs = log_softmax(reshape(logits, {N, -1}), 1);
  result.caches.resize(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    for (size_t i = 0; i < blocks; ++i)
      result.caches[n].push_back(narrow(state.blocks[i].past, 0, n, 1));
  }
  const Tensor cross = decoder->cross_attention_weights().back();  // (N,h,1,S)
  result.attention = mean(reshape(cross, {N, cross.shape()[1], -1}), {1});
  return result;
}

std::string Transformer::extra_repr() const {
  return fmt::format("num_hiddens={}, num_blocks={}, num_heads={}, ffn_num_hiddens={}, dropout={}",
                     options_.num_hiddens(), options_.num_blocks(), options_.num_heads(),
                     options_.ffn_num_hiddens(), options_.dropout());
}

}  // namespace attograd::transformer
