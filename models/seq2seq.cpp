// models/seq2seq.cpp — the encoder, the two attention decoders and the
// tutorial's training step and greedy decoding.
//
// Legend: S source length (EOS included), T decoder steps, L MAX_LENGTH,
// H hidden size, V_in / V_out vocabulary sizes.
#include "models/seq2seq.hpp"

#include "autograd/fast/forward_values.hpp"
#include "autograd/ops.hpp"
#include "nn/loss.hpp"
#include "tensor/error.hpp"
#include "tensor/factory.hpp"

namespace attograd::seq2seq {

std::string_view to_string(DecoderKind kind) {
  return kind == DecoderKind::location ? "location" : "bahdanau";
}

DecoderKind decoder_kind_from_string(std::string_view name) {
  if (name == "location") return DecoderKind::location;
  if (name == "bahdanau") return DecoderKind::bahdanau;
  fail("decoder: '{}' is not one of location|bahdanau", name);
}

namespace {

void check_sizes(const char* layer, int64_t hidden_size, int64_t vocabulary_size,
                 int64_t max_length) {
  check(hidden_size > 0 && vocabulary_size > 0 && max_length > 0,
        "{}: hidden size ({}), vocabulary size ({}) and max length ({}) must all be positive",
        layer, hidden_size, vocabulary_size, max_length);
}

// hidden: (1,1,H) -> (1,H), the same values (a view).
Tensor state_row(const Tensor& hidden, int64_t H) {
  check(hidden.defined() && hidden.shape() == Shape{1, 1, H},
        "decoder: the hidden state has shape {}, expected (1,1,{}) — the (layers, batch, H) "
        "state of a one-layer GRU",
        hidden.defined() ? hidden.shape() : Shape{}, H);
  return reshape(hidden, {1, H});
}

void check_memory(const AttentionMemory& memory, int64_t L, int64_t H) {
  check(memory.values.defined() && memory.values.shape() == Shape{L, H},
        "decoder: the encoder outputs have shape {}, expected (L,H) = ({},{}); pass the "
        "memory remember() made for this decoder",
        memory.values.defined() ? memory.values.shape() : Shape{}, L, H);
}

// Puts a module in evaluation mode and restores its mode when it goes out of
// scope, so translate() can be called in the middle of training.
class EvalModeGuard {
 public:
  explicit EvalModeGuard(nn::Module& module)
      : module_(module), was_training_(module.is_training()) {
    module_.eval();
  }
  ~EvalModeGuard() { module_.train(was_training_); }
  EvalModeGuard(const EvalModeGuard&) = delete;
  EvalModeGuard& operator=(const EvalModeGuard&) = delete;

