// nn/attention.cpp — masked softmax and the two attention layers.
//
// The layers are compositions of ops (bmm, Linear, tanh, and masked_softmax
// from autograd/ops_softmax.cpp), so their backward is the chain rule through
// those.
#include "nn/attention.hpp"

#include <fmt/format.h>

#include <cmath>

#include "autograd/ops.hpp"
#include "tensor/error.hpp"
#include "tensor/kernels.hpp"

namespace attograd::nn {

namespace {

void check_3d(const std::string& who, const char* what, const Tensor& t, const char* expected) {
  check(t.defined(), "{}: the {} are undefined", who, what);
  check(t.dim() == 3, "{}: {} of shape {} must be 3-D, {}", who, what, t.shape(), expected);
}

// Checks queries (B,Tq,·), keys (B,Tk,·), values (B,Tk,dv) against each other
// and the valid lengths; the sizes of the last axes are the caller's to check.
void check_attention_inputs(const std::string& who, const Tensor& queries, const Tensor& keys,
                            const Tensor& values, const std::vector<int64_t>& valid_lens,
                            const char* key_name) {
  check_3d(who, "queries", queries, "(batch, queries, query size)");
  check_3d(who, key_name, keys, "(batch, keys, key size)");
  check_3d(who, "values", values, "(batch, keys, value size)");
  const int64_t B = queries.shape()[0];
  check(keys.shape()[0] == B && values.shape()[0] == B,
        "{}: batch sizes differ: queries {}, {} {}, values {}; all three must have the same "
        "first axis B",
        who, queries.shape(), key_name, keys.shape(), values.shape());
  check(keys.shape()[1] == values.shape()[1],
        "{}: {} {} and values {} must pair up: {} keys but {} values per example", who, key_name,
        keys.shape(), values.shape(), keys.shape()[1], values.shape()[1]);
  check(keys.shape()[1] >= 1, "{}: {} {} hold no keys (Tk = 0); attention needs at least one", who,
        key_name, keys.shape());
  masked_softmax_row_lengths(who, {B, queries.shape()[1], keys.shape()[1]}, valid_lens);
}

}  // namespace

// ---------------------------------------------------------------- dot product

DotProductAttention::DotProductAttention(const DotProductAttentionOptions& options,
                                         Generator& generator)
    : Module("DotProductAttention") {
  dropout = register_module("dropout", std::make_shared<Dropout>(options.dropout(), generator));
}

// queries: (B,Tq,d), keys: (B,Tk,d), values: (B,Tk,dv) -> (B,Tq,dv)
Tensor DotProductAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                    const std::vector<int64_t>& valid_lens) {
  const std::string who = "DotProductAttention";
  check_attention_inputs(who, queries, keys, values, valid_lens, "keys");
  const int64_t d = queries.shape()[2];
  check(keys.shape()[2] == d,
        "{}: queries {} and keys {} must have the same size d on their last axis to be "
        "multiplied (got {} and {}); use AdditiveAttention for different sizes",
        who, queries.shape(), keys.shape(), d, keys.shape()[2]);
  const Tensor scores =
      bmm(queries, transpose(keys, 1, 2)) / static_cast<real>(std::sqrt(static_cast<double>(d)));
  const Tensor weights = masked_softmax(scores, valid_lens);
  attention_weights_ = detach(weights);
  return bmm(dropout->forward(weights), values);
}

std::string DotProductAttention::extra_repr() const {
  return fmt::format("dropout={}", dropout->p());
}

// ---------------------------------------------------------------- additive

AdditiveAttention::AdditiveAttention(const AdditiveAttentionOptions& options, Generator& generator)
    : Module("AdditiveAttention"), options_(options) {
  check(options.key_size() > 0 && options.query_size() > 0 && options.hidden_size() > 0,
        "AdditiveAttention: key_size ({}), query_size ({}) and hidden_size ({}) must all be "
        "positive",
        options.key_size(), options.query_size(), options.hidden_size());
  const int64_t h = options.hidden_size();
  W_k = register_module(
      "W_k", std::make_shared<Linear>(LinearOptions(options.key_size(), h).bias(false), generator));
  W_q = register_module("W_q", std::make_shared<Linear>(
                                   LinearOptions(options.query_size(), h).bias(false), generator));
  w_v =
      register_module("w_v", std::make_shared<Linear>(LinearOptions(h, 1).bias(false), generator));
  dropout = register_module("dropout", std::make_shared<Dropout>(options.dropout(), generator));
}

