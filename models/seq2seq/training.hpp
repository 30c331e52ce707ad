// models/seq2seq/training.hpp — the tutorial's trainIters, with
// checkpoints that resume exactly.
//
//   Corpus corpus = load_corpus(CorpusOptions());
//   Generator init(seed);
//   Seq2Seq model(Seq2SeqOptions(corpus.source_vocabulary.size(),
//                                corpus.target_vocabulary.size()), init);
//   Trainer trainer(model, encode_pairs(corpus.split.train, …), TrainingOptions());
//   trainer.run(hooks);   // 75,000 iterations of one random pair each
//
// One iteration (the tutorial's train()): pick a training pair at random,
// flip a coin for teacher forcing (probability 0.5), run the encoder and the
// decoder, backpropagate the NLL summed over the target words, and take one
// SGD step (lr 0.01) on every parameter. The reported loss is that sum
// divided by the target's length, averaged over an interval.
//
// Reproducibility: iteration i draws its pair, its coin and its dropout masks
// from a generator seeded with mix(seed, i), so the random state at any
// iteration is a function of the seed and the iteration number alone. A
// checkpoint therefore needs to store only those two (plus the parameters,
// the optimizer's state and the loss accumulators) for a resumed run to
// compute exactly what an uninterrupted one would have.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/seq2seq/corpus.hpp"
#include "models/seq2seq/seq2seq.hpp"
#include "models/text/vocabulary.hpp"
#include "nn/optim.hpp"

namespace attograd::seq2seq {

struct TrainingOptions {
  // Training iterations in all, one random pair each (tutorial: 75,000).
  TrainingOptions& iterations(int64_t value) {
    iterations_ = value;
    return *this;
  }
  // SGD's learning rate for the encoder and the decoder (tutorial: 0.01).
  TrainingOptions& learning_rate(double value) {
    learning_rate_ = value;
    return *this;
  }
  // The probability of teacher forcing for a pair (tutorial: 0.5).
  TrainingOptions& teacher_forcing(double value) {
    teacher_forcing_ = value;
    return *this;
  }
  TrainingOptions& seed(uint64_t value) {
    seed_ = value;
    return *this;
  }
  // Iterations per reported average loss (tutorial: print_every = 5000).
  TrainingOptions& print_every(int64_t value) {
    print_every_ = value;
    return *this;
  }
  // Iterations per point of the loss curve (tutorial: plot_every = 100).
  TrainingOptions& plot_every(int64_t value) {
    plot_every_ = value;
    return *this;
  }
  // Embedding gradients named as the rows read (nn::EmbeddingOptions::sparse),
  // which the fast path keeps sparse: the same training, faster.
  TrainingOptions& sparse_embeddings(bool value) {
    sparse_embeddings_ = value;
    return *this;
  }

  int64_t iterations() const { return iterations_; }
  double learning_rate() const { return learning_rate_; }
  double teacher_forcing() const { return teacher_forcing_; }
  uint64_t seed() const { return seed_; }
  int64_t print_every() const { return print_every_; }
  int64_t plot_every() const { return plot_every_; }
  bool sparse_embeddings() const { return sparse_embeddings_; }

