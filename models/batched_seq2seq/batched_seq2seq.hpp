// models/batched_seq2seq/batched_seq2seq.hpp — d2l.ai's batched encoder–decoder with
// Bahdanau attention ("Bahdanau Attention", d2l §11.4), English -> French.
//
// Legend: B batch, T num_steps (every sentence cut or padded to T ids),
// S source positions (= T), E embedding size, H hidden size, L GRU layers,
// V_src / V_tgt vocabulary sizes.
//
//   text::BatchedData data = text::prepare_batched_data(pairs);   // models/text
//   Generator init(0);
//   BatchedSeq2Seq model(BatchedSeq2SeqOptions(data.source_vocabulary.size(),
//                                              data.target_vocabulary.size()), init);
//   translation::TrainingReport report =
//       translation::train(model, data, translation::BatchedTrainingOptions());  // 250 epochs
//   translation::SentenceTranslation t = translation::translate_sentence(
//       model, data.source_vocabulary, data.target_vocabulary, "i'm home .", 10);
//   t.output_words;     // {"je", "suis", "chez", "moi", "."}
//   t.best.attention;   // one row of S weights per output step
//
// The training loop, translation and evaluation are d2l's, shared with the
// Transformer through the BatchedTranslator interface
// (models/translation/batched_translator.hpp); this file holds the model.
//
// The model, step by step:
//
//   encoder   e = Embedding(source) (B,T,E) -> L-layer GRU -> outputs (B,S,H), state (L,B,H)
//   decoder   for t = 1..T:
//               query   = state[L−1]                              (B,1,H)  top layer's last state
//               context = AdditiveAttention(query, outputs, outputs, source valid lengths)  (B,1,H)
//               x       = [context ; Embedding(y_{t−1})]          (B,H+E)
//               out, state = GRU step(x, state)                   (B,H)
//             logits = Dense([out_1 … out_T])                      (B,T,V_tgt)
//
// Padding. A source row has valid length n ≤ T: its ids after n are <pad>.
// The encoder keeps each row's state fixed once its sentence has ended (as
// PyTorch's pack_padded_sequence does), so the final state is the state after
// the last real token and the outputs at padded steps are zero; the decoder's
// attention gives padded positions weight exactly 0. d2l's encoder instead
// runs its GRU over the <pad> ids too, which makes the decoder's first state
// depend on how much padding a sentence got. On the target side the loss
// ignores positions at or after the target's valid length, and the decoder
// is causal, so a padded target id changes neither the loss nor a gradient.
//
// Parameter names follow d2l's PyTorch model, so a state dict maps over:
// encoder.embedding.weight, encoder.rnn.weight_ih_l0 …, decoder.attention.W_k.weight,
// decoder.attention.W_q.weight, decoder.attention.w_v.weight,
// decoder.embedding.weight, decoder.rnn.…, decoder.dense.weight/bias.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/text/batching.hpp"
#include "models/translation/batched_translator.hpp"
#include "models/translation/beam_search.hpp"
#include "models/translation/encoder_decoder.hpp"
#include "nn/attention.hpp"
#include "nn/embedding.hpp"
#include "nn/gru.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "tensor/random.hpp"

namespace attograd::batched_seq2seq {

using encoder_decoder::AttentionMemory;
using encoder_decoder::EncoderOutput;
using translation::BatchedTranslator;
using translation::kBos;
using translation::kEos;
using translation::kPad;
using translation::Prediction;

struct BatchedSeq2SeqOptions {
  BatchedSeq2SeqOptions(int64_t source_vocabulary, int64_t target_vocabulary)
      : source_vocabulary_(source_vocabulary), target_vocabulary_(target_vocabulary) {}
  // E, the size of both embeddings (d2l: 32).
  BatchedSeq2SeqOptions& embed_size(int64_t value) {
    embed_size_ = value;
    return *this;
  }
  // H, the size of GRU states and of the attention's hidden layer (d2l: 32).
  BatchedSeq2SeqOptions& hidden_size(int64_t value) {
    hidden_size_ = value;
    return *this;
  }
  // L, the stacked GRU layers of encoder and decoder (d2l: 2).
  BatchedSeq2SeqOptions& num_layers(int64_t value) {
    num_layers_ = value;
    return *this;
  }
  // Dropout between GRU layers and on the attention weights (d2l: 0.1).
  BatchedSeq2SeqOptions& dropout(double value) {
    dropout_ = value;
    return *this;
  }

