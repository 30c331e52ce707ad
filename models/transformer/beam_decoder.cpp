// models/transformer/beam_decoder.cpp — one Transformer decoder step for the
// N hypotheses of a sentence, and beam search over it.
#include "models/transformer/beam_decoder.hpp"

#include <utility>

#include "autograd/engine.hpp"
#include "nn/module.hpp"
#include "tensor/error.hpp"

namespace attograd::transformer {

TransformerStepDecoder::TransformerStepDecoder(Transformer& model, Tensor encoded,
                                               int64_t source_length)
    : model_(model), encoded_(std::move(encoded)), source_length_(source_length) {}

// tokens: N ids, states: N × {N_blocks × (1,step,d)} -> (N,V_tgt), N × {N_blocks × (1,step+1,d)},
// (N,S)
decoding::StepOutput TransformerStepDecoder::step(
    const std::vector<int64_t>& tokens, const std::vector<decoding::HypothesisState>& states,
    int64_t step) {
  DecodeStep decoded = model_.decode_step(encoded_, source_length_, tokens, states, step);
  decoding::StepOutput output;
  output.log_probs = std::move(decoded.log_probs);
  output.states = std::move(decoded.caches);
  output.attention = std::move(decoded.attention);
  return output;
}

std::vector<decoding::Hypothesis> beam_predict(Transformer& model,
                                               const std::vector<int64_t>& source_ids,
                                               int64_t num_steps,
                                               const decoding::BeamSearchOptions& options) {
  decoding::check_options(options);
  const nn::EvalModeGuard eval_mode(model);
  const NoGradGuard no_grad;
  const Transformer::EncodedSentence encoded = model.encode_sentence(source_ids, num_steps);
  TransformerStepDecoder decoder(model, encoded.outputs, encoded.length);
  return decoding::beam_search(decoder, {}, num_steps, options);
}

std::vector<decoding::Hypothesis> Transformer::beam_predict(
    const std::vector<int64_t>& source_ids, int64_t num_steps,
    const decoding::BeamSearchOptions& options) {
  return transformer::beam_predict(*this, source_ids, num_steps, options);
}

}  // namespace attograd::transformer
