// models/batched_seq2seq.hpp — d2l.ai's batched encoder–decoder with
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
//   TrainingReport report = train(model, data, BatchedTrainingOptions());  // 250 epochs
//   SentenceTranslation t = translate_sentence(model, data.source_vocabulary,
//                                              data.target_vocabulary, "i'm home .", 10);
//   t.output_words;  // {"je", "suis", "chez", "moi", "."}
//   t.attention;     // one row of S weights per output step
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
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/encoder_decoder.hpp"
#include "models/text/batching.hpp"
#include "models/text/bleu.hpp"
#include "models/text/vocabulary.hpp"
#include "models/translation/beam_search.hpp"
#include "nn/attention.hpp"
#include "nn/embedding.hpp"
#include "nn/gru.hpp"
#include "nn/linear.hpp"
#include "nn/lr_scheduler.hpp"
#include "nn/module.hpp"
#include "tensor/random.hpp"

namespace attograd::batched_seq2seq {

// The special tokens this recipe uses, in the batched (d2l) layout of
// models/text/vocabulary.hpp.
inline constexpr int64_t kPad = text::special_id(text::kBatchedLayout, text::TokenRole::pad);
inline constexpr int64_t kBos = text::special_id(text::kBatchedLayout, text::TokenRole::start);
inline constexpr int64_t kEos = text::special_id(text::kBatchedLayout, text::TokenRole::end);

using encoder_decoder::AttentionMemory;
using encoder_decoder::EncoderOutput;

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
  // valid_lens (models/encoder_decoder.hpp)
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

// A translation of one sentence (greedy, or the best of beam search's:
// models/batched_beam_decoder.hpp).
struct Prediction {
  std::vector<int64_t> ids;  // output ids, <eos> not included
  bool reached_eos = false;  // false when it stopped after num_steps steps
  // One row of `source_positions` weights per decoder step, the <eos> step
  // included (as d2l keeps it), row-major: steps × source_positions.
  std::vector<double> attention;
  int64_t steps = 0;
  int64_t source_positions = 0;  // S = num_steps
  // Σ log p of the chosen ids over the `steps` steps (<eos> included when
  // reached), log p = log_softmax(logits): what beam search ranks by.
  double log_probability = 0;
};

// What train, translate_sentence and evaluate below need of a model, so the
// same loop trains and scores this recipe's GRU model and the Transformer
// (models/transformer/transformer.hpp): logits under teacher forcing, and a
// greedy prediction.
class BatchedTranslator : public nn::Module {
 public:
  using nn::Module::Module;

  // source: (B,T) with valid lengths, decoder_inputs: (B,T') ids -> logits (B,T',V_tgt)
  virtual Tensor forward(const text::PaddedArray& source,
                         const std::vector<int64_t>& decoder_inputs,
                         const Shape& decoder_shape) = 0;

  // d2l's loss with teacher forcing: the decoder reads <bos> followed by the
  // target without its last id, and
  //   loss_b = (1/T) Σ_{t < valid_len_b} −log p(target[b,t])     (B)
  // (nn::sequence_cross_entropy; padding counts in T, as in d2l).
  Tensor loss(const text::PaddedArray& source, const text::PaddedArray& target);

  // Greedy decoding in evaluation mode, nothing recorded: source_ids are the
  // sentence's ids with its <eos> (cut to num_steps if longer); at most
  // num_steps output ids, stopping at <eos>.
  virtual Prediction predict(const std::vector<int64_t>& source_ids, int64_t num_steps) = 0;

  // Beam search (models/translation/beam_search.hpp) from the same source:
  // the K best hypotheses, best first; K = 1 gives predict's output.
  virtual std::vector<decoding::Hypothesis> beam_predict(
      const std::vector<int64_t>& source_ids, int64_t num_steps,
      const decoding::BeamSearchOptions& options) = 0;

  virtual int64_t source_vocabulary_size() const = 0;
  virtual int64_t target_vocabulary_size() const = 0;

  // A model of the same options built apart: its own layers, its values and
  // dropout generators drawn from `generator`. train() makes these as the
  // replicas of nn::DataParallel, which copies this model's values into them.
  virtual std::shared_ptr<BatchedTranslator> replica(Generator& generator) const = 0;
};

class BatchedSeq2Seq : public BatchedTranslator {
 public:
  // Builds the layers from `generator`, then gives every Linear and GRU
  // weight Xavier-uniform values (d2l's xavier_init_weights).
  explicit BatchedSeq2Seq(const BatchedSeq2SeqOptions& options,
                          Generator& generator = default_generator());

  Tensor forward(const text::PaddedArray& source, const std::vector<int64_t>& decoder_inputs,
                 const Shape& decoder_shape) override;
  Prediction predict(const std::vector<int64_t>& source_ids, int64_t num_steps) override;
  // models/batched_beam_decoder.hpp: the hypotheses as rows of one decoder batch.
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

// Xavier-uniform values for the weight of every Linear and the weight_ih /
// weight_hh of every GRU under `module` (biases and embeddings are left as
// built), drawn in registration order.
void xavier_init_weights(nn::Module& module, Generator& generator);

// ---------------------------------------------------------------- training

struct BatchedTrainingOptions {
  // Passes over the data (d2l: 250).
  BatchedTrainingOptions& epochs(int64_t value) {
    epochs_ = value;
    return *this;
  }
  // Adam's learning rate (d2l: 0.005).
  BatchedTrainingOptions& lr(double value) {
    lr_ = value;
    return *this;
  }
  // Sentence pairs per step (d2l: 64).
  BatchedTrainingOptions& batch_size(int64_t value) {
    batch_size_ = value;
    return *this;
  }
  // Gradients are scaled down to this global norm when larger (d2l: 1).
  BatchedTrainingOptions& clip_norm(double value) {
    clip_norm_ = value;
    return *this;
  }
  // Seed of the order of the examples in each epoch.
  BatchedTrainingOptions& seed(uint64_t value) {
    seed_ = value;
    return *this;
  }
  // The learning rate per epoch, from lr (default: constant); stepped after
  // each epoch, as PyTorch's schedulers are.
  BatchedTrainingOptions& lr_schedule(nn::LRSchedule value) {
    lr_schedule_ = std::move(value);
    return *this;
  }
  // Copies of the model that share every batch, each taking 1/N of its
  // pairs on its own thread (nn::DataParallel; default 1, the model alone).
  // The training then depends on N (the order of the gradient's sums, each
  // replica's dropout masks), never on the thread count.
  BatchedTrainingOptions& replicas(int64_t value) {
    replicas_ = value;
    return *this;
  }

