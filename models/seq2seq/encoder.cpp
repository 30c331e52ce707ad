// models/seq2seq/encoder.cpp — the tutorial's encoder.
//
// Legend: S source length (EOS included), L MAX_LENGTH, H hidden size.
#include "models/seq2seq/encoder.hpp"

#include "autograd/ops.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"

namespace attograd::seq2seq {

void check_layer_sizes(const char* layer, int64_t hidden_size, int64_t vocabulary_size,
                       int64_t max_length) {
  check(hidden_size > 0 && vocabulary_size > 0 && max_length > 0,
        "{}: hidden size ({}), vocabulary size ({}) and max length ({}) must all be positive",
        layer, hidden_size, vocabulary_size, max_length);
}

EncoderRNN::EncoderRNN(int64_t vocabulary_size, int64_t hidden_size, int64_t max_length,
                       Generator& generator)
    : nn::Module("EncoderRNN"), hidden_size_(hidden_size), max_length_(max_length) {
  check_layer_sizes("EncoderRNN", hidden_size, vocabulary_size, max_length);
  embedding = register_module("embedding",
                              std::make_shared<nn::Embedding>(
                                  nn::EmbeddingOptions(vocabulary_size, hidden_size), generator));
  gru = register_module(
      "gru", std::make_shared<nn::GRU>(nn::GRUOptions(hidden_size, hidden_size), generator));
}

// ids: S ids -> outputs (1,L,H), hidden (1,1,H), valid_lens {S}
//
// The tutorial feeds one word per call from a zero state and writes each
// output into a zero (L,H) matrix; running the GRU over the (S,1,H) sequence
// at once computes exactly the same states.
EncoderOutput EncoderRNN::forward(const std::vector<int64_t>& ids) {
  const auto S = static_cast<int64_t>(ids.size());
  check(S >= 1 && S <= max_length_,
        "EncoderRNN: a source of {} ids (EOS included); the encoder keeps 1 to {} (MAX_LENGTH)", S,
        max_length_);
  const Tensor embedded = embedding->forward(ids, Shape{S, 1});  // (S,1,H)
  const nn::GRUOutput run = gru->forward(embedded);              // (S,1,H), (1,1,H)
  Tensor outputs = reshape(run.output, {S, hidden_size_});
  if (S < max_length_) outputs = cat({outputs, zeros({max_length_ - S, hidden_size_})}, 0);
  return EncoderOutput{reshape(outputs, {1, max_length_, hidden_size_}), run.h_n, {S}};
}

}  // namespace attograd::seq2seq
