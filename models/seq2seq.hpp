// models/seq2seq.hpp — the PyTorch seq2seq tutorial's translator: a GRU
// encoder and a GRU decoder with attention, one sentence at a time.
//
// Legend: S source length (the words plus EOS, S ≤ L), T decoder steps,
// L MAX_LENGTH (10), H hidden size (256), V_in / V_out the source / target
// vocabulary sizes.
//
//   Seq2Seq model(Seq2SeqOptions(V_in, V_out), generator);
//   EncoderOutput encoded = model.encoder->forward(source_ids);  // ids end in EOS
//   Tensor hidden = encoded.hidden;                              // (1,1,H)
//   AttentionMemory memory = model.decoder->remember(encoded);
//   DecoderStep step = model.decoder->forward(kSos, hidden, memory);
//   step.log_probs;   // (1,V_out)
//   step.hidden;      // (1,1,H), fed to the next step
//   step.attention;   // (1,L), each row sums to 1
//
// Two decoders share that interface:
//
//   AttnDecoderRNN ("location", the tutorial's): the attention weights are a
//     learned function of the current input word and the decoder state only,
//     softmax(attn([embedded; hidden])) over all L slots — it scores *positions*,
//     never looks at what the encoder wrote there, and so also attends to the
//     zero rows after the source's end (as the tutorial does; it learns to
//     give them little weight).
//   BahdanauAttnDecoder: additive attention (Bahdanau et al., 2015) — each
//     encoder output is scored against the decoder state,
//     score_j = w_vᵀ tanh(W_q h + W_k e_j), and the padded positions j ≥ S are
//     masked out before the softmax, so their weight is exactly 0.
//
// Parameter names are PyTorch's (encoder.embedding.weight,
// encoder.gru.weight_ih_l0, decoder.attn.weight, decoder.attn_combine.weight,
// decoder.out.weight, …), so a state dict of the tutorial's model maps onto
// this one name for name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/gru.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "tensor/random.hpp"

namespace attograd::seq2seq {

// The tutorial's special tokens (models/text/vocabulary.hpp lays them out so).
inline constexpr int64_t kSos = 0;  // the decoder's first input
inline constexpr int64_t kEos = 1;  // ends every sentence, source and target

enum class DecoderKind { location, bahdanau };

std::string_view to_string(DecoderKind kind);
// "location" or "bahdanau"; throws naming the accepted values otherwise.
DecoderKind decoder_kind_from_string(std::string_view name);

struct Seq2SeqOptions {
  Seq2SeqOptions(int64_t source_vocabulary, int64_t target_vocabulary)
      : source_vocabulary_(source_vocabulary), target_vocabulary_(target_vocabulary) {}
  // H, the size of embeddings and GRU states (tutorial: 256).
  Seq2SeqOptions& hidden_size(int64_t value) {
    hidden_size_ = value;
    return *this;
  }
  // L, the longest source the encoder keeps, EOS included (tutorial: 10).
  Seq2SeqOptions& max_length(int64_t value) {
    max_length_ = value;
    return *this;
  }
  // Dropout on the decoder's embedded input word (tutorial: 0.1).
  Seq2SeqOptions& dropout(double value) {
    dropout_ = value;
    return *this;
  }
  Seq2SeqOptions& decoder(DecoderKind value) {
    decoder_ = value;
    return *this;
  }

  int64_t source_vocabulary() const { return source_vocabulary_; }
  int64_t target_vocabulary() const { return target_vocabulary_; }
  int64_t hidden_size() const { return hidden_size_; }
  int64_t max_length() const { return max_length_; }
  double dropout() const { return dropout_; }
  DecoderKind decoder() const { return decoder_; }

 private:
  int64_t source_vocabulary_;
  int64_t target_vocabulary_;
  int64_t hidden_size_ = 256;
  int64_t max_length_ = 10;
  double dropout_ = 0.1;
  DecoderKind decoder_ = DecoderKind::location;
};

// ---------------------------------------------------------------- encoder

struct EncoderOutput {
  Tensor outputs;      // (L,H): the GRU output after each source word; rows S..L−1 are zero
  Tensor hidden;       // (1,1,H): the final state, the decoder's first
  int64_t length = 0;  // S
};

// Embedding(V_in, H) → GRU(H, H), one word per step from a zero state.
class EncoderRNN : public nn::Module {
 public:
  EncoderRNN(int64_t vocabulary_size, int64_t hidden_size, int64_t max_length,
             Generator& generator = default_generator());

