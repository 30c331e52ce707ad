// models/text/shuffle.hpp — a shuffle that gives the same order everywhere.
//
// std::mt19937_64 is specified bit for bit by the C++ standard, but
// std::shuffle and std::uniform_int_distribution are not: libstdc++, libc++
// and MSVC turn the same random numbers into different orders. The data
// splits and batch orders must be reproducible from a seed on any platform,
// so we write Fisher–Yates ourselves with `rng() % (i + 1)`. Its modulo bias
// is below n / 2^64, far too small to matter for any data set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace attograd::text {

// Fisher–Yates: for i from the end down to 1, swap element i with a uniformly
// chosen element j in [0, i].
template <typename T>
void shuffle_in_place(std::vector<T>& items, std::mt19937_64& rng) {
  for (std::size_t i = items.size(); i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(rng() % static_cast<std::uint64_t>(i));
    std::swap(items[i - 1], items[j]);
  }
}

// A random permutation of 0, 1, ..., count - 1.
inline std::vector<std::int64_t> shuffled_indices(std::int64_t count, std::mt19937_64& rng) {
  std::vector<std::int64_t> indices(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) indices[static_cast<std::size_t>(i)] = i;
  shuffle_in_place(indices, rng);
  return indices;
}

}  // namespace attograd::text