 private:
  nn::Module& module_;
  bool was_training_;
};

}  // namespace

// ---------------------------------------------------------------- encoder

EncoderRNN::EncoderRNN(int64_t vocabulary_size, int64_t hidden_size, int64_t max_length,
                       Generator& generator)
    : nn::Module("EncoderRNN"), hidden_size_(hidden_size), max_length_(max_length) {
  check_sizes("EncoderRNN", hidden_size, vocabulary_size, max_length);
  embedding = register_module("embedding",
                              std::make_shared<nn::Embedding>(
                                  nn::EmbeddingOptions(vocabulary_size, hidden_size), generator));
  gru = register_module(
      "gru", std::make_shared<nn::GRU>(nn::GRUOptions(hidden_size, hidden_size), generator));
}

// ids: S ids -> outputs (L,H), hidden (1,1,H)
//
// The tutorial feeds one word per call from a zero state and writes each
// output into a zero (L,H) matrix; running the GRU over the (S,1,H) sequence
// at once computes exactly the same states.
EncoderOutput EncoderRNN::forward(const std::vector<int64_t>& ids) {
  const auto S = static_cast<int64_t>(ids.size());
  check(S >= 1 && S <= max_length_,
        "EncoderRNN: a source of {} ids (EOS included); the encoder keeps 1 to {} (MAX_LENGTH)", S,
        max_length_);
  const Tensor embedded = embedding->forward(ids, Shape{S, 1});  // (S,1,H)
  const nn::GRUOutput run = gru->forward(embedded);              // (S,1,H), (1,1,H)
  Tensor outputs = reshape(run.output, {S, hidden_size_});
  if (S < max_length_) outputs = cat({outputs, zeros({max_length_ - S, hidden_size_})}, 0);
  return EncoderOutput{outputs, run.h_n, S};
}

// ---------------------------------------------------------------- decoders

// outputs: (T,H) -> (T,V_out); logits, when given: (T,V_out)
Tensor AttentionDecoder::predict(const Tensor& outputs, const Tensor& logits) {
  nn::Linear& out = output_layer();
  if (!logits.defined()) return log_softmax(out.forward(outputs), 1);
  return log_softmax(fast::linear_with_values(outputs, out.weight, out.bias, logits), 1);
}

DecoderStep AttentionDecoder::forward(int64_t input_word, const Tensor& hidden,
                                      const AttentionMemory& memory) {
  const DecoderState state = advance(input_word, hidden, memory);
  return DecoderStep{predict(state.output), state.hidden, state.attention};
}

// ---------------------------------------------------------------- location attention

AttnDecoderRNN::AttnDecoderRNN(int64_t hidden_size, int64_t output_size, double dropout_p,
                               int64_t max_length, Generator& generator)
    : AttentionDecoder("AttnDecoderRNN"),
      hidden_size_(hidden_size),
      output_size_(output_size),
      max_length_(max_length) {
  check_sizes("AttnDecoderRNN", hidden_size, output_size, max_length);
  const int64_t H = hidden_size;
  embedding = register_module("embedding", std::make_shared<nn::Embedding>(
                                               nn::EmbeddingOptions(output_size, H), generator));
  attn = register_module(
      "attn", std::make_shared<nn::Linear>(nn::LinearOptions(2 * H, max_length), generator));
  attn_combine = register_module(
      "attn_combine", std::make_shared<nn::Linear>(nn::LinearOptions(2 * H, H), generator));
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(dropout_p, generator));
  gru = register_module("gru", std::make_shared<nn::GRU>(nn::GRUOptions(H, H), generator));
  out = register_module("out",
                        std::make_shared<nn::Linear>(nn::LinearOptions(H, output_size), generator));
}

AttentionMemory AttnDecoderRNN::remember(const EncoderOutput& encoded) {
  return AttentionMemory{encoded.outputs, Tensor(), Tensor(), encoded.length};
}

// input_word, hidden (1,1,H), memory.values (L,H) -> (1,H), (1,1,H), (1,L)
DecoderState AttnDecoderRNN::advance(int64_t input_word, const Tensor& hidden,
                                     const AttentionMemory& memory) {
  const int64_t H = hidden_size_;
  check_memory(memory, max_length_, H);
  const Tensor h = state_row(hidden, H);                                                 // (1,H)
  const Tensor embedded = dropout->forward(embedding->forward({input_word}, Shape{1}));  // (1,H)
  const Tensor weights = softmax(attn->forward(cat({embedded, h}, 1)), 1);               // (1,L)
  const Tensor context = matmul(weights, memory.values);                                 // (1,H)
  const Tensor x = relu(attn_combine->forward(cat({embedded, context}, 1)));             // (1,H)
  const nn::GRUOutput step = gru->step(x, hidden);  // (1,H), (1,1,H)
  return DecoderState{step.output, step.h_n, weights};
}

// ---------------------------------------------------------------- additive attention

AdditiveAttention::AdditiveAttention(int64_t hidden_size, Generator& generator)
    : nn::Module("AdditiveAttention") {
  const int64_t H = hidden_size;
  W_q = register_module(
      "W_q", std::make_shared<nn::Linear>(nn::LinearOptions(H, H).bias(false), generator));
  W_k = register_module(
      "W_k", std::make_shared<nn::Linear>(nn::LinearOptions(H, H).bias(false), generator));
  w_v = register_module(
      "w_v", std::make_shared<nn::Linear>(nn::LinearOptions(H, 1).bias(false), generator));
}

// keys: (L,H) -> (L,H)
Tensor AdditiveAttention::project_keys(const Tensor& keys) { return W_k->forward(keys); }

// query (1,H), projected_keys (L,H), padding (1,L) -> weights (1,L)
//
//   features_j = tanh(W_q q + W_k k_j)        (1,H) + (L,H) broadcast -> (L,H)
//   score_j    = w_vᵀ features_j              (L,H) -> (L,1) -> (1,L)
//   weights    = softmax(score masked to −10⁹ where padding_j = 1)
//
// A large negative rather than −∞ keeps the softmax finite (and its gradient
// defined) even if every position were masked; e^(−10⁹ − max) is exactly 0 in
// float and double, so a masked position gets weight 0 and no gradient.
Tensor AdditiveAttention::forward(const Tensor& query, const Tensor& projected_keys,
                                  const Tensor& padding) {
  const Tensor features = tanh(W_q->forward(query) + projected_keys);  // (L,H)
  const Tensor scores = reshape(w_v->forward(features), {1, projected_keys.shape()[0]});
  return softmax(masked_fill(scores, padding, real(-1e9)), 1);  // (1,L)
}

