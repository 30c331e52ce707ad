// models/text/batching.hpp — the fixed-length, batched data of d2l.ai's
// "Machine Translation and the Dataset" chapter, as plain int64 arrays.
//
// Legend: N examples, B batch size, T num_steps (time steps per sentence).
//
// The recipe, English -> French as in d2l:
//
//   PairSet set = read_pairs("data/eng-fra.tsv",
//                            ReadOptions().reverse(true).normalization(Normalization::kD2l));
//   BatchedData data = prepare_batched_data(set.pairs);       // 600 examples, T = 10
//   BatchIterator batches(data.source, data.target, /*batch_size=*/64, /*seed=*/0);
//   for (int epoch = 0; epoch < epochs; ++epoch) {
//     batches.start_epoch();
//     while (std::optional<TranslationBatch> batch = batches.next()) { ... }
//   }
//
// Every sentence becomes its word ids, then <eos>, then is cut or padded to
// exactly T ids: "go ." -> [go, ., <eos>, <pad>, <pad>, ...]. Its valid
// length is the number of ids that are not <pad>, so the loss and attention
// can ignore the padding. The models turn these arrays into tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "models/text/pairs.hpp"
#include "models/text/vocabulary.hpp"

namespace attograd::text {

// Sentences split into words, source and target side by side.
struct TokenizedPairs {
  std::vector<std::vector<std::string>> source;
  std::vector<std::vector<std::string>> target;
};

// d2l's tokenize_nmt: the first `num_examples` pairs (all of them when
// std::nullopt) split on spaces into words.
TokenizedPairs tokenize_pairs(const std::vector<SentencePair>& pairs,
                              std::optional<std::int64_t> num_examples = 600);

// Cuts `ids` to its first `num_steps` ids, or appends `pad` until it has
// `num_steps` of them.
std::vector<std::int64_t> truncate_pad(std::vector<std::int64_t> ids, std::int64_t num_steps,
                                       std::int64_t pad);

// N sentences of exactly T ids each.
struct PaddedArray {
  std::int64_t rows = 0;                    // N
  std::int64_t num_steps = 0;               // T
  std::vector<std::int64_t> ids;            // (N,T), row-major: ids[n*T + t]
  std::vector<std::int64_t> valid_lengths;  // (N): the non-<pad> ids of each row
  std::int64_t unknown_count = 0;           // words that became <unk> (build_padded_array)

  std::int64_t at(std::int64_t row, std::int64_t step) const {
    return ids[static_cast<std::size_t>(row * num_steps + step)];
  }
};

// d2l's build_array_nmt: encode each sentence (unseen words -> <unk>),
// append `eos`, truncate_pad to `num_steps` with `pad`, and count the valid
// length. A sentence of T or more words loses its <eos> to the truncation.
// sentences: N lists of words -> (N,T) ids and (N) valid lengths.
PaddedArray build_padded_array(const std::vector<std::vector<std::string>>& sentences,
                               const Vocabulary& vocabulary, std::int64_t num_steps,
                               std::int64_t eos = special_id(kBatchedLayout, TokenRole::end),
                               std::int64_t pad = special_id(kBatchedLayout, TokenRole::pad));

// The given rows of `array`, in the given order: (N,T) -> (B,T).
PaddedArray gather_rows(const PaddedArray& array, std::span<const std::int64_t> rows);

struct BatchedDataOptions {
  // T, the length every sentence is cut or padded to (d2l: 10 in the seq2seq chapter).
  BatchedDataOptions& num_steps(std::int64_t value) {
    num_steps_ = value;
    return *this;
  }
  std::int64_t num_steps() const { return num_steps_; }

  // Keep only the first pairs (d2l: 600); std::nullopt keeps all.
  BatchedDataOptions& num_examples(std::optional<std::int64_t> value) {
    num_examples_ = value;
    return *this;
  }
  std::optional<std::int64_t> num_examples() const { return num_examples_; }

  // Words seen fewer times become <unk> (d2l: 2).
  BatchedDataOptions& min_frequency(std::int64_t value) {
    min_frequency_ = value;
    return *this;
  }
  std::int64_t min_frequency() const { return min_frequency_; }

 private:
  std::int64_t num_steps_ = 10;
  std::optional<std::int64_t> num_examples_ = 600;
  std::int64_t min_frequency_ = 2;
};

// Everything d2l's load_data_nmt builds, except the iterator.
struct BatchedData {
  Vocabulary source_vocabulary;
  Vocabulary target_vocabulary;
  PaddedArray source;  // (N,T)
  PaddedArray target;  // (N,T)
};

// tokenize_pairs, one make_batched_vocabulary per side, build_padded_array.
BatchedData prepare_batched_data(const std::vector<SentencePair>& pairs,
                                 const BatchedDataOptions& options = {});

// One mini-batch: which examples it holds, and their source and target rows.
struct TranslationBatch {
  std::vector<std::int64_t> example_indices;  // (B)
  PaddedArray source;                         // (B,T)
  PaddedArray target;                         // (B,T)
};

// Visits the examples in mini-batches, in a new seeded order each epoch.
// Every example appears exactly once per epoch; the last batch keeps the
// remainder, so it may be smaller than batch_size.
class BatchIterator {
 public:
  // `source` and `target` must have the same number of rows.
  BatchIterator(PaddedArray source, PaddedArray target, std::int64_t batch_size,
                std::uint64_t seed);

  // Shuffles the examples for a new epoch and rewinds to its first batch.
  void start_epoch();
  // The next batch of the current epoch, or std::nullopt when it is over.
  std::optional<TranslationBatch> next();

  // Where the iteration stands, for a checkpoint: the generator's state
  // before the current epoch's shuffle and the batches taken since, or, when
  // no epoch is in progress (none started, or the last one finished), the
  // state the next shuffle starts from and 0. resume(position()) on an
  // iterator over the same examples continues with the same batches.
  struct Position {
    std::string generator;  // std::mt19937_64's text form
    std::int64_t batches_taken = 0;
  };
  Position position() const;
  // Throws attograd::Error when the state is not a generator's or the batch
  // count is beyond this epoch's; then nothing changes.
  void resume(const Position& position);

  std::int64_t num_examples() const { return source_.rows; }
  std::int64_t batch_size() const { return batch_size_; }
  // ceil(num_examples / batch_size).
  std::int64_t num_batches() const { return (num_examples() + batch_size_ - 1) / batch_size_; }

 private:
  PaddedArray source_;
  PaddedArray target_;
  std::int64_t batch_size_;
  std::mt19937_64 rng_;
  std::mt19937_64 rng_before_shuffle_;  // rng_ as this epoch's shuffle found it
  std::vector<std::int64_t> order_;     // this epoch's permutation of the examples
  std::int64_t position_ = 0;           // the first example of the next batch, in order_
  bool epoch_started_ = false;
};

}  // namespace attograd::text
