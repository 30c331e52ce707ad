// tests/support/tensor_checks.hpp — comparing tensors element by element, and
// padded id arrays for the translation models' tests.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

#include "models/text/batching.hpp"
#include "tensor/tensor.hpp"

namespace attograd::testing {

// The largest |a − b| over the elements of two tensors of the same size.
inline double max_difference(const Tensor& a, const Tensor& b) {
  const std::vector<real> x = a.to_vector(), y = b.to_vector();
  REQUIRE(x.size() == y.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(x[i]) - static_cast<double>(y[i])));
  }
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

}  // namespace attograd::testing
