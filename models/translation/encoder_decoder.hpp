// models/translation/encoder_decoder.hpp — what an encoder hands its
// decoder, in the one form both GRU translators share: the tutorial's
// (models/seq2seq/seq2seq.hpp), which reads one sentence at a time and so has
// a batch of one, and d2l's batched one
// (models/batched_seq2seq/batched_seq2seq.hpp).
//
// Legend: B batch (1 in the tutorial), S source positions (the tutorial's
// MAX_LENGTH L, d2l's num_steps T), H hidden size, layers the GRU's layers
// (1 in the tutorial).
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.hpp"

namespace attograd::encoder_decoder {

// The encoder's result: its output at every source position, and its final
// state, which is the decoder's first.
struct EncoderOutput {
  Tensor outputs;  // (B,S,H): the top GRU layer after each source token; 0 after a sentence ends
  Tensor hidden;   // (layers,B,H): every layer's state after the sentence's last token
  std::vector<int64_t> valid_lens;  // (B): each sentence's length, its end token included
};

// What a decoder's attention reads at every step of a sentence. None of it
// depends on the step, so it is made once from the EncoderOutput.
struct AttentionMemory {
  Tensor values;  // (B,S,H): the encoder outputs, which the attention averages
  // (B,S,H): the encoder outputs through the additive score's W_k (its keys,
  // nn::AdditiveAttention::project_keys); undefined for attention that
  // scores positions rather than keys (the tutorial's location decoder).
  Tensor projected_keys;
  // (B): positions j ≥ valid_lens[b] are padding; additive attention gives
  // them weight exactly 0.
  std::vector<int64_t> valid_lens;
};

}  // namespace attograd::encoder_decoder
