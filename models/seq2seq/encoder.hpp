// models/seq2seq/encoder.hpp — the tutorial's EncoderRNN: Embedding(V_in, H)
// → GRU(H, H), one word per step from a zero state.
//
// Legend: S source length (EOS included, S ≤ L), L MAX_LENGTH, H hidden
// size, V_in the source vocabulary size.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "models/translation/encoder_decoder.hpp"
#include "nn/embedding.hpp"
#include "nn/gru.hpp"
#include "nn/module.hpp"
#include "tensor/random.hpp"

namespace attograd::seq2seq {

using encoder_decoder::AttentionMemory;
using encoder_decoder::EncoderOutput;

// Throws unless the sizes a layer of this model is built with are all
// positive; `layer` names it in the message. Shared by the encoder and the
// decoders.
void check_layer_sizes(const char* layer, int64_t hidden_size, int64_t vocabulary_size,
                       int64_t max_length);

class EncoderRNN : public nn::Module {
 public:
  EncoderRNN(int64_t vocabulary_size, int64_t hidden_size, int64_t max_length,
             Generator& generator = default_generator());

  // ids: S ids in [0, V_in), 1 ≤ S ≤ L -> outputs (1,L,H) with rows S..L−1
  // zero, hidden (1,1,H), valid_lens {S}
  EncoderOutput forward(const std::vector<int64_t>& ids);

  int64_t hidden_size() const { return hidden_size_; }
  int64_t max_length() const { return max_length_; }

  std::shared_ptr<nn::Embedding> embedding;
  std::shared_ptr<nn::GRU> gru;

 private:
  int64_t hidden_size_;
  int64_t max_length_;
};

}  // namespace attograd::seq2seq
