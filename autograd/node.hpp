// autograd/node.hpp — one recorded operation in the graph.
//
// When an op runs on inputs that require grad, it returns an output whose
// grad_fn is a Node. The Node remembers the inputs (in order) and a closure
// that, given dL/d(output), returns dL/d(input) for each of them. The closure
// captures whatever the backward formula needs (inputs, the output's values);
// it must never capture the output tensor itself, which would make a cycle
// output → node → output and leak the graph.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "tensor/tensor.hpp"

namespace attograd {

struct Node {
  // grad_output has the output's shape, but not necessarily a contiguous
  // layout (it may be a transposed or broadcast view): read its raw data()
  // only through contiguous_data(). Returns one tensor per input: its
  // gradient, in the input's shape or any shape that broadcasts to it (the
  // engine sums broadcast axes away), or an undefined Tensor for "no gradient".
  using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;

  const char* name = "";       // the op, e.g. "matmul"; shown in error messages
  std::vector<Tensor> inputs;  // what this node's gradients flow into
  BackwardFn backward;
  bool released = false;  // set when backward() frees the graph

  ~Node();
};

}  // namespace attograd