  int64_t source_vocabulary() const { return source_vocabulary_; }
  int64_t target_vocabulary() const { return target_vocabulary_; }
  int64_t embed_size() const { return embed_size_; }
  int64_t hidden_size() const { return hidden_size_; }
  int64_t num_layers() const { return num_layers_; }
  double dropout() const { return dropout_; }

 private:
  int64_t source_vocabulary_;
  int64_t target_vocabulary_;
  int64_t embed_size_ = 32;
  int64_t hidden_size_ = 32;
  int64_t num_layers_ = 2;
  double dropout_ = 0.1;
};

// ---------------------------------------------------------------- encoder

// Embedding(V_src, E) -> GRU(E, H, L layers, dropout between layers).
class Seq2SeqEncoder : public nn::Module {
 public:
  explicit Seq2SeqEncoder(const BatchedSeq2SeqOptions& options,
                          Generator& generator = default_generator());

  // ids: (B,T) row-major, valid_lens: (B) in [1, T] -> outputs (B,T,H), hidden (L,B,H),
  // valid_lens (models/translation/encoder_decoder.hpp)
  EncoderOutput forward(const std::vector<int64_t>& ids, const Shape& shape,
                        const std::vector<int64_t>& valid_lens);

  std::shared_ptr<nn::Embedding> embedding;
  std::shared_ptr<nn::GRU> rnn;
};

// ---------------------------------------------------------------- decoder

// What the decoder carries from step to step.
struct DecoderState {
  AttentionMemory memory;  // the encoder outputs (keys and values), W_k · them, source lengths
  Tensor hidden;           // (L,B,H): the GRU state
};

class Seq2SeqAttentionDecoder : public nn::Module {
 public:
  explicit Seq2SeqAttentionDecoder(const BatchedSeq2SeqOptions& options,
                                   Generator& generator = default_generator());

  // The encoder's result -> the state of the first step.
  DecoderState init_state(const EncoderOutput& encoded);

  // ids: (B,T) row-major, the input token of each step (teacher forcing:
  // <bos> then the target shifted right) -> logits (B,T,V_tgt). `state`
  // advances T steps.
  Tensor forward(const std::vector<int64_t>& ids, const Shape& shape, DecoderState& state);

  // (B,T,S): the attention weights of every step of the last forward, without history.
  const Tensor& attention_weights() const { return attention_weights_; }

  std::shared_ptr<nn::AdditiveAttention> attention;  // (key H, query H, hidden H)
  std::shared_ptr<nn::Embedding> embedding;          // (V_tgt, E)
  std::shared_ptr<nn::GRU> rnn;                      // E + H -> H, L layers
  std::shared_ptr<nn::Linear> dense;                 // H -> V_tgt

 private:
  Tensor attention_weights_;
};

// ---------------------------------------------------------------- the model

class BatchedSeq2Seq : public BatchedTranslator {
 public:
  // Builds the layers from `generator`, then gives every Linear and GRU
  // weight Xavier-uniform values (d2l's xavier_init_weights).
  explicit BatchedSeq2Seq(const BatchedSeq2SeqOptions& options,
                          Generator& generator = default_generator());

  Tensor forward(const text::PaddedArray& source, const std::vector<int64_t>& decoder_inputs,
                 const Shape& decoder_shape) override;
  Prediction predict(const std::vector<int64_t>& source_ids, int64_t num_steps) override;
  // models/batched_seq2seq/beam_decoder.hpp: the hypotheses as rows of one decoder batch.
  std::vector<decoding::Hypothesis> beam_predict(
      const std::vector<int64_t>& source_ids, int64_t num_steps,
      const decoding::BeamSearchOptions& options) override;
  int64_t source_vocabulary_size() const override { return options_.source_vocabulary(); }
  int64_t target_vocabulary_size() const override { return options_.target_vocabulary(); }
  std::shared_ptr<BatchedTranslator> replica(Generator& generator) const override;

  // The encoder's output for one sentence as predict reads it: source_ids
  // cut or padded to num_steps, valid length min(ids, num_steps) -> outputs
  // (1,S,H), hidden (L,1,H). Records a graph unless called under a NoGradGuard.
  EncoderOutput encode_sentence(const std::vector<int64_t>& source_ids, int64_t num_steps);

  const BatchedSeq2SeqOptions& options() const { return options_; }

  std::shared_ptr<Seq2SeqEncoder> encoder;
  std::shared_ptr<Seq2SeqAttentionDecoder> decoder;

 protected:
  std::string extra_repr() const override;

 private:
  BatchedSeq2SeqOptions options_;
};

}  // namespace attograd::batched_seq2seq
