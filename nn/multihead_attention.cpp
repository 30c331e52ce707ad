// nn/multihead_attention.cpp — h scaled dot-product attentions side by side
// (nn/multihead_attention.hpp). A composition of Linear, reshape, permute and
// DotProductAttention, so its backward is the chain rule through them.
#include "nn/multihead_attention.hpp"

#include <fmt/format.h>

#include "autograd/ops.hpp"
#include "tensor/error.hpp"

namespace attograd::nn {

// (B,T,d) -> (B,T,h,d/h) -> (B,h,T,d/h) -> (B·h,T,d/h)
Tensor transpose_qkv(const Tensor& x, int64_t num_heads) {
  check(x.defined() && x.dim() == 3 && num_heads >= 1 && x.shape()[2] % num_heads == 0,
        "transpose_qkv: input of shape {} cannot be split into {} heads; it must be (B,T,d) "
        "with d a multiple of the number of heads",
        x.defined() ? x.shape() : Shape{}, num_heads);
  const int64_t B = x.shape()[0], T = x.shape()[1];
  const Tensor heads = permute(reshape(x, {B, T, num_heads, -1}), {0, 2, 1, 3});
  return reshape(heads, {B * num_heads, T, -1});
}

// (B·h,T,d/h) -> (B,h,T,d/h) -> (B,T,h,d/h) -> (B,T,d)
Tensor transpose_output(const Tensor& x, int64_t num_heads) {
  check(x.defined() && x.dim() == 3 && num_heads >= 1 && x.shape()[0] % num_heads == 0,
        "transpose_output: input of shape {} cannot be joined from {} heads; it must be "
        "(B·h,T,d/h) with its first axis a multiple of the number of heads",
        x.defined() ? x.shape() : Shape{}, num_heads);
  const int64_t T = x.shape()[1];
  const Tensor heads = permute(reshape(x, {-1, num_heads, T, x.shape()[2]}), {0, 2, 1, 3});
  return reshape(heads, {heads.shape()[0], T, -1});
}

MultiHeadAttention::MultiHeadAttention(const MultiHeadAttentionOptions& options,
                                       Generator& generator)
    : Module("MultiHeadAttention"), options_(options) {
  check(options.key_size() > 0 && options.query_size() > 0 && options.value_size() > 0 &&
            options.num_hiddens() > 0 && options.num_heads() > 0,
        "{}: every size must be positive", describe());
  check(options.num_hiddens() % options.num_heads() == 0,
        "{}: num_heads = {} does not divide num_hiddens = {}; each head gets num_hiddens / "
        "num_heads numbers, so choose num_hiddens a multiple of num_heads",
        describe(), options.num_heads(), options.num_hiddens());
  const int64_t d = options.num_hiddens();
  const bool bias = options.bias();
  attention = register_module(
      "attention", std::make_shared<DotProductAttention>(
                       DotProductAttentionOptions().dropout(options.dropout()), generator));
  W_q = register_module("W_q", std::make_shared<Linear>(
                                   LinearOptions(options.query_size(), d).bias(bias), generator));
  W_k = register_module(
      "W_k", std::make_shared<Linear>(LinearOptions(options.key_size(), d).bias(bias), generator));
  W_v = register_module("W_v", std::make_shared<Linear>(
                                   LinearOptions(options.value_size(), d).bias(bias), generator));
  W_o = register_module("W_o", std::make_shared<Linear>(LinearOptions(d, d).bias(bias), generator));
}

std::string MultiHeadAttention::describe() const {
  return fmt::format(
      "MultiHeadAttention(key_size={}, query_size={}, value_size={}, num_hiddens={}, "
      "num_heads={})",
      options_.key_size(), options_.query_size(), options_.value_size(), options_.num_hiddens(),
      options_.num_heads());
}

// queries: (B,Tq,query_size), keys: (B,Tk,key_size), values: (B,Tk,value_size) -> (B,Tq,d)
Tensor MultiHeadAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                   const std::vector<int64_t>& valid_lens) {
  const std::string who = describe();
  for (const auto& [name, t, size] :
       {std::tuple<const char*, const Tensor&, int64_t>{"queries", queries, options_.query_size()},
        {"keys", keys, options_.key_size()},
        {"values", values, options_.value_size()}}) {
    check(t.defined() && t.dim() == 3 && t.shape()[2] == size,
          "{}: {} of shape {} must be 3-D and end in {} (batch, positions, {})", who, name,
          t.defined() ? t.shape() : Shape{}, size, size);
  }
  const int64_t B = queries.shape()[0], Tq = queries.shape()[1], Tk = keys.shape()[1];
  check(keys.shape()[0] == B && values.shape()[0] == B && values.shape()[1] == Tk && Tk >= 1,
        "{}: queries {}, keys {} and values {} must share the batch size, and keys and values "
        "must pair up (at least one of each)",
        who, queries.shape(), keys.shape(), values.shape());
  masked_softmax_row_lengths(who, {B, Tq, Tk}, valid_lens);
  const int64_t h = options_.num_heads();
  // Each head of example b attends with b's lengths: (B) -> (B·h), (B·Tq) -> (B·h·Tq).
  std::vector<int64_t> head_lens;
  const size_t per_example = valid_lens.size() / static_cast<size_t>(B);
  for (int64_t b = 0; b < B && !valid_lens.empty(); ++b) {
    const auto first = valid_lens.begin() + static_cast<std::ptrdiff_t>(b * per_example);
    for (int64_t i = 0; i < h; ++i) {
      head_lens.insert(head_lens.end(), first, first + static_cast<std::ptrdiff_t>(per_example));
    }
  }
  const Tensor pooled = attention->forward(transpose_qkv(W_q->forward(queries), h),
                                           transpose_qkv(W_k->forward(keys), h),
                                           transpose_qkv(W_v->forward(values), h), head_lens);
  attention_weights_ = reshape(attention->attention_weights(), {B, h, Tq, Tk});
  return W_o->forward(transpose_output(pooled, h));  // (B·h,Tq,d/h) -> (B,Tq,d) -> (B,Tq,d)
}

std::string MultiHeadAttention::extra_repr() const {
  return fmt::format(
      "key_size={}, query_size={}, value_size={}, num_hiddens={}, num_heads={}, bias={}",
      options_.key_size(), options_.query_size(), options_.value_size(), options_.num_hiddens(),
      options_.num_heads(), options_.bias());
}

}  // namespace attograd::nn