BahdanauAttnDecoder::BahdanauAttnDecoder(int64_t hidden_size, int64_t output_size, double dropout_p,
                                         int64_t max_length, Generator& generator)
    : AttentionDecoder("BahdanauAttnDecoder"),
      hidden_size_(hidden_size),
      output_size_(output_size),
      max_length_(max_length) {
  check_sizes("BahdanauAttnDecoder", hidden_size, output_size, max_length);
  const int64_t H = hidden_size;
  embedding = register_module("embedding", std::make_shared<nn::Embedding>(
                                               nn::EmbeddingOptions(output_size, H), generator));
  dropout = register_module("dropout", std::make_shared<nn::Dropout>(dropout_p, generator));
  attention = register_module("attention", std::make_shared<AdditiveAttention>(H, generator));
  gru = register_module("gru", std::make_shared<nn::GRU>(nn::GRUOptions(2 * H, H), generator));
  out = register_module("out",
                        std::make_shared<nn::Linear>(nn::LinearOptions(H, output_size), generator));
}

// The keys' projection does not depend on the step, so it is made once per
// sentence; the mask marks the zero rows after the source.
AttentionMemory BahdanauAttnDecoder::remember(const EncoderOutput& encoded) {
  check_memory(AttentionMemory{encoded.outputs, {}, {}, encoded.length}, max_length_, hidden_size_);
  Tensor padding = zeros({1, max_length_});
  for (int64_t j = encoded.length; j < max_length_; ++j) padding.set({0, j}, 1);
  return AttentionMemory{encoded.outputs, attention->project_keys(encoded.outputs), padding,
                         encoded.length};
}

// input_word, hidden (1,1,H), memory (L,H) -> (1,H), (1,1,H), (1,L)
DecoderState BahdanauAttnDecoder::advance(int64_t input_word, const Tensor& hidden,
                                          const AttentionMemory& memory) {
  const int64_t H = hidden_size_;
  check_memory(memory, max_length_, H);
  check(memory.keys.defined() && memory.padding.defined(),
        "BahdanauAttnDecoder: the memory has no projected keys; make it with this decoder's "
        "remember()");
  const Tensor h = state_row(hidden, H);                                                 // (1,H)
  const Tensor embedded = dropout->forward(embedding->forward({input_word}, Shape{1}));  // (1,H)
  const Tensor weights = attention->forward(h, memory.keys, memory.padding);             // (1,L)
  const Tensor context = matmul(weights, memory.values);                                 // (1,H)
  const nn::GRUOutput step = gru->step(cat({embedded, context}, 1), hidden);
  return DecoderState{step.output, step.h_n, weights};
}

// ---------------------------------------------------------------- the whole model

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
// loss is Σ_t −log_probs[t, y_t]. Without teacher forcing the next input is
// the argmax of the step's output layer, computed without recording (a word
// id carries no gradient); the fast path then records those step logits as
// the output layer's values (fast::linear_with_values) rather than computing
// them again — the values the tutorial's per-step decoder(…) call gives.
PairLoss Seq2Seq::pair_loss(const std::vector<int64_t>& source, const std::vector<int64_t>& target,
                            bool teacher_forcing) {
  check(!target.empty(), "Seq2Seq: the target is empty; it must at least hold EOS");
  const EncoderOutput encoded = encoder->forward(source);
  const AttentionMemory memory = decoder->remember(encoded);
  Tensor hidden = encoded.hidden;
  int64_t input = kSos;
  std::vector<Tensor> outputs;  // T' of (1,H)
  std::vector<Tensor> logits;   // greedy: T' of (1,V_out), out(output) of each step
  outputs.reserve(target.size());
  for (size_t t = 0; t < target.size(); ++t) {
    const DecoderState state = decoder->advance(input, hidden, memory);
    outputs.push_back(state.output);
    hidden = state.hidden;
    if (teacher_forcing) {
      input = target[t];
    } else {
      const NoGradGuard no_grad;
      logits.push_back(decoder->output_layer().forward(state.output));
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
  const EvalModeGuard eval_mode(*this);
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
