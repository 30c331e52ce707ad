// models/seq2seq/beam_decoder.cpp — one step of the tutorial's decoder for N
// hypotheses, and beam translation of a sentence.
//
// Legend: N hypotheses in a step, L MAX_LENGTH, H hidden size, V_out the
// target vocabulary size.
#include "models/seq2seq/beam_decoder.hpp"

#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "tensor/error.hpp"

namespace attograd::seq2seq {

Seq2SeqStepDecoder::Seq2SeqStepDecoder(AttentionDecoder& decoder, AttentionMemory memory)
    : decoder_(decoder), memory_(std::move(memory)) {}

// tokens: N ids, states: N × {(1,1,H)} -> (N,V_out), N × {(1,1,H)}, (N,L)
decoding::StepOutput Seq2SeqStepDecoder::step(const std::vector<int64_t>& tokens,
                                              const std::vector<decoding::HypothesisState>& states,
                                              int64_t step) {
  check(tokens.size() == states.size(),
        "Seq2SeqStepDecoder: step {} has {} tokens but {} states; give one of each per hypothesis",
        step, tokens.size(), states.size());
  decoding::StepOutput output;
  std::vector<Tensor> log_probs, attention;
  for (size_t n = 0; n < tokens.size(); ++n) {
    check(states[n].size() == 1,
          "Seq2SeqStepDecoder: hypothesis {} has a state of {} tensors; expected one, the hidden "
          "state (1,1,H)",
          n, states[n].size());
    const DecoderStep result = decoder_.forward(tokens[n], states[n][0], memory_);
    log_probs.push_back(result.log_probs);  // (1,V_out)
    attention.push_back(result.attention);  // (1,L)
    output.states.push_back({result.hidden});
  }
  output.log_probs = cat(log_probs, 0);
  output.attention = cat(attention, 0);
  return output;
}

std::vector<decoding::Hypothesis> beam_translate(Seq2Seq& model, const std::vector<int64_t>& source,
                                                 const decoding::BeamSearchOptions& options,
                                                 int64_t max_steps) {
  decoding::check_options(options);
  const nn::EvalModeGuard eval_mode(model);
  const NoGradGuard no_grad;
  if (max_steps <= 0) max_steps = model.options().max_length();
  const EncoderOutput encoded = model.encoder->forward(source);
  Seq2SeqStepDecoder decoder(*model.decoder, model.decoder->remember(encoded));
  return decoding::beam_search(decoder, {encoded.hidden}, max_steps, options);
}

decoding::Hypothesis to_hypothesis(const Translation& translation, double alpha) {
  decoding::Hypothesis hypothesis;
  hypothesis.tokens = translation.words;
  hypothesis.reached_end = translation.reached_eos;
  hypothesis.log_probability = translation.log_probability;
  hypothesis.length = translation.steps;
  hypothesis.score =
      decoding::length_penalized_score(translation.log_probability, translation.steps, alpha);
  hypothesis.attention = translation.attention;
  hypothesis.attention_width =
      translation.steps > 0 ? static_cast<int64_t>(translation.attention.size()) / translation.steps
                            : 0;
  return hypothesis;
}

}  // namespace attograd::seq2seq
