// models/seq2seq/model.cpp — the tutorial's training step and greedy decoding.
//
// Legend: S source length (EOS included), T target length, T' decoder steps
// taken, L MAX_LENGTH, H hidden size, V_out the target vocabulary size.
#include "models/seq2seq/model.hpp"

#include "autograd/ops.hpp"
#include "models/seq2seq/bahdanau_decoder.hpp"
#include "models/seq2seq/location_decoder.hpp"
#include "nn/embedding.hpp"
#include "nn/loss.hpp"
#include "tensor/error.hpp"

namespace attograd::seq2seq {

std::string_view to_string(DecoderKind kind) {
  return kind == DecoderKind::location ? "location" : "bahdanau";
}

DecoderKind decoder_kind_from_string(std::string_view name) {
  if (name == "location") return DecoderKind::location;
  if (name == "bahdanau") return DecoderKind::bahdanau;
  fail("decoder: '{}' is not one of location|bahdanau", name);
}

Seq2Seq::Seq2Seq(const Seq2SeqOptions& options, Generator& generator)
    : nn::Module("Seq2Seq"), options_(options) {
  check(options.dropout() >= 0 && options.dropout() < 1, "Seq2Seq: dropout {} must be in [0, 1)",
        options.dropout());
  encoder = register_module(
      "encoder", std::make_shared<EncoderRNN>(options.source_vocabulary(), options.hidden_size(),
                                              options.max_length(), generator));
  if (options.decoder() == DecoderKind::location) {
    decoder = register_module("decoder", std::make_shared<AttnDecoderRNN>(
                                             options.hidden_size(), options.target_vocabulary(),
                                             options.dropout(), options.max_length(), generator));
  } else {
    decoder = register_module("decoder", std::make_shared<BahdanauAttnDecoder>(
                                             options.hidden_size(), options.target_vocabulary(),
                                             options.dropout(), options.max_length(), generator));
  }
}

void Seq2Seq::set_sparse_embeddings(bool on) {
  encoder->embedding->set_sparse(on);
  for (const auto& [name, module] : decoder->children()) {
    if (auto* table = dynamic_cast<nn::Embedding*>(module.get())) table->set_sparse(on);
  }
}

// source: S ids, target: T ids (both ending in EOS) -> Σ_t −log p(y_t)
//
// The decoder runs up to the GRU step by step, and the output layer once over
// the T' steps taken: log_probs = predict([o_0; …; o_T'−1]) (T',V_out), and the
// loss is Σ_t −log_probs[t, y_t]. With teacher forcing all T inputs are known
// at the start, and the decoder is given them at once (advance_teacher_forced:
// advance() T times, or on the fast path the same steps with the products of
// the inputs formed for the whole sentence). Without it the next input is
// the argmax of the step's output layer, computed without recording (a word
// id carries no gradient); those step logits are then recorded as the
// output layer's values (linear_with_values) rather than computed again — the values the tutorial's
// per-step decoder(…) call gives.
PairLoss Seq2Seq::pair_loss(const std::vector<int64_t>& source, const std::vector<int64_t>& target,
                            bool teacher_forcing) {
  check(!target.empty(), "Seq2Seq: the target is empty; it must at least hold EOS");
  const EncoderOutput encoded = encoder->forward(source);
  const AttentionMemory memory = decoder->remember(encoded);
  std::vector<Tensor> outputs;  // T' of (1,H)
  std::vector<Tensor> logits;   // greedy: T' of (1,V_out), out(output) of each step
  outputs.reserve(target.size());
  if (teacher_forcing) {  // step t is fed target t−1: all T inputs are known
    std::vector<int64_t> inputs{kSos};
    inputs.insert(inputs.end(), target.begin(), target.end() - 1);
    for (const DecoderStep& step :
         decoder->advance_teacher_forced(inputs, encoded.hidden, memory)) {
      outputs.push_back(step.output);
    }
  } else {
    Tensor hidden = encoded.hidden;
    int64_t input = kSos;
    for (size_t t = 0; t < target.size(); ++t) {
      const DecoderStep step = decoder->advance(input, hidden, memory);
      outputs.push_back(step.output);
      hidden = step.hidden;
      const NoGradGuard no_grad;
      logits.push_back(decoder->output_layer().forward(step.output));
      input = argmax(logits.back(), 1)[0];
      if (input == kEos) break;
    }
  }
  const Tensor log_probs =  // (T',V_out)
      decoder->predict(cat(outputs, 0), logits.empty() ? Tensor() : cat(logits, 0));
  const std::vector<int64_t> taken(target.begin(),
                                   target.begin() + static_cast<std::ptrdiff_t>(outputs.size()));
  return PairLoss{nn::nll_loss(log_probs, taken, nn::Reduction::sum),
                  static_cast<int64_t>(target.size())};
}

Translation Seq2Seq::translate(const std::vector<int64_t>& source, int64_t max_steps) {
  const nn::EvalModeGuard eval_mode(*this);
  const NoGradGuard no_grad;
  const int64_t L = options_.max_length();
  if (max_steps <= 0) max_steps = L;
  const EncoderOutput encoded = encoder->forward(source);
  const AttentionMemory memory = decoder->remember(encoded);
  Tensor hidden = encoded.hidden;
  int64_t input = kSos;
  Translation result;
  for (int64_t t = 0; t < max_steps; ++t) {
    const DecoderStep step = decoder->forward(input, hidden, memory);
    const std::vector<real> weights = step.attention.to_vector();
    result.attention.insert(result.attention.end(), weights.begin(), weights.end());
    ++result.steps;
    hidden = step.hidden;
    input = argmax(step.log_probs, 1)[0];
    result.log_probability += static_cast<double>(step.log_probs.at({0, input}));
    if (input == kEos) {
      result.reached_eos = true;
      break;
    }
    result.words.push_back(input);
  }
  return result;
}

std::string Seq2Seq::extra_repr() const {
  return fmt::format("hidden_size={}, max_length={}, dropout={}, decoder={}",
                     options_.hidden_size(), options_.max_length(), options_.dropout(),
                     to_string(options_.decoder()));
}

}  // namespace attograd::seq2seq