  int64_t epochs() const { return epochs_; }
  double lr() const { return lr_; }
  int64_t batch_size() const { return batch_size_; }
  double clip_norm() const { return clip_norm_; }
  uint64_t seed() const { return seed_; }
  const nn::LRSchedule& lr_schedule() const { return lr_schedule_; }
  int64_t replicas() const { return replicas_; }

 private:
  int64_t epochs_ = 250;
  double lr_ = 0.005;
  int64_t batch_size_ = 64;
  double clip_norm_ = 1.0;
  uint64_t seed_ = 0;
  nn::LRSchedule lr_schedule_ = nn::LRSchedule::constant();
  int64_t replicas_ = 1;
};

struct EpochReport {
  int64_t epoch = 0;  // 1-based
  double loss = 0;    // d2l's figure: Σ_batches Σ_b loss_b / (valid target tokens)
  // The same figure for the epoch's first mini-batch alone, before its step:
  // epoch 1's is the untrained model's loss.
  double first_batch_loss = 0;
  int64_t tokens = 0;  // valid target tokens seen this epoch
  double seconds = 0;  // wall time of the epoch
  double lr = 0;       // Adam's learning rate during the epoch
};

struct TrainingReport {
  std::vector<EpochReport> epochs;
  int64_t replicas = 1;  // copies of the model that shared each batch
  double final_loss = 0;
  int64_t tokens = 0;
  double seconds = 0;
  double tokens_per_second() const {
    return seconds > 0 ? static_cast<double>(tokens) / seconds : 0;
  }
  double ms_per_epoch() const {
    return epochs.empty() ? 0 : 1000.0 * seconds / static_cast<double>(epochs.size());
  }
};

// d2l's train_seq2seq: Adam, one step per mini-batch on Σ_b loss_b, the
// gradients clipped to clip_norm first. on_epoch (if set) sees each epoch's
// report as it ends. The model is left in training mode. A NaN or infinite
// gradient norm (an overflow) throws nn::NonFiniteNormError before that
// batch's step, so the weights stay those of the last finite step.
TrainingReport train(BatchedTranslator& model, const text::BatchedData& data,
                     const BatchedTrainingOptions& options,
                     const std::function<void(const EpochReport&)>& on_epoch = {});

// ---------------------------------------------------------------- translating

struct SentenceTranslation {
  std::vector<std::string> source_words;     // after d2l's preprocessing, cut to num_steps − 1
  std::vector<std::string> output_words;     // <eos> not included
  Prediction prediction;                     // the best
  std::vector<decoding::ScoredWords> nbest;  // the K best, best first (greedy: the one)
  int64_t unknown_words = 0;                 // source words that became <unk>
  int64_t dropped_words = 0;                 // source words beyond num_steps − 1, not read
};

// d2l's predict_seq2seq on raw text: preprocess_d2l (lower case, spaces
// before punctuation), split, encode, append <eos>, decode — greedily
// (predict) when the beam size is 1, else by beam search (beam_predict).
// Throws on invalid UTF-8 or an empty sentence.
SentenceTranslation translate_sentence(BatchedTranslator& model,
                                       const text::Vocabulary& source_vocabulary,
                                       const text::Vocabulary& target_vocabulary,
                                       std::string_view sentence, int64_t num_steps,
                                       const decoding::BeamSearchOptions& beam = {});

// d2l's four test sentences and their references, English -> French.
struct ReferencePair {
  std::string source;
  std::string reference;
};
const std::vector<ReferencePair>& textbook_test_pairs();

struct EvaluatedPair {
  std::string source;
  std::vector<std::string> references;
  std::string output;
  double sentence_bleu = 0;  // d2l_sentence_bleu, k = 2, against the reference it fits best
  std::vector<decoding::ScoredWords> nbest;  // the K best, best first (output is the first)
};

struct Evaluation {
  std::vector<EvaluatedPair> pairs;  // one per distinct source sentence, first-seen order
  text::BleuDetails corpus;          // BLEU-4 with every reference of each source
  double mean_sentence_bleu = 0;     // mean of the k = 2 scores
  int64_t unknown_words = 0;
  int64_t dropped_words = 0;
};

// Translates every distinct source sentence of `pairs` (already normalised,
// e.g. by read_pairs with Normalization::kD2l; greedily, or by beam search
// when beam.beam_size() > 1) and scores the outputs.
Evaluation evaluate(BatchedTranslator& model, const text::Vocabulary& source_vocabulary,
                    const text::Vocabulary& target_vocabulary,
                    const std::vector<text::SentencePair>& pairs, int64_t num_steps,
                    const decoding::BeamSearchOptions& beam = {});

}  // namespace attograd::batched_seq2seq
