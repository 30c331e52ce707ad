// models/seq2seq/beam_decoder.hpp — the tutorial's decoders driven by beam
// search (models/translation/beam_search.hpp).
//
//   std::vector<decoding::Hypothesis> best =
//       beam_translate(model, source_ids, decoding::BeamSearchOptions().beam_size(5));
//   best[0].tokens;  // the highest-scoring translation, EOS not included
//
// A hypothesis's state is its decoder state {hidden (1,1,H)}; the memory the
// attention reads (the encoder outputs) is the sentence's and so shared by
// every hypothesis. A step runs the decoder on each hypothesis alone, the
// same AttentionDecoder::forward call greedy decoding makes, so every
// hypothesis's log-probabilities are exactly those the sentence would get
// decoded one word at a time, and K = 1 reproduces greedy decoding bit for bit.
//
// Legend: N hypotheses in a step, L MAX_LENGTH, H hidden size, V_out the
// target vocabulary size.
#pragma once

#include <cstdint>
#include <vector>

#include "models/seq2seq/decoder.hpp"
#include "models/seq2seq/model.hpp"
#include "models/translation/beam_search.hpp"

namespace attograd::seq2seq {

class Seq2SeqStepDecoder : public decoding::StepDecoder {
 public:
  // `memory` is decoder.remember() of the sentence's encoder output.
  Seq2SeqStepDecoder(AttentionDecoder& decoder, AttentionMemory memory);

  // tokens: N ids, states: N of {hidden (1,1,H)} -> log_probs (N,V_out),
  // N states {hidden (1,1,H)}, attention (N,L)
  decoding::StepOutput step(const std::vector<int64_t>& tokens,
                            const std::vector<decoding::HypothesisState>& states,
                            int64_t step) override;
  int64_t start_token() const override { return kSos; }
  int64_t end_token() const override { return kEos; }

 private:
  AttentionDecoder& decoder_;
  AttentionMemory memory_;
};

// Beam search in evaluation mode (no dropout, nothing recorded) over at most
// `max_steps` words (default L): source ends in EOS, S ≤ L ids -> the K best
// translations, best first, each with one attention row of L weights per step.
std::vector<decoding::Hypothesis> beam_translate(Seq2Seq& model, const std::vector<int64_t>& source,
                                                 const decoding::BeamSearchOptions& options,
                                                 int64_t max_steps = 0);

// A greedy Translation (words, EOS flag, attention rows, log-probability)
// as a hypothesis scored with length penalty α.
decoding::Hypothesis to_hypothesis(const Translation& translation, double alpha);

}  // namespace attograd::seq2seq
