// models/batched_seq2seq/batched_seq2seq.cpp — the batched Bahdanau
// encoder–decoder (the maths is in the header; beam search is in
// beam_decoder.cpp, training and translation in
// models/translation/batched_translator.cpp).
#include "models/batched_seq2seq/batched_seq2seq.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "autograd/ops.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"

namespace attograd::batched_seq2seq {

using translation::xavier_init_weights;

namespace {

void check_options(const BatchedSeq2SeqOptions& options) {
  check(options.source_vocabulary() > 0 && options.target_vocabulary() > 0,
        "BatchedSeq2Seq: vocabulary sizes {} (source) and {} (target) must be positive",
        options.source_vocabulary(), options.target_vocabulary());
  check(options.embed_size() > 0 && options.hidden_size() > 0 && options.num_layers() > 0,
        "BatchedSeq2Seq: embed_size ({}), hidden_size ({}) and num_layers ({}) must be positive",
        options.embed_size(), options.hidden_size(), options.num_layers());
}

// Checks a (B,T) id array and returns (B, T).
std::pair<int64_t, int64_t> check_ids(const char* who, const std::vector<int64_t>& ids,
                                      const Shape& shape) {
  check(shape.ndim() == 2 && shape[0] >= 1 && shape[1] >= 1,
        "{}: the ids must have a shape (B,T) with B, T >= 1; got {}", who, shape);
  check(static_cast<int64_t>(ids.size()) == shape.numel(),
        "{}: {} ids for a shape {}; expected B·T = {} (row-major)", who, ids.size(), shape,
        shape.numel());
  return {shape[0], shape[1]};
}

// Column t of a (B,T) id array: the B ids every sentence has at step t.
std::vector<int64_t> ids_at_step(const std::vector<int64_t>& ids, int64_t B, int64_t T, int64_t t) {
  std::vector<int64_t> column(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) column[b] = ids[b * T + t];
  return column;
}

// keep[b] = 1 while row b's sentence lasts (t < valid_lens[b]), else 0, as a
// tensor of `shape` holding the B values.
Tensor still_running(const std::vector<int64_t>& valid_lens, int64_t t, const Shape& shape) {
  Tensor keep = Tensor::empty(shape);
  for (size_t b = 0; b < valid_lens.size(); ++b) keep.data()[b] = t < valid_lens[b] ? 1 : 0;
  return keep;
}

}  // namespace

// ---------------------------------------------------------------- encoder

Seq2SeqEncoder::Seq2SeqEncoder(const BatchedSeq2SeqOptions& options, Generator& generator)
    : nn::Module("Seq2SeqEncoder") {
  check_options(options);
  embedding = register_module(
      "embedding",
      std::make_shared<nn::Embedding>(
          nn::EmbeddingOptions(options.source_vocabulary(), options.embed_size()), generator));
  rnn = register_module(
      "rnn", std::make_shared<nn::GRU>(nn::GRUOptions(options.embed_size(), options.hidden_size())
                                           .num_layers(options.num_layers())
                                           .dropout(options.dropout()),
                                       generator));
}

// ids: (B,T), valid_lens: (B) -> outputs (B,T,H), hidden (L,B,H), valid_lens
//
// One GRU step per time step through all layers. Once row b's sentence has
// ended, its state is carried unchanged,
//   state = keep ⊙ step(x_t, state) + (1 − keep) ⊙ state,   keep_b = [t < n_b],
// and its output is 0; steps after the longest sentence are not run at all.
EncoderOutput Seq2SeqEncoder::forward(const std::vector<int64_t>& ids, const Shape& shape,
                                      const std::vector<int64_t>& valid_lens) {
  const auto [B, T] = check_ids("Seq2SeqEncoder", ids, shape);
  check(static_cast<int64_t>(valid_lens.size()) == B,
        "Seq2SeqEncoder: {} valid lengths for a batch of B = {} source sentences",
        valid_lens.size(), B);
  for (int64_t b = 0; b < B; ++b) {
    check(1 <= valid_lens[b] && valid_lens[b] <= T,
          "Seq2SeqEncoder: valid length {} of sentence {} is outside [1, T = {}] for source ids "
          "of shape {}",
          valid_lens[b], b, T, shape);
  }
  const int64_t H = rnn->options().hidden_size();
  const int64_t longest = *std::max_element(valid_lens.begin(), valid_lens.end());
  Tensor state;  // (L,B,H); undefined means zeros, and step 0 always runs for every row
  std::vector<Tensor> outputs;
  outputs.reserve(T);
  for (int64_t t = 0; t < T; ++t) {
    if (t >= longest) {
      outputs.push_back(zeros({B, H}));
      continue;
    }
    // Embedding one step at a time gives the cell a contiguous (B,E) input,
    // and the backward a (V,E) gradient per step instead of a (B,T,E) one.
    const Tensor x = embedding->forward(ids_at_step(ids, B, T, t), {B});  // (B,E)
    const nn::GRUOutput step = rnn->step(x, state);
    const bool all_running =
        std::all_of(valid_lens.begin(), valid_lens.end(), [t](int64_t n) { return t < n; });
    if (all_running) {
      state = step.h_n;
      outputs.push_back(step.output);
    } else {
      const Tensor keep = still_running(valid_lens, t, {1, B, 1});
      state = step.h_n * keep + state * (real(1) - keep);
      outputs.push_back(step.output * reshape(keep, {B, 1}));
    }
  }
  return {stack(outputs, 1), state, valid_lens};
}

// ---------------------------------------------------------------- decoder

Seq2SeqAttentionDecoder::Seq2SeqAttentionDecoder(const BatchedSeq2SeqOptions& options,
                                                 Generator& generator)
    : nn::Module("Seq2SeqAttentionDecoder") {
  check_options(options);
  const int64_t E = options.embed_size(), H = options.hidden_size();
  attention = register_module(
      "attention",
      std::make_shared<nn::AdditiveAttention>(
          nn::AdditiveAttentionOptions(H, H, H).dropout(options.dropout()), generator));
  embedding = register_module("embedding",
                              std::make_shared<nn::Embedding>(
                                  nn::EmbeddingOptions(options.target_vocabulary(), E), generator));
  rnn = register_module(
      "rnn",
      std::make_shared<nn::GRU>(
          nn::GRUOptions(E + H, H).num_layers(options.num_layers()).dropout(options.dropout()),
          generator));
  dense = register_module(
      "dense",
      std::make_shared<nn::Linear>(nn::LinearOptions(H, options.target_vocabulary()), generator));
}

DecoderState Seq2SeqAttentionDecoder::init_state(const EncoderOutput& encoded) {
  return {{encoded.outputs, attention->project_keys(encoded.outputs), encoded.valid_lens},
          encoded.hidden};
}

// ids: (B,T), state.hidden: (L,B,H) -> logits (B,T,V_tgt)
Tensor Seq2SeqAttentionDecoder::forward(const std::vector<int64_t>& ids, const Shape& shape,
                                        DecoderState& state) {
  const auto [B, T] = check_ids("Seq2SeqAttentionDecoder", ids, shape);
  const int64_t L = rnn->options().num_layers(), H = rnn->options().hidden_size();
  check(state.hidden.defined() && state.hidden.shape() == Shape{L, B, H},
        "Seq2SeqAttentionDecoder: the state must be (L,B,H) = {} for {} input rows; got {} (make "
        "it with init_state from the encoder's output of the same batch)",
        Shape{L, B, H}, B, state.hidden.defined() ? state.hidden.shape() : Shape{});
  std::vector<Tensor> outputs, weights;
  outputs.reserve(T);
  weights.reserve(T);
  // The query is the top layer's state: state.hidden[L−1] at first, then the
  // output of each step (GRU::step returns the top layer's new state).
  Tensor top = select(state.hidden, 0, L - 1);  // (B,H)
  for (int64_t t = 0; t < T; ++t) {
    const Tensor context =
        attention->forward_projected(reshape(top, {B, 1, H}), state.memory.projected_keys,
                                     state.memory.values, state.memory.valid_lens);  // (B,1,H)
    const Tensor embedded = embedding->forward(ids_at_step(ids, B, T, t), {B});      // (B,E)
    const Tensor x = cat({reshape(context, {B, H}), embedded}, 1);                   // (B,H+E)
    const nn::GRUOutput step = rnn->step(x, state.hidden);
    state.hidden = step.h_n;
    top = step.output;
    outputs.push_back(step.output);
    weights.push_back(attention->attention_weights());  // (B,1,S)
  }
  attention_weights_ = cat(weights, 1);      // (B,T,S), no history
  return dense->forward(stack(outputs, 1));  // (B,T,H) -> (B,T,V_tgt)
}

// ---------------------------------------------------------------- the model

BatchedSeq2Seq::BatchedSeq2Seq(const BatchedSeq2SeqOptions& options, Generator& generator)
    : BatchedTranslator("EncoderDecoder"), options_(options) {
  check_options(options);
  encoder = register_module("encoder", std::make_shared<Seq2SeqEncoder>(options, generator));
  decoder =
      register_module("decoder", std::make_shared<Seq2SeqAttentionDecoder>(options, generator));
  xavier_init_weights(*this, generator);
}

Tensor BatchedSeq2Seq::forward(const text::PaddedArray& source,
                               const std::vector<int64_t>& decoder_inputs,
                               const Shape& decoder_shape) {
  check(decoder_shape.ndim() == 2 && decoder_shape[0] == source.rows,
        "BatchedSeq2Seq: decoder inputs of shape {} for {} source sentences; the batch sizes "
        "must match",
        decoder_shape, source.rows);
  const EncoderOutput encoded =
      encoder->forward(source.ids, {source.rows, source.num_steps}, source.valid_lengths);
  DecoderState state = decoder->init_state(encoded);
  return decoder->forward(decoder_inputs, decoder_shape, state);
}

EncoderOutput BatchedSeq2Seq::encode_sentence(const std::vector<int64_t>& source_ids,
                                              int64_t num_steps) {
  check(num_steps >= 1, "BatchedSeq2Seq: num_steps is {}; it must be at least 1", num_steps);
  check(!source_ids.empty(), "BatchedSeq2Seq: the source is empty; give at least its <eos> id");
  const int64_t length = std::min<int64_t>(static_cast<int64_t>(source_ids.size()), num_steps);
  return encoder->forward(text::truncate_pad(source_ids, num_steps, kPad), {1, num_steps},
                          {length});
}

std::shared_ptr<BatchedTranslator> BatchedSeq2Seq::replica(Generator& generator) const {
  return std::make_shared<BatchedSeq2Seq>(options_, generator);
}

Prediction BatchedSeq2Seq::predict(const std::vector<int64_t>& source_ids, int64_t num_steps) {
  const nn::EvalModeGuard eval_mode(*this);
  const NoGradGuard no_grad;
  DecoderState state = decoder->init_state(encode_sentence(source_ids, num_steps));
  Prediction prediction;
  prediction.source_positions = num_steps;
  int64_t input = kBos;
  for (int64_t step = 0; step < num_steps; ++step) {
    const Tensor logits = decoder->forward({input}, {1, 1}, state);  // (1,1,V)
    const int64_t chosen = argmax(logits, 2).front();
    prediction.log_probability +=
        static_cast<double>(log_softmax(reshape(logits, {1, -1}), 1).at({0, chosen}));
    for (real weight : decoder->attention_weights().to_vector()) {
      prediction.attention.push_back(weight);
    }
    ++prediction.steps;
    if (chosen == kEos) {
      prediction.reached_eos = true;
      break;
    }
    prediction.ids.push_back(chosen);
    input = chosen;
  }
  return prediction;
}

std::string BatchedSeq2Seq::extra_repr() const {
  return fmt::format("embed_size={}, hidden_size={}, num_layers={}, dropout={}",
                     options_.embed_size(), options_.hidden_size(), options_.num_layers(),
                     options_.dropout());
}

}  // namespace attograd::batched_seq2seq
