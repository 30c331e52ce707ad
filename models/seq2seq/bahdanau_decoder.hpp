// models/seq2seq/bahdanau_decoder.hpp — a GRU decoder with additive attention
// (Bahdanau et al., 2015; the newer PyTorch tutorial's BahdanauAttention
// decoder), its attention the nn::AdditiveAttention layer with query, key and
// hidden sizes all H:
//
//   embedded = dropout(embedding(input))                              (1,H)
//   weights  = softmax_{j<S}(w_vᵀ tanh(W_q hidden + W_k e_j)), 0 for j ≥ S   (1,L)
//   context  = weights @ encoder_outputs                              (1,H)
//   output, hidden = gru([embedded; context], hidden)                 (1,2H) -> (1,H)
//   log_probs = log_softmax(out(output))                              (1,V_out)
//
// W_k e_j does not depend on the step, so remember() computes it once per
// sentence. The padded positions j ≥ S are outside the source's valid length,
// so their weight is exactly 0 and they pass back no gradient.
//
// Legend: S source length (EOS included), L MAX_LENGTH, H hidden size,
// V_out the target vocabulary size.
#pragma once

#include <cstdint>
#include <memory>

#include "models/seq2seq/decoder.hpp"
#include "nn/attention.hpp"
#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/gru.hpp"
#include "nn/linear.hpp"
#include "tensor/random.hpp"

namespace attograd::seq2seq {

class BahdanauAttnDecoder : public AttentionDecoder {
 public:
  BahdanauAttnDecoder(int64_t hidden_size, int64_t output_size, double dropout_p,
                      int64_t max_length, Generator& generator = default_generator());

  // The encoder outputs as values, their projection W_k e as keys, and the
  // source length as the valid length.
  AttentionMemory remember(const EncoderOutput& encoded) override;
  // input_word: an id, hidden: (1,1,H), memory: (1,L,H) values and keys -> (1,H), (1,1,H), (1,L)
  DecoderStep advance(int64_t input_word, const Tensor& hidden,
                      const AttentionMemory& memory) override;
  nn::Linear& output_layer() override { return *out; }

  int64_t output_size() const override { return output_size_; }
  int64_t max_length() const override { return max_length_; }
  Generator& dropout_generator() override { return dropout->generator(); }

  std::shared_ptr<nn::Embedding> embedding;  // (V_out, H)
  std::shared_ptr<nn::Dropout> dropout;
  std::shared_ptr<nn::AdditiveAttention> attention;  // W_q, W_k: H -> H, w_v: H -> 1
  std::shared_ptr<nn::GRU> gru;                      // 2H -> H
  std::shared_ptr<nn::Linear> out;                   // H -> V_out

 private:
  int64_t hidden_size_;
  int64_t output_size_;
  int64_t max_length_;
};

}  // namespace attograd::seq2seq