std::string AdditiveAttention::describe() const {
  return fmt::format("AdditiveAttention(key_size={}, query_size={}, hidden_size={})",
                     options_.key_size(), options_.query_size(), options_.hidden_size());
}

// keys: (B,Tk,key_size) -> (B,Tk,h)
Tensor AdditiveAttention::project_keys(const Tensor& keys) {
  check_3d(describe(), "keys", keys, "(batch, keys, key size)");
  check(keys.shape()[2] == options_.key_size(),
        "{}: keys of shape {} have size {} on the last axis, but the layer was built for "
        "key_size = {}",
        describe(), keys.shape(), keys.shape()[2], options_.key_size());
  return W_k->forward(keys);
}

// queries: (B,Tq,query_size), keys: (B,Tk,key_size), values: (B,Tk,dv) -> (B,Tq,dv)
Tensor AdditiveAttention::forward(const Tensor& queries, const Tensor& keys, const Tensor& values,
                                  const std::vector<int64_t>& valid_lens) {
  check_attention_inputs(describe(), queries, keys, values, valid_lens, "keys");
  return forward_projected(queries, project_keys(keys), values, valid_lens);
}

// queries: (B,Tq,query_size), projected_keys: (B,Tk,h), values: (B,Tk,dv) -> (B,Tq,dv)
Tensor AdditiveAttention::forward_projected(const Tensor& queries, const Tensor& projected_keys,
                                            const Tensor& values,
                                            const std::vector<int64_t>& valid_lens) {
  const std::string who = describe();
  check_attention_inputs(who, queries, projected_keys, values, valid_lens, "projected keys");
  check_sizes(who, queries, projected_keys);
  return bmm(dropout->forward(score(queries, projected_keys, valid_lens)), values);
}

// queries: (B,Tq,query_size), projected_keys: (B,Tk,h) -> (B,Tq,Tk)
Tensor AdditiveAttention::weights(const Tensor& queries, const Tensor& projected_keys,
                                  const std::vector<int64_t>& valid_lens) {
  const std::string who = describe();
  check_3d(who, "queries", queries, "(batch, queries, query size)");
  check_3d(who, "projected keys", projected_keys, "(batch, keys, hidden size)");
  check(projected_keys.shape()[0] == queries.shape()[0],
        "{}: batch sizes differ: queries {}, projected keys {}; both must have the same first "
        "axis B",
        who, queries.shape(), projected_keys.shape());
  check(projected_keys.shape()[1] >= 1,
        "{}: projected keys {} hold no keys (Tk = 0); attention needs at least one", who,
        projected_keys.shape());
  masked_softmax_row_lengths(
      who, {queries.shape()[0], queries.shape()[1], projected_keys.shape()[1]}, valid_lens);
  check_sizes(who, queries, projected_keys);
  return score(queries, projected_keys, valid_lens);
}

void AdditiveAttention::check_sizes(const std::string& who, const Tensor& queries,
                                    const Tensor& projected_keys) const {
  check(queries.shape()[2] == options_.query_size(),
        "{}: queries of shape {} have size {} on the last axis, but the layer was built for "
        "query_size = {}",
        who, queries.shape(), queries.shape()[2], options_.query_size());
  check(projected_keys.shape()[2] == options_.hidden_size(),
        "{}: projected keys of shape {} must have hidden_size = {} on the last axis (the output "
        "of project_keys)",
        who, projected_keys.shape(), options_.hidden_size());
}

// queries: (B,Tq,query_size), projected_keys: (B,Tk,h) -> (B,Tq,Tk)
Tensor AdditiveAttention::score(const Tensor& queries, const Tensor& projected_keys,
                                const std::vector<int64_t>& valid_lens) {
  // (B,Tq,1,h) + (B,1,Tk,h) -> (B,Tq,Tk,h): every query meets every key.
  const Tensor features = tanh(unsqueeze(W_q->forward(queries), 2) + unsqueeze(projected_keys, 1));
  const Tensor scores = squeeze(w_v->forward(features), 3);  // (B,Tq,Tk)
  const Tensor weights = masked_softmax(scores, valid_lens);
  attention_weights_ = detach(weights);
  return weights;
}

std::string AdditiveAttention::extra_repr() const {
  return fmt::format("key_size={}, query_size={}, hidden_size={}, dropout={}", options_.key_size(),
                     options_.query_size(), options_.hidden_size(), dropout->p());
}

}  // namespace attograd::nn
