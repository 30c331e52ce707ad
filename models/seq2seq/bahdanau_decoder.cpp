// models/seq2seq/bahdanau_decoder.cpp — the decoder with additive attention.
//
// Legend: S source length (EOS included), L MAX_LENGTH, H hidden size,
// V_out the target vocabulary size.
#include "models/seq2seq/bahdanau_decoder.hpp"

#include "autograd/ops.hpp"
#include "tensor/error.hpp"

namespace attograd::seq2seq {

BahdanauAttnDecoder::BahdanauAttnDecoder(int64_t hidden_size, int64_t output_size, double dropout_p,
                                         int64_t max_length, Generator& generator)
    : AttentionDecoder("BahdanauAttnDecoder"),
      hidden_size_(hidden_size),
      output_size_(output_size),
      max_length_(max_length) {
  check_layer_sizes("BahdanauAttnDecoder", hidden_size, output_size, max_length);
  const int64_t H = hidden_size;
  embedding = register_module("embedding", std::make_shared<nn::Embedding>(
                                               nn::EmbeddingOptions(output_size, H), generator));
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(dropout_p, generator));
  // This model draws its attention's weights in the order W_q, W_k, w_v (the
  // newer tutorial's Wa, Ua, Va) and nothing more, so that a seed gives the
  // values it always gave; nn::AdditiveAttention draws W_k first (d2l's
  // order) and then seeds a dropout of its own. So the layer is built from a
  // generator of its own, and its weights drawn again from `generator`.
  Generator construction_only;
  attention =
      register_module("attention", std::make_shared<nn::AdditiveAttention>(
                                       nn::AdditiveAttentionOptions(H, H, H), construction_only));
  attention->W_q->reset_parameters(generator);
  attention->W_k->reset_parameters(generator);
  attention->w_v->reset_parameters(generator);
  gru = register_module("gru", std::make_shared<nn::GRU>(nn::GRUOptions(2 * H, H), generator));
  out = register_module("out",
                        std::make_shared<nn::Linear>(nn::LinearOptions(H, output_size), generator));
}

// encoded.outputs: (1,L,H) -> values (1,L,H), projected keys (1,L,H), valid_lens {S}
AttentionMemory BahdanauAttnDecoder::remember(const EncoderOutput& encoded) {
  check_memory(AttentionMemory{encoded.outputs, Tensor(), {}}, max_length_, hidden_size_);
  return AttentionMemory{encoded.outputs, attention->project_keys(encoded.outputs),
                         encoded.valid_lens};
}

// input_word, hidden (1,1,H), memory (1,L,H) -> (1,H), (1,1,H), (1,L)
DecoderStep BahdanauAttnDecoder::advance(int64_t input_word, const Tensor& hidden,
                                         const AttentionMemory& memory) {
  const int64_t H = hidden_size_, L = max_length_;
  check_memory(memory, L, H);
  check(memory.projected_keys.defined(),
        "BahdanauAttnDecoder: the memory has no projected keys; make it with this decoder's "
        "remember()");
  const Tensor query = reshape(state_row(hidden, H), {1, 1, H});  // (B,Tq,H) = (1,1,H)
  const Tensor embedded = dropout->forward(embedding->forward({input_word}, Shape{1}));  // (1,H)
  const Tensor weights = reshape(
      attention->weights(query, memory.projected_keys, memory.valid_lens), {1, L});  // (1,L)
  const Tensor context = matmul(weights, reshape(memory.values, {L, H}));            // (1,H)
  const nn::GRUOutput step = gru->step(cat({embedded, context}, 1), hidden);
  return DecoderStep{step.output, step.h_n, weights, Tensor()};
}

}  // namespace attograd::seq2seq
