// tests/support/tensor_checks.hpp — comparing tensors element by element
// (and two checkpoints' model tensors bit for bit), and padded id arrays and
// the shipped pairs for the translation models' tests.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "models/text/batching.hpp"
#include "models/text/normalize.hpp"
#include "models/text/pairs.hpp"
#include "nn/safetensors.hpp"
#include "tensor/tensor.hpp"

namespace attograd::testing {

// Every model tensor of the safetensors file `a` (not the optimizer's
// "optimizer." ones) is in `b`, bit for bit, under the same name and shape,
// and `b` holds nothing else. Returns how many model tensors there are.
inline size_t require_same_model_tensors(const std::filesystem::path& a,
                                         const std::filesystem::path& b) {
  const nn::TensorFile left = nn::read_safetensors(a);
  const nn::TensorFile right = nn::read_safetensors(b);
  std::map<std::string, Tensor> by_name(right.tensors.begin(), right.tensors.end());
  size_t model_tensors = 0;
  for (const auto& [name, tensor] : left.tensors) {
    if (name.rfind("optimizer.", 0) == 0) continue;
    ++model_tensors;
    INFO("tensor " << name);
    REQUIRE(by_name.count(name) == 1);
    REQUIRE(by_name[name].shape() == tensor.shape());
    const std::vector<real> x = tensor.to_vector(), y = by_name[name].to_vector();
    CHECK(std::memcmp(x.data(), y.data(), x.size() * sizeof(real)) == 0);
  }
  CHECK(model_tensors == right.tensors.size());
  return model_tensors;
}

// Every element of the tensors (a model's parameters, say), one tensor after another.
inline std::vector<real> values_of(const std::vector<Tensor>& tensors) {
  std::vector<real> values;
  for (const Tensor& t : tensors) {
    const std::vector<real> these = t.to_vector();
    values.insert(values.end(), these.begin(), these.end());
  }
  return values;
}

// The largest |a[i] − b[i]| of two lists of numbers of the same length.
template <typename T>
requires std::is_arithmetic_v<T>
double max_difference(const std::vector<T>& a, const std::vector<T>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
  }
  return worst;
}

// The largest |a − b| over the elements of two tensors of the same size.
inline double max_difference(const Tensor& a, const Tensor& b) {
  return max_difference(a.to_vector(), b.to_vector());
}

// The largest |a − b| over the elements of two lists of tensors (two models'
// parameters, say), pair by pair.
inline double max_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, max_difference(a[i], b[i]));
  return worst;
}

// Same shape, and every element within `tolerance` (reported by index).
inline void check_close(const Tensor& a, const Tensor& b, double tolerance) {
  REQUIRE(a.shape() == b.shape());
  const std::vector<real> x = a.to_vector(), y = b.to_vector();
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("element " << i);
    CHECK(x[i] == Approx(y[i]).margin(tolerance));
  }
}

// Sentences (their ids, the end token included) padded with `pad` to T ids.
inline text::PaddedArray padded(const std::vector<std::vector<int64_t>>& sentences, int64_t T,
                                int64_t pad) {
  text::PaddedArray array;
  array.rows = static_cast<int64_t>(sentences.size());
  array.num_steps = T;
  for (const std::vector<int64_t>& ids : sentences) {
    const std::vector<int64_t> row = text::truncate_pad(ids, T, pad);
    array.ids.insert(array.ids.end(), row.begin(), row.end());
    array.valid_lengths.push_back(std::min<int64_t>(static_cast<int64_t>(ids.size()), T));
  }
  return array;
}

// The first `count` pairs of the shipped data (data/eng-fra.tsv, English
// source) with d2l's preprocessing, vocabularies and T = 10.
inline text::BatchedData shipped_pairs(int64_t count) {
  const text::PairSet set =
      text::read_pairs(std::string(ATTOGRAD_SOURCE_DIR) + "/data/eng-fra.tsv",
                       text::ReadOptions().reverse(true).normalization(text::Normalization::kD2l));
  return text::prepare_batched_data(set.pairs, text::BatchedDataOptions().num_examples(count));
}

}  // namespace attograd::testing