 private:
  int64_t iterations_ = 75000;
  double learning_rate_ = 0.01;
  double teacher_forcing_ = 0.5;
  uint64_t seed_ = 1;
  int64_t print_every_ = 5000;
  int64_t plot_every_ = 100;
  bool sparse_embeddings_ = true;
};

// Everything about a run's past that its future depends on or reports.
struct TrainingProgress {
  int64_t iteration = 0;                // iterations done
  double print_loss_total = 0;          // Σ loss per word since the last report
  double plot_loss_total = 0;           // Σ loss per word since the last curve point
  std::vector<double> plot_losses;      // the loss curve: one average per plot_every
  std::vector<double> interval_losses;  // one average per print_every (the loss table)
  // The loss per word of the first iteration, the untrained model's (0: none
  // yet; a checkpoint saved without it gets the first iteration after resuming).
  double first_loss = 0;
  double train_seconds = 0;  // wall-clock time spent in iterations, over all sessions
};

// A report after each print_every iterations (and at the end of a run).
struct IntervalReport {
  int64_t iteration = 0;             // iterations done
  int64_t iterations = 0;            // of this many
  int64_t interval_length = 0;       // iterations averaged
  double average_loss = 0;           // mean loss per target word over the interval
  double iterations_per_second = 0;  // over the interval, this session
  double seconds_left = 0;           // estimated at that rate
};

class Trainer {
 public:
  // `pairs` is the encoded training split. The optimizer is SGD over all of
  // model's parameters, named as the model names them.
  Trainer(Seq2Seq& model, std::vector<EncodedPair> pairs, const TrainingOptions& options);

  // Iteration `iteration` (1-based) of the tutorial's loop: returns the loss
  // per target word of the pair it trained on.
  double train_iteration(int64_t iteration);

  struct Hooks {
    std::function<void(const IntervalReport&)> report;  // after each print_every
    std::function<void()> checkpoint;                   // after each checkpoint_every
    int64_t checkpoint_every = 0;                       // 0: never
    std::function<bool()> stop_requested;               // checked before each iteration
  };
  // Trains from progress().iteration + 1 up to options().iterations(), or
  // until stop_requested() says so. Returns true if all iterations are done.
  bool run(const Hooks& hooks);

  Seq2Seq& model() { return model_; }
  nn::SGD& optimizer() { return *optimizer_; }
  const TrainingOptions& options() const { return options_; }
  void set_iterations(int64_t iterations) { options_.iterations(iterations); }
  TrainingProgress& progress() { return progress_; }
  const TrainingProgress& progress() const { return progress_; }
  const std::vector<EncodedPair>& pairs() const { return pairs_; }

 private:
  Seq2Seq& model_;
  std::vector<EncodedPair> pairs_;
  TrainingOptions options_;
  std::unique_ptr<nn::SGD> optimizer_;
  TrainingProgress progress_;
};

// ---------------------------------------------------------------- checkpoints

// What a checkpoint says besides the tensors: enough to rebuild the model,
// its vocabularies, its data split and the run that trained it.
struct CheckpointInfo {
  Seq2SeqOptions model = Seq2SeqOptions(0, 0);
  text::Vocabulary source_vocabulary = text::make_tutorial_vocabulary();
  text::Vocabulary target_vocabulary = text::make_tutorial_vocabulary();
  CorpusOptions data;
  TrainingOptions training;
  TrainingProgress progress;
};

// Writes the model's parameters, the optimizer's state (if not null) and
// `info` to `path` as one safetensors file, atomically.
void save_checkpoint(const std::filesystem::path& path, const Seq2Seq& model,
                     const nn::Optimizer* optimizer, const CheckpointInfo& info);

// The information part of a checkpoint. Throws attograd::Error naming the
// path when the file is not a translation checkpoint or is damaged.
CheckpointInfo read_checkpoint_info(const std::filesystem::path& path);

// A model built as the checkpoint describes, with its parameters loaded.
std::unique_ptr<Seq2Seq> load_model(const std::filesystem::path& path, const CheckpointInfo& info);

// Restores a trainer (built over a model made from `info`) to the saved
// state: parameters, optimizer state and progress.
void load_training_state(const std::filesystem::path& path, Trainer& trainer,
                         const CheckpointInfo& info);

// Throws "<path>: the checkpoint's source vocabulary does not match the data
// (…first difference…)" unless both vocabularies equal the checkpoint's.
void check_vocabularies(const std::filesystem::path& path, const CheckpointInfo& info,
                        const text::Vocabulary& source_vocabulary,
                        const text::Vocabulary& target_vocabulary);

}  // namespace attograd::seq2seq
