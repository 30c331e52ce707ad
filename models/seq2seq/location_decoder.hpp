// models/seq2seq/location_decoder.hpp — the tutorial's AttnDecoderRNN, line
// for line:
//
//   embedded = dropout(embedding(input))                     (1,H)
//   weights  = softmax(attn([embedded; hidden]))             (1,2H) -> (1,L)
//   context  = weights @ encoder_outputs  (torch.bmm)        (1,L) @ (L,H) -> (1,H)
//   x        = relu(attn_combine([embedded; context]))       (1,2H) -> (1,H)
//   output, hidden = gru(x, hidden)                          (1,H)
//   log_probs = log_softmax(out(output))                     (1,V_out)
//
// The weights score the L *positions*: they never read what the encoder
// wrote there, and so also fall on the zero rows after the source's end.
//
// Legend: L MAX_LENGTH, H hidden size, V_out the target vocabulary size.
#pragma once

#include <cstdint>
#include <memory>

#include "models/seq2seq/decoder.hpp"
#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/gru.hpp"
#include "nn/linear.hpp"
#include "tensor/random.hpp"

namespace attograd::seq2seq {

class AttnDecoderRNN : public AttentionDecoder {
 public:
  AttnDecoderRNN(int64_t hidden_size, int64_t output_size, double dropout_p, int64_t max_length,
                 Generator& generator = default_generator());

  // The encoder outputs as they are; no keys, no mask.
  AttentionMemory remember(const EncoderOutput& encoded) override;
  // input_word: an id, hidden: (1,1,H), memory.values: (1,L,H) -> (1,H), (1,1,H), (1,L)
  DecoderStep advance(int64_t input_word, const Tensor& hidden,
                      const AttentionMemory& memory) override;
  // Teacher forcing, input_words: T ids -> T steps, the steps advance()
  // would take; attn_combine is a KnownInputsLinear over [embedded; context]
  // (autograd/ops_linear.hpp), which may take the T embedded words in one
  // (T,H) @ (H,H) product.
  std::vector<DecoderStep> advance_teacher_forced(const std::vector<int64_t>& input_words,
                                                  const Tensor& hidden,
                                                  const AttentionMemory& memory) override;
  nn::Linear& output_layer() override { return *out; }

  int64_t output_size() const override { return output_size_; }
  int64_t max_length() const override { return max_length_; }
  Generator& dropout_generator() override { return dropout->generator(); }

  std::shared_ptr<nn::Embedding> embedding;  // (V_out, H)
  std::shared_ptr<nn::Linear> attn;          // 2H -> L
  std::shared_ptr<nn::Linear> attn_combine;  // 2H -> H
  std::shared_ptr<nn::Dropout> dropout;
  std::shared_ptr<nn::GRU> gru;     // H -> H
  std::shared_ptr<nn::Linear> out;  // H -> V_out

 private:
  int64_t hidden_size_;
  int64_t output_size_;
  int64_t max_length_;
};

}  // namespace attograd::seq2seq
