#include "tensor/print.hpp"

#include <algorithm>
#include <cmath>

namespace attograd {
namespace {

constexpr int64_t kSummaryThreshold = 1000;  // torch.set_printoptions(threshold=1000)
constexpr int64_t kEdgeItems = 3;            // entries kept at each end when eliding

struct Printer {
  const Tensor& t;
  bool summarize;
  bool scientific;
  int width;
  std::string out;

  std::string number(real value) const {
    return scientific ? fmt::format("{:.4e}", value) : fmt::format("{:.4f}", value);
  }

  // Prints the sub-tensor at `position` (storage offset) starting at `axis`;
  // `indent` is the column where this bracket level begins.
  void print(int64_t axis, int64_t position, int indent) {
    const real* base = t.storage()->data();
    const int64_t size = t.shape()[axis];
    const int64_t stride = t.strides()[axis];
    const bool elide = summarize && size > 2 * kEdgeItems;
    out += "[";
    for (int64_t i = 0; i < size; ++i) {
      if (elide && i == kEdgeItems) {
        if (axis + 1 == t.dim()) {
          out += "..., ";
        } else {
          out += "...,\n";
          out.append(indent + 1, ' ');
        }
        i = size - kEdgeItems;
      }
      if (axis + 1 == t.dim()) {
        out += fmt::format("{:>{}}", number(base[position + i * stride]), width);
        if (i + 1 < size) out += ", ";
      } else {
        print(axis + 1, position + i * stride, indent + 1);
        if (i + 1 < size) {
          out += ",";
          out += std::string(t.dim() - axis - 1, '\n');
          out += std::string(indent + 1, ' ');
        }
      }
    }
    out += "]";
  }
};

}  // namespace

std::string to_string(const Tensor& t) {
  if (!t.defined()) return "tensor(undefined)";
  const std::vector<real> values = t.to_vector();
  real largest = 0;
  real smallest_nonzero = 0;
  for (real v : values) {
    if (!std::isfinite(v)) continue;
    largest = std::max(largest, std::abs(v));
    if (v != 0 && (smallest_nonzero == 0 || std::abs(v) < smallest_nonzero)) {
      smallest_nonzero = std::abs(v);
    }
  }
  Printer printer{t, t.numel() > kSummaryThreshold,
                  largest >= real(1e8) || (smallest_nonzero != 0 && smallest_nonzero < real(1e-4)),
                  0, "tensor("};
  for (real v : values) {
    printer.width = std::max(printer.width, static_cast<int>(printer.number(v).size()));
  }
  if (t.dim() == 0) {
    printer.out += printer.number(*t.data());
  } else {
    printer.print(0, t.offset(), static_cast<int>(printer.out.size()));
  }
  printer.out += fmt::format(", shape={}", t.shape());
  if (t.impl().attachment) printer.out += t.impl().attachment->describe();
  return printer.out + ")";
}

}  // namespace attograd
