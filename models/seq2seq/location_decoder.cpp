// models/seq2seq/location_decoder.cpp — the tutorial's AttnDecoderRNN.
//
// Legend: L MAX_LENGTH, H hidden size, V_out the target vocabulary size.
#include "models/seq2seq/location_decoder.hpp"

#include "autograd/ops.hpp"

namespace attograd::seq2seq {

AttnDecoderRNN::AttnDecoderRNN(int64_t hidden_size, int64_t output_size, double dropout_p,
                               int64_t max_length, Generator& generator)
    : AttentionDecoder("AttnDecoderRNN"),
      hidden_size_(hidden_size),
      output_size_(output_size),
      max_length_(max_length) {
  check_layer_sizes("AttnDecoderRNN", hidden_size, output_size, max_length);
  const int64_t H = hidden_size;
  embedding = register_module("embedding", std::make_shared<nn::Embedding>(
                                               nn::EmbeddingOptions(output_size, H), generator));
  attn = register_module(
      "attn", std::make_shared<nn::Linear>(nn::LinearOptions(2 * H, max_length), generator));
  attn_combine = register_module(
      "attn_combine", std::make_shared<nn::Linear>(nn::LinearOptions(2 * H, H), generator));
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(dropout_p, generator));
  gru = register_module("gru", std::make_shared<nn::GRU>(nn::GRUOptions(H, H), generator));
  out = register_module("out",
                        std::make_shared<nn::Linear>(nn::LinearOptions(H, output_size), generator));
}

AttentionMemory AttnDecoderRNN::remember(const EncoderOutput& encoded) {
  return AttentionMemory{encoded.outputs, Tensor(), encoded.valid_lens};
}

// input_word, hidden (1,1,H), memory.values (1,L,H) -> (1,H), (1,1,H), (1,L)
DecoderStep AttnDecoderRNN::advance(int64_t input_word, const Tensor& hidden,
                                    const AttentionMemory& memory) {
  const int64_t H = hidden_size_, L = max_length_;
  check_memory(memory, L, H);
  const Tensor h = state_row(hidden, H);                                                 // (1,H)
  const Tensor embedded = dropout->forward(embedding->forward({input_word}, Shape{1}));  // (1,H)
  const Tensor weights = softmax(attn->forward(cat({embedded, h}, 1)), 1);               // (1,L)
  const Tensor context = matmul(weights, reshape(memory.values, {L, H}));                // (1,H)
  const Tensor x = relu(attn_combine->forward(cat({embedded, context}, 1)));             // (1,H)
  const nn::GRUOutput step = gru->step(x, hidden);  // (1,H), (1,1,H)
  return DecoderStep{step.output, step.h_n, weights, Tensor()};
}

// input_words: T ids, hidden (1,1,H), memory.values (1,L,H) -> T steps
//
// T calls of advance(), with every word fed known before the first step:
// attn_combine over [embedded; context] is a KnownInputsLinear
// (autograd/ops_linear.hpp), which may take the T embedded words through
// their block of the layer in one product. The embedded words are drawn as
// advance() draws them, one dropout mask per word in order, so both give the
// same masks.
std::vector<DecoderStep> AttnDecoderRNN::advance_teacher_forced(
    const std::vector<int64_t>& input_words, const Tensor& hidden, const AttentionMemory& memory) {
  const int64_t H = hidden_size_, L = max_length_;
  check_memory(memory, L, H);
  std::vector<Tensor> embedded;  // T of (1,H)
  embedded.reserve(input_words.size());
  for (const int64_t word : input_words) {
    embedded.push_back(dropout->forward(embedding->forward({word}, Shape{1})));
  }
  const KnownInputsLinear combine(embedded, attn_combine->weight, attn_combine->bias);
  const Tensor values = reshape(memory.values, {L, H});
  std::vector<DecoderStep> steps;
  steps.reserve(input_words.size());
  Tensor state = hidden;  // (1,1,H)
  for (size_t t = 0; t < input_words.size(); ++t) {
    const Tensor h = state_row(state, H);                                        // (1,H)
    const Tensor weights = softmax(attn->forward(cat({embedded[t], h}, 1)), 1);  // (1,L)
    const Tensor context = matmul(weights, values);                              // (1,H)
    const Tensor x = relu(combine.step(static_cast<int64_t>(t), context));       // (1,H)
    const nn::GRUOutput step = gru->step(x, state);                              // (1,H), (1,1,H)
    steps.push_back(DecoderStep{step.output, step.h_n, weights, Tensor()});
    state = step.h_n;
  }
  return steps;
}

}  // namespace attograd::seq2seq
