// models/seq2seq/decoder.cpp — what the two attention decoders share: the
// output layer over many steps at once, a whole step, and the checks of the
// state and the memory.
//
// Legend: T decoder steps, L MAX_LENGTH, H hidden size, V_out the target
// vocabulary size.
#include "models/seq2seq/decoder.hpp"

#include "autograd/ops.hpp"
#include "tensor/error.hpp"

namespace attograd::seq2seq {

// outputs: (T,H) -> (T,V_out); logits, when given: (T,V_out)
Tensor AttentionDecoder::predict(const Tensor& outputs, const Tensor& logits) {
  nn::Linear& out = output_layer();
  if (!logits.defined()) return log_softmax(out.forward(outputs), 1);
  return log_softmax(linear_with_values(outputs, out.weight, out.bias, logits), 1);
}

DecoderStep AttentionDecoder::forward(int64_t input_word, const Tensor& hidden,
                                      const AttentionMemory& memory) {
  DecoderStep step = advance(input_word, hidden, memory);
  step.log_probs = predict(step.output);
  return step;
}

// input_words: T ids, hidden (1,1,H) -> T steps
std::vector<DecoderStep> AttentionDecoder::advance_teacher_forced(
    const std::vector<int64_t>& input_words, const Tensor& hidden, const AttentionMemory& memory) {
  std::vector<DecoderStep> steps;
  steps.reserve(input_words.size());
  Tensor state = hidden;
  for (const int64_t word : input_words) {
    steps.push_back(advance(word, state, memory));
    state = steps.back().hidden;
  }
  return steps;
}

// hidden: (1,1,H) -> (1,H)
Tensor AttentionDecoder::state_row(const Tensor& hidden, int64_t H) {
  check(hidden.defined() && hidden.shape() == Shape{1, 1, H},
        "decoder: the hidden state has shape {}, expected (1,1,{}) — the (layers, batch, H) "
        "state of a one-layer GRU",
        hidden.defined() ? hidden.shape() : Shape{}, H);
  return reshape(hidden, {1, H});
}

void AttentionDecoder::check_memory(const AttentionMemory& memory, int64_t L, int64_t H) {
  check(memory.values.defined() && memory.values.shape() == Shape{1, L, H},
        "decoder: the encoder outputs have shape {}, expected (1,L,H) = (1,{},{}); pass the "
        "memory remember() made for this decoder",
        memory.values.defined() ? memory.values.shape() : Shape{}, L, H);
}

}  // namespace attograd::seq2seq
