// models/transformer/beam_decoder.hpp — the Transformer's decoder
// (models/transformer/transformer.hpp) driven by beam search
// (models/translation/beam_search.hpp).
//
//   std::vector<decoding::Hypothesis> best =
//       beam_predict(model, source_ids, num_steps, decoding::BeamSearchOptions().beam_size(5));
//
// A hypothesis's state is its key/value cache: one tensor per decoder block,
// that block's inputs at the positions decoded so far, (1,t,d) after t
// tokens (none before the first). A step stacks the N caches of each block
// into (N,t,d), runs one decoder step on the N last tokens at position t
// (Transformer::decode_step) and splits the grown caches into N again. With
// K = 1 this is the one row greedy decoding runs, so K = 1 reproduces
// Transformer::predict.
//
// Legend: N hypotheses in a step, S source positions (num_steps), t the
// step, d num_hiddens, V_tgt the target vocabulary size.
#pragma once

#include <cstdint>
#include <vector>

#include "models/transformer/transformer.hpp"
#include "models/translation/beam_search.hpp"

namespace attograd::transformer {

class TransformerStepDecoder : public decoding::StepDecoder {
 public:
  // encoded: the sentence's encoder output (1,S,d) and its valid length.
  TransformerStepDecoder(Transformer& model, Tensor encoded, int64_t source_length);

  // tokens: N ids at position `step`, states: N caches of N_blocks × (1,step,d)
  // -> log_probs (N,V_tgt), N caches of N_blocks × (1,step+1,d), attention (N,S)
  decoding::StepOutput step(const std::vector<int64_t>& tokens,
                            const std::vector<decoding::HypothesisState>& states,
                            int64_t step) override;
  int64_t start_token() const override { return translation::kBos; }
  int64_t end_token() const override { return translation::kEos; }

 private:
  Transformer& model_;
  Tensor encoded_;
  int64_t source_length_;
};

// Beam search in evaluation mode, nothing recorded: source_ids are the
// sentence's ids with its <eos> (cut to num_steps if longer), as predict
// takes them -> the K best outputs of at most num_steps ids, best first.
std::vector<decoding::Hypothesis> beam_predict(Transformer& model,
                                               const std::vector<int64_t>& source_ids,
                                               int64_t num_steps,
                                               const decoding::BeamSearchOptions& options);

}  // namespace attograd::transformer
