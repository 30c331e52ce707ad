// tensor/error.hpp — the one way attograd reports bad input.
//
// Every check in the library goes through `check(...)` or `fail(...)`. Both
// build the message with fmt and throw `attograd::Error`; library code never
// calls exit() or abort(). A good message names the operation, the values
// involved and what to do about it:
//
//   check(a_cols == b_rows, "matmul: {} @ {}: inner sizes {} and {} differ",
//         a.shape(), b.shape(), a_cols, b_rows);
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace attograd {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws Error with the formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

// Throws Error with the formatted message when `condition` is false. The
// message is only formatted on failure.
template <typename... Args>
void check(bool condition, fmt::format_string<Args...> format, Args&&... args) {
  if (!condition) fail(format, std::forward<Args>(args)...);
}

}  // namespace attograd
