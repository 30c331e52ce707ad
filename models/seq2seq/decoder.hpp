// models/seq2seq/decoder.hpp — the interface both of the tutorial's attention
// decoders share, so that Seq2Seq and the training loop do not care which
// one they drive.
//
// Legend: S source length (EOS included), T decoder steps, L MAX_LENGTH,
// H hidden size, V_out the target vocabulary size.
#pragma once

#include <cstdint>
#include <vector>

#include "models/seq2seq/encoder.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "tensor/random.hpp"

namespace attograd::seq2seq {

// One decoder step. advance() gives output, hidden and attention; forward()
// also the log-probabilities.
struct DecoderStep {
  Tensor output;     // (1,H): the GRU's output, what the output layer reads
  Tensor hidden;     // (1,1,H): the new state
  Tensor attention;  // (1,L): the weights over the encoder outputs, summing to 1
  Tensor log_probs;  // (1,V_out): log-probabilities of the next word (forward() only)
};

// A step is split in two: advance() runs everything up to the GRU, predict()
// the output layer. Training applies predict() to all the steps of a
// sentence at once — (T,H) @ (H,V_out) is the same arithmetic as T products
// (1,H) @ (H,V_out), but it reads the largest matrix of the model and writes
// its gradient once per sentence instead of once per word.
class AttentionDecoder : public nn::Module {
 public:
  using nn::Module::Module;

  // encoded -> the memory every step of this sentence reads
  virtual AttentionMemory remember(const EncoderOutput& encoded) = 0;
  // The previous word (SOS first) and the state (1,1,H) -> the GRU output,
  // the new state and the attention weights (log_probs left undefined).
  virtual DecoderStep advance(int64_t input_word, const Tensor& hidden,
                              const AttentionMemory& memory) = 0;
  // Teacher forcing: the T steps fed input_words (SOS, then the target's first
  // T−1 words) from the state `hidden` -> those T steps, as T calls of
  // advance() give them. A decoder may form what depends on the words alone
  // for all T steps at once (autograd/fast/sentence_products.hpp).
  virtual std::vector<DecoderStep> advance_teacher_forced(const std::vector<int64_t>& input_words,
                                                          const Tensor& hidden,
                                                          const AttentionMemory& memory);
  // The output layer, out: Linear(H -> V_out).
  virtual nn::Linear& output_layer() = 0;
  // outputs: (T,H) -> log-probabilities (T,V_out): log_softmax(out(outputs)).
  // With `logits`, out(outputs) already computed without recording (greedy
  // decoding computes each step's to choose the next word), those values are
  // recorded as out's output instead of being computed a second time
  // (linear_with_values, autograd/ops_linear.hpp).
  Tensor predict(const Tensor& outputs, const Tensor& logits = Tensor());

  // One whole step, the tutorial's decoder(input, hidden, encoder_outputs):
  // advance, then predict -> (1,V_out), (1,1,H), (1,L).
  DecoderStep forward(int64_t input_word, const Tensor& hidden, const AttentionMemory& memory);

  virtual int64_t output_size() const = 0;  // V_out
  virtual int64_t max_length() const = 0;   // L
  // The generator of the dropout on the embedded input (reseeded by the
  // training loop so that a resumed run draws the same masks).
  virtual Generator& dropout_generator() = 0;

 protected:
  // hidden: (1,1,H) -> (1,H), the same values (a view); throws on another shape.
  static Tensor state_row(const Tensor& hidden, int64_t H);
  // Throws unless memory.values is (1,L,H), as remember() makes it.
  static void check_memory(const AttentionMemory& memory, int64_t L, int64_t H);
};

}  // namespace attograd::seq2seq
