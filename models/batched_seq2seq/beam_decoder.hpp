// models/batched_seq2seq/beam_decoder.hpp — d2l's batched Bahdanau decoder
// (models/batched_seq2seq/batched_seq2seq.hpp) driven by beam search
// (models/translation/beam_search.hpp).
//
//   std::vector<decoding::Hypothesis> best =
//       beam_predict(model, source_ids, num_steps, decoding::BeamSearchOptions().beam_size(5));
//
// The decoder already runs a batch of sentences; here the batch is the N
// hypotheses of one sentence. A hypothesis's state is its GRU state
// {hidden (L,1,H)}; a step stacks the N states into (L,N,H), gives every row
// the sentence's encoder outputs (the memory, repeated N times), runs one
// decoder step on the N last tokens and splits the new state into N again.
// With K = 1 the batch is the one row greedy decoding runs, so K = 1
// reproduces BatchedSeq2Seq::predict.
//
// Legend: N hypotheses in a step, S source positions (num_steps), L GRU
// layers, H hidden size, V_tgt the target vocabulary size.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "models/batched_seq2seq/batched_seq2seq.hpp"
#include "models/translation/beam_search.hpp"

namespace attograd::batched_seq2seq {

class BatchedStepDecoder : public decoding::StepDecoder {
 public:
  // `memory` is the sentence's (batch of one), as init_state makes it.
  BatchedStepDecoder(Seq2SeqAttentionDecoder& decoder, AttentionMemory memory);

  // tokens: N ids, states: N of {hidden (L,1,H)} -> log_probs (N,V_tgt),
  // N states {hidden (L,1,H)}, attention (N,S)
  decoding::StepOutput step(const std::vector<int64_t>& tokens,
                            const std::vector<decoding::HypothesisState>& states,
                            int64_t step) override;
  int64_t start_token() const override { return kBos; }
  int64_t end_token() const override { return kEos; }

 private:
  // The memory with its one row repeated N times: values and keys (N,S,H).
  const AttentionMemory& memory_for(int64_t N);

  Seq2SeqAttentionDecoder& decoder_;
  std::map<int64_t, AttentionMemory> memory_;  // N -> the memory of N rows
};

// Beam search in evaluation mode, nothing recorded: source_ids are the
// sentence's ids with its <eos> (cut to num_steps if longer), as predict
// takes them -> the K best outputs of at most num_steps ids, best first.
std::vector<decoding::Hypothesis> beam_predict(BatchedSeq2Seq& model,
                                               const std::vector<int64_t>& source_ids,
                                               int64_t num_steps,
                                               const decoding::BeamSearchOptions& options);

}  // namespace attograd::batched_seq2seq
