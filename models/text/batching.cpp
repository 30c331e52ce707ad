// models/text/batching.cpp — padding, valid lengths and the seeded
// mini-batch iterator.
#include "models/text/batching.hpp"

#include <algorithm>
#include <sstream>
#include <utility>

#include "models/text/normalize.hpp"
#include "models/text/shuffle.hpp"
#include "tensor/error.hpp"

namespace attograd::text {

TokenizedPairs tokenize_pairs(const std::vector<SentencePair>& pairs,
                              std::optional<std::int64_t> num_examples) {
  check(!num_examples || *num_examples >= 0,
        "tokenize_pairs: num_examples must not be negative, got {}", num_examples.value_or(0));
  std::size_t count = pairs.size();
  if (num_examples) count = std::min(count, static_cast<std::size_t>(*num_examples));
  TokenizedPairs tokens;
  tokens.source.reserve(count);
  tokens.target.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    tokens.source.push_back(split_words(pairs[i].source));
    tokens.target.push_back(split_words(pairs[i].target));
  }
  return tokens;
}

std::vector<std::int64_t> truncate_pad(std::vector<std::int64_t> ids, std::int64_t num_steps,
                                       std::int64_t pad) {
  check(num_steps > 0, "truncate_pad: num_steps must be positive, got {}", num_steps);
  ids.resize(static_cast<std::size_t>(num_steps), pad);  // Cuts, or appends pad.
  return ids;
}

PaddedArray build_padded_array(const std::vector<std::vector<std::string>>& sentences,
                               const Vocabulary& vocabulary, std::int64_t num_steps,
                               std::int64_t eos, std::int64_t pad) {
  check(num_steps > 0, "build_padded_array: num_steps must be positive, got {}", num_steps);
  check(eos >= 0 && eos < vocabulary.num_special() && pad >= 0 && pad < vocabulary.num_special(),
        "build_padded_array: eos ({}) and pad ({}) must be special tokens of the vocabulary "
        "(indices below {})",
        eos, pad, vocabulary.num_special());
  PaddedArray array;
  array.rows = static_cast<std::int64_t>(sentences.size());
  array.num_steps = num_steps;
  array.ids.reserve(sentences.size() * static_cast<std::size_t>(num_steps));
  array.valid_lengths.reserve(sentences.size());
  for (const std::vector<std::string>& sentence : sentences) {
    Encoded encoded = vocabulary.encode(sentence);
    array.unknown_count += encoded.unknown_count;
    encoded.ids.push_back(eos);
    const std::vector<std::int64_t> row = truncate_pad(std::move(encoded.ids), num_steps, pad);
    array.valid_lengths.push_back(
        std::count_if(row.begin(), row.end(), [pad](std::int64_t id) { return id != pad; }));
    array.ids.insert(array.ids.end(), row.begin(), row.end());
  }
  return array;
}

PaddedArray gather_rows(const PaddedArray& array, std::span<const std::int64_t> rows) {
  PaddedArray gathered;
  gathered.rows = static_cast<std::int64_t>(rows.size());
  gathered.num_steps = array.num_steps;
  gathered.ids.reserve(rows.size() * static_cast<std::size_t>(array.num_steps));
  gathered.valid_lengths.reserve(rows.size());
  for (const std::int64_t row : rows) {
    check(row >= 0 && row < array.rows, "gather_rows: row {} is out of range [0, {})", row,
          array.rows);
    const auto begin = array.ids.begin() + row * array.num_steps;
    gathered.ids.insert(gathered.ids.end(), begin, begin + array.num_steps);
    gathered.valid_lengths.push_back(array.valid_lengths[static_cast<std::size_t>(row)]);
  }
  return gathered;
}

BatchedData prepare_batched_data(const std::vector<SentencePair>& pairs,
                                 const BatchedDataOptions& options) {
  const TokenizedPairs tokens = tokenize_pairs(pairs, options.num_examples());
  Vocabulary source_vocabulary = make_batched_vocabulary(tokens.source, options.min_frequency());
  Vocabulary target_vocabulary = make_batched_vocabulary(tokens.target, options.min_frequency());
  PaddedArray source = build_padded_array(tokens.source, source_vocabulary, options.num_steps());
  PaddedArray target = build_padded_array(tokens.target, target_vocabulary, options.num_steps());
  return {std::move(source_vocabulary), std::move(target_vocabulary), std::move(source),
          std::move(target)};
}

BatchIterator::BatchIterator(PaddedArray source, PaddedArray target, std::int64_t batch_size,
                             std::uint64_t seed)
    : source_(std::move(source)), target_(std::move(target)), batch_size_(batch_size), rng_(seed) {
  check(batch_size_ > 0, "BatchIterator: batch_size must be positive, got {}", batch_size_);
  check(source_.rows == target_.rows,
        "BatchIterator: {} source rows but {} target rows; they must be the same examples",
        source_.rows, target_.rows);
}

void BatchIterator::start_epoch() {
  rng_before_shuffle_ = rng_;
  order_ = shuffled_indices(num_examples(), rng_);
  position_ = 0;
  epoch_started_ = true;
}

std::optional<TranslationBatch> BatchIterator::next() {
  check(epoch_started_, "BatchIterator::next: call start_epoch() before the first batch");
  if (position_ >= num_examples()) return std::nullopt;
  const std::int64_t end = std::min(position_ + batch_size_, num_examples());
  TranslationBatch batch;
  batch.example_indices.assign(order_.begin() + position_, order_.begin() + end);
  batch.source = gather_rows(source_, batch.example_indices);
  batch.target = gather_rows(target_, batch.example_indices);
  position_ = end;
  return batch;
}

BatchIterator::Position BatchIterator::position() const {
  const bool in_epoch = epoch_started_ && position_ < num_examples();
  std::ostringstream text;
  text << (in_epoch ? rng_before_shuffle_ : rng_);
  return {text.str(), in_epoch ? (position_ + batch_size_ - 1) / batch_size_ : 0};
}

void BatchIterator::resume(const Position& position) {
  std::istringstream in(position.generator);
  std::mt19937_64 rng;
  in >> rng;
  check(!in.fail() && (in >> std::ws).eof(),
        "BatchIterator::resume: the saved batch order is not a generator state ({} characters)",
        position.generator.size());
  check(position.batches_taken >= 0 && position.batches_taken < num_batches(),
        "BatchIterator::resume: {} batches taken, but an epoch has {}", position.batches_taken,
        num_batches());
  rng_ = rng;
  epoch_started_ = false;
  if (position.batches_taken == 0) return;
  start_epoch();
  position_ = position.batches_taken * batch_size_;
}

}  // namespace attograd::text
