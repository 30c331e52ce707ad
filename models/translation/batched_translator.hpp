// models/translation/batched_translator.hpp — what d2l's two batched
// translators share: the BatchedTranslator interface that both the GRU
// model with Bahdanau attention (models/batched_seq2seq/) and the
// Transformer (models/transformer/) implement, and the training loop,
// translation and evaluation written once against it (d2l's
// train_seq2seq, predict_seq2seq and bleu).
//
// Legend: B batch, T num_steps (every sentence cut or padded to T ids),
// S source positions (= T), V_tgt the target vocabulary size.
//
//   BatchedSeq2Seq model(BatchedSeq2SeqOptions(V_src, V_tgt), init);  // or a Transformer
//   TrainingReport report = train(model, data, BatchedTrainingOptions());
//   SentenceTranslation t = translate_sentence(model, data.source_vocabulary,
//                                              data.target_vocabulary, "i'm home .", 10);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/text/batching.hpp"
#include "models/text/vocabulary.hpp"
#include "models/translation/beam_search.hpp"
#include "models/translation/translation.hpp"
#include "nn/lr_scheduler.hpp"
#include "nn/module.hpp"
#include "tensor/random.hpp"

namespace attograd::translation {

// The special tokens both batched recipes use, in the batched (d2l) layout of
// models/text/vocabulary.hpp.
inline constexpr int64_t kPad = text::special_id(text::kBatchedLayout, text::TokenRole::pad);
inline constexpr int64_t kBos = text::special_id(text::kBatchedLayout, text::TokenRole::start);
inline constexpr int64_t kEos = text::special_id(text::kBatchedLayout, text::TokenRole::end);

// A translation of one sentence by a BatchedTranslator (greedy, or the best
// of beam search's).
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
// same loop trains and scores d2l's GRU model (models/batched_seq2seq/) and
// the Transformer (models/transformer/): logits under teacher forcing, and a
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

// Where a training stands between two steps, besides the parameters and
// Adam's state (which nn::save_training_state keeps): with both, a resumed
// run takes exactly the steps the uninterrupted one would have taken — the
// same batches, the same dropout masks, the same learning rates.
struct TrainingPosition {
  int64_t epochs_done = 0;   // complete epochs (the schedule's epoch)
  int64_t batches_done = 0;  // steps taken in epoch epochs_done + 1
  // The batch order's generator before that epoch's shuffle (text::BatchIterator::Position).
  std::string batch_order;
  // Every dropout generator's state (Generator::state): the model's, then
  // each replica's, in module order.
  std::vector<std::string> dropout_generators;
  // The epoch in progress so far (all 0 when batches_done is 0).
  double loss_sum = 0;
  int64_t tokens = 0;
  double first_batch_loss = 0;
  double seconds = 0;
  TrainingReport report;  // the complete epochs
};

// The training loop of train() as an object that can stop between two steps
// and be saved and restored there:
//
//   BatchedTrainer trainer(model, data, options);
//   if (resuming) { nn::load_training_state(path, model, &trainer.optimizer());
//                   trainer.restore(saved_position); }
//   bool done = trainer.run({.on_epoch = …, .stop_requested = [&] { return interrupted; }});
//   nn::save_training_state(path, model, &trainer.optimizer(), …trainer.position()…);
class BatchedTrainer {
 public:
  BatchedTrainer(BatchedTranslator& model, const text::BatchedData& data,
                 const BatchedTrainingOptions& options);
  ~BatchedTrainer();
  BatchedTrainer(const BatchedTrainer&) = delete;
  BatchedTrainer& operator=(const BatchedTrainer&) = delete;

  struct Hooks {
    // After each epoch, its scheduler step included.
    std::function<void(const EpochReport&)> on_epoch;
    // Before each step: returning true stops the run there.
    std::function<bool()> stop_requested;
  };
  // Trains until options.epochs() are done (returns true) or stop_requested
  // says stop (returns false; run again to continue).
  bool run(const Hooks& hooks);

  const TrainingReport& report() const;
  nn::Optimizer& optimizer();
  // Where the run stands now (see TrainingPosition).
  TrainingPosition position() const;
  // Continues from `position` (saved from a trainer of the same model,
  // options and data); load the parameters and Adam's state first. Throws
  // attograd::Error, before changing anything, when it does not fit.
  void restore(const TrainingPosition& position);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// ---------------------------------------------------------------- translating

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

// Translates every distinct source sentence of `pairs` (already normalised,
// e.g. by read_pairs with Normalization::kD2l; greedily, or by beam search
// when beam.beam_size() > 1) and scores the outputs.
Evaluation evaluate(BatchedTranslator& model, const text::Vocabulary& source_vocabulary,
                    const text::Vocabulary& target_vocabulary,
                    const std::vector<text::SentencePair>& pairs, int64_t num_steps,
                    const decoding::BeamSearchOptions& beam = {});

// A greedy Prediction as a hypothesis scored with length penalty α.
decoding::Hypothesis to_hypothesis(const Prediction& prediction, double alpha);

}  // namespace attograd::translation
