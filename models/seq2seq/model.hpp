// models/seq2seq/model.hpp — the tutorial's whole translator: an EncoderRNN
// and one of the two attention decoders, the training step of one pair and
// greedy translation.
//
// Legend: S source length (EOS included, S ≤ L), T target length, L
// MAX_LENGTH, H hidden size, V_in / V_out the source / target vocabulary sizes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/seq2seq/decoder.hpp"
#include "models/seq2seq/encoder.hpp"
#include "models/text/vocabulary.hpp"
#include "nn/module.hpp"
#include "tensor/random.hpp"

namespace attograd::seq2seq {

// The special tokens this recipe uses, in the tutorial layout of
// models/text/vocabulary.hpp.
inline constexpr int64_t kSos = text::special_id(text::kTutorialLayout, text::TokenRole::start);
inline constexpr int64_t kEos = text::special_id(text::kTutorialLayout, text::TokenRole::end);
inline constexpr int64_t kUnknown =
    text::special_id(text::kTutorialLayout, text::TokenRole::unknown);

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

// A translation: the words chosen, and the attention of every step (greedy
// decoding's, or the best of beam search's: models/seq2seq/beam_decoder.hpp).
struct Translation {
  std::vector<int64_t> words;  // the output ids, EOS not included
  bool reached_eos = false;    // false when it stopped at L steps without EOS
  // One row of L weights per decoder step (the EOS step included), row-major.
  std::vector<double> attention;
  int64_t steps = 0;  // rows of `attention`
  // Σ log p of the chosen words over the `steps` steps (EOS included when
  // reached): the score beam search ranks by, before its length penalty.
  double log_probability = 0;
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