  // ids: S ids in [0, V_in), 1 ≤ S ≤ L -> outputs (L,H), hidden (1,1,H)
  EncoderOutput forward(const std::vector<int64_t>& ids);

  int64_t hidden_size() const { return hidden_size_; }
  int64_t max_length() const { return max_length_; }

  std::shared_ptr<nn::Embedding> embedding;
  std::shared_ptr<nn::GRU> gru;

 private:
  int64_t hidden_size_;
  int64_t max_length_;
};

// ---------------------------------------------------------------- decoders

// What a decoder attends over while it translates one sentence: prepared once
// per sentence by remember(), read at every step.
struct AttentionMemory {
  Tensor values;       // (L,H): the encoder outputs, zero after row S
  Tensor keys;         // (L,H): W_k · values (Bahdanau only; undefined for location)
  Tensor padding;      // (1,L): 1 at the padded positions j ≥ S, else 0 (Bahdanau only)
  int64_t length = 0;  // S
};

// A decoder step up to the output layer.
struct DecoderState {
  Tensor output;     // (1,H): the GRU's output, what the output layer reads
  Tensor hidden;     // (1,1,H): the new state
  Tensor attention;  // (1,L): the weights over the encoder outputs, summing to 1
};

struct DecoderStep {
  Tensor log_probs;  // (1,V_out): log-probabilities of the next word
  Tensor hidden;     // (1,1,H): the new state
  Tensor attention;  // (1,L): the weights over the encoder outputs, summing to 1
};

// The interface both decoders share, so Seq2Seq and the training loop do not
// care which one they drive. A step is split in two: advance() runs
// everything up to the GRU, predict() the output layer. Training applies
// predict() to all the steps of a sentence at once — (T,H) @ (H,V_out) is the
// same arithmetic as T products (1,H) @ (H,V_out), but it reads the largest
// matrix of the model and writes its gradient once per sentence instead of
// once per word.
class AttentionDecoder : public nn::Module {
 public:
  using nn::Module::Module;

  // encoded -> the memory every step of this sentence reads
  virtual AttentionMemory remember(const EncoderOutput& encoded) = 0;
  // The previous word (SOS first) and the state (1,1,H) -> the GRU output,
  // the new state and the attention weights.
  virtual DecoderState advance(int64_t input_word, const Tensor& hidden,
                               const AttentionMemory& memory) = 0;
  // The output layer, out: Linear(H -> V_out).
  virtual nn::Linear& output_layer() = 0;
  // outputs: (T,H) -> log-probabilities (T,V_out): log_softmax(out(outputs)).
  // With `logits`, out(outputs) already computed without recording (greedy
  // decoding computes each step's to choose the next word), the fast path
  // records those values as out's output instead of computing them a second
  // time (autograd/fast/forward_values.hpp).
  Tensor predict(const Tensor& outputs, const Tensor& logits = Tensor());

  // One whole step, the tutorial's decoder(input, hidden, encoder_outputs):
  // advance, then predict -> (1,V_out), (1,1,H), (1,L).
  DecoderStep forward(int64_t input_word, const Tensor& hidden, const AttentionMemory& memory);

  virtual int64_t output_size() const = 0;  // V_out
  virtual int64_t max_length() const = 0;   // L
  // The generator of the dropout on the embedded input (reseeded by the
  // training loop so that a resumed run draws the same masks).
  virtual Generator& dropout_generator() = 0;
};

// The tutorial's AttnDecoderRNN, line for line:
//
//   embedded = dropout(embedding(input))                     (1,H)
//   weights  = softmax(attn([embedded; hidden]))             (1,2H) -> (1,L)
//   context  = weights @ encoder_outputs  (torch.bmm)        (1,L) @ (L,H) -> (1,H)
//   x        = relu(attn_combine([embedded; context]))       (1,2H) -> (1,H)
//   output, hidden = gru(x, hidden)                          (1,H)
//   log_probs = log_softmax(out(output))                     (1,V_out)
class AttnDecoderRNN : public AttentionDecoder {
 public:
  AttnDecoderRNN(int64_t hidden_size, int64_t output_size, double dropout_p, int64_t max_length,
                 Generator& generator = default_generator());

