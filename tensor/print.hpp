// tensor/print.hpp — fmt::print("{}", t) shows a tensor the way PyTorch does:
//
//   tensor([[ 1.0000, -2.5000],
//           [ 3.0000,  4.0000]], shape=(2,2))
//
// Tensors with more than 1000 elements show the first and last three entries
// of each axis with "..." between, like torch's default print options.
#pragma once

#include <fmt/format.h>

#include <string>

#include "tensor/tensor.hpp"

namespace attograd {

std::string to_string(const Tensor& t);

}  // namespace attograd

template <>
struct fmt::formatter<attograd::Tensor> : fmt::formatter<std::string> {
  auto format(const attograd::Tensor& t, format_context& ctx) const {
    return fmt::formatter<std::string>::format(attograd::to_string(t), ctx);
  }
};
