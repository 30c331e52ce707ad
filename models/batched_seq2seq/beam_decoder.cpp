// models/batched_seq2seq/beam_decoder.cpp — one decoder step for the N hypotheses of
// a sentence as a batch of N rows, and beam search over it.
//
// Legend: N hypotheses in a step, S source positions, L GRU layers, H hidden
// size, V_tgt the target vocabulary size.
#include "models/batched_seq2seq/beam_decoder.hpp"

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "tensor/error.hpp"

namespace attograd::batched_seq2seq {

BatchedStepDecoder::BatchedStepDecoder(Seq2SeqAttentionDecoder& decoder, AttentionMemory memory)
    : decoder_(decoder) {
  check(memory.values.defined() && memory.values.dim() == 3 && memory.values.shape()[0] == 1 &&
            memory.valid_lens.size() == 1,
        "BatchedStepDecoder: the memory must be one sentence's, values (1,S,H); got {} with {} "
        "valid lengths",
        memory.values.defined() ? memory.values.shape() : Shape{}, memory.valid_lens.size());
  memory_.emplace(1, std::move(memory));
}

// values, keys (1,S,H) -> (N,S,H); valid_lens {n} -> N × {n}
const AttentionMemory& BatchedStepDecoder::memory_for(int64_t N) {
  auto found = memory_.find(N);
  if (found != memory_.end()) return found->second;
  const AttentionMemory& one = memory_.at(1);
  AttentionMemory repeated{repeat(one.values, {N, 1, 1}), repeat(one.projected_keys, {N, 1, 1}),
                           std::vector<int64_t>(static_cast<size_t>(N), one.valid_lens[0])};
  return memory_.emplace(N, std::move(repeated)).first->second;
}

// tokens: N ids, states: N × {(L,1,H)} -> (N,V_tgt), N × {(L,1,H)}, (N,S)
decoding::StepOutput BatchedStepDecoder::step(const std::vector<int64_t>& tokens,
                                              const std::vector<decoding::HypothesisState>& states,
                                              int64_t step) {
  const auto N = static_cast<int64_t>(tokens.size());
  check(N >= 1 && tokens.size() == states.size(),
        "BatchedStepDecoder: step {} has {} tokens but {} states; give one of each per hypothesis",
        step, tokens.size(), states.size());
  std::vector<Tensor> hidden;
  for (size_t n = 0; n < states.size(); ++n) {
    check(states[n].size() == 1,
          "BatchedStepDecoder: hypothesis {} has a state of {} tensors; expected one, the GRU "
          "state (L,1,H)",
          n, states[n].size());
    hidden.push_back(states[n][0]);
  }
  DecoderState state{memory_for(N), cat(hidden, 1)};              // hidden (L,N,H)
  const Tensor logits = decoder_.forward(tokens, {N, 1}, state);  // (N,1,V_tgt)
  decoding::StepOutput output;
  output.log_probs = log_softmax(reshape(logits, {N, -1}), 1);        // (N,V_tgt)
  output.attention = reshape(decoder_.attention_weights(), {N, -1});  // (N,1,S) -> (N,S)
  for (int64_t n = 0; n < N; ++n) output.states.push_back({narrow(state.hidden, 1, n, 1)});
  return output;
}

std::vector<decoding::Hypothesis> beam_predict(BatchedSeq2Seq& model,
                                               const std::vector<int64_t>& source_ids,
                                               int64_t num_steps,
                                               const decoding::BeamSearchOptions& options) {
  decoding::check_options(options);
  const nn::EvalModeGuard eval_mode(model);
  const NoGradGuard no_grad;
  const EncoderOutput encoded = model.encode_sentence(source_ids, num_steps);
  const DecoderState first = model.decoder->init_state(encoded);
  BatchedStepDecoder decoder(*model.decoder, first.memory);
  return decoding::beam_search(decoder, {first.hidden}, num_steps, options);
}

std::vector<decoding::Hypothesis> BatchedSeq2Seq::beam_predict(
    const std::vector<int64_t>& source_ids, int64_t num_steps,
    const decoding::BeamSearchOptions& options) {
  return batched_seq2seq::beam_predict(*this, source_ids, num_steps, options);
}

}  // namespace attograd::batched_seq2seq