  AttentionMemory remember(const EncoderOutput& encoded) override;
  // input_word: an id, hidden: (1,1,H), memory.values: (L,H) -> (1,H), (1,1,H), (1,L)
  DecoderState advance(int64_t input_word, const Tensor& hidden,
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

// Additive attention, d2l's AdditiveAttention with the query and key sizes
// both H:  score_j = w_vᵀ tanh(W_q q + W_k k_j), no biases.
class AdditiveAttention : public nn::Module {
 public:
  explicit AdditiveAttention(int64_t hidden_size, Generator& generator = default_generator());

  // keys: (L,H) -> W_k keys (L,H); computed once per sentence
  Tensor project_keys(const Tensor& keys);
  // query: (1,H), projected_keys: (L,H), padding: (1,L) with 1 where masked
  //   -> weights (1,L), summing to 1 over the unmasked positions
  Tensor forward(const Tensor& query, const Tensor& projected_keys, const Tensor& padding);

  std::shared_ptr<nn::Linear> W_q;  // H -> H
  std::shared_ptr<nn::Linear> W_k;  // H -> H
  std::shared_ptr<nn::Linear> w_v;  // H -> 1
};

// A GRU decoder with additive attention (the newer PyTorch tutorial's
// BahdanauAttention decoder):
//
//   embedded = dropout(embedding(input))                     (1,H)
//   weights  = masked softmax_j(w_vᵀ tanh(W_q hidden + W_k e_j))   (1,L)
//   context  = weights @ encoder_outputs                     (1,H)
//   output, hidden = gru([embedded; context], hidden)        (1,2H) -> (1,H)
//   log_probs = log_softmax(out(output))                     (1,V_out)
class BahdanauAttnDecoder : public AttentionDecoder {
 public:
  BahdanauAttnDecoder(int64_t hidden_size, int64_t output_size, double dropout_p,
                      int64_t max_length, Generator& generator = default_generator());

  AttentionMemory remember(const EncoderOutput& encoded) override;
  // input_word: an id, hidden: (1,1,H), memory: (L,H) values and keys -> (1,H), (1,1,H), (1,L)
  DecoderState advance(int64_t input_word, const Tensor& hidden,
                       const AttentionMemory& memory) override;
  nn::Linear& output_layer() override { return *out; }

  int64_t output_size() const override { return output_size_; }
  int64_t max_length() const override { return max_length_; }
  Generator& dropout_generator() override { return dropout->generator(); }

  std::shared_ptr<nn::Embedding> embedding;  // (V_out, H)
  std::shared_ptr<nn::Dropout> dropout;
  std::shared_ptr<AdditiveAttention> attention;
  std::shared_ptr<nn::GRU> gru;     // 2H -> H
  std::shared_ptr<nn::Linear> out;  // H -> V_out

 private:
  int64_t hidden_size_;
  int64_t output_size_;
  int64_t max_length_;
};

// ---------------------------------------------------------------- the whole model

// A greedy translation: the words chosen, and the attention of every step.
struct Translation {
  std::vector<int64_t> words;  // the output ids, EOS not included
  bool reached_eos = false;    // false when it stopped at L steps without EOS
  // One row of L weights per decoder step (the EOS step included), row-major.
  std::vector<double> attention;
  int64_t steps = 0;  // rows of `attention`
};

// The sum of a pair's NLL terms, and how many target words it was
// averaged over when reported (the tutorial divides by the target length
// even when greedy decoding stopped early).
struct PairLoss {
  Tensor total;  // (): Σ_t −log p(target_t)
  int64_t target_length = 0;
};

class Seq2Seq : public nn::Module {
 public:
  explicit Seq2Seq(const Seq2SeqOptions& options, Generator& generator = default_generator());

  // The tutorial's train() for one pair, up to the backward. source ends in
  // EOS (S ≤ L ids), target ends in EOS. The decoder starts from SOS and the
  // encoder's final state. With teacher forcing, step t is fed target t−1;
  // without, it is fed its own previous argmax and stops after producing EOS.
  PairLoss pair_loss(const std::vector<int64_t>& source, const std::vector<int64_t>& target,
                     bool teacher_forcing);

  // Greedy decoding in evaluation mode (no dropout, nothing recorded), at most
  // `max_steps` words (default L). source ends in EOS, S ≤ L.
  Translation translate(const std::vector<int64_t>& source, int64_t max_steps = 0);

  // Name both embedding tables' gradients as the rows read
  // (nn::EmbeddingOptions::sparse); off by default.
  void set_sparse_embeddings(bool on);

  const Seq2SeqOptions& options() const { return options_; }

  std::shared_ptr<EncoderRNN> encoder;
  std::shared_ptr<AttentionDecoder> decoder;

 protected:
  std::string extra_repr() const override;

 private:
  Seq2SeqOptions options_;
};

}  // namespace attograd::seq2seq
