// autograd/node.hpp — one recorded operation in the graph.
//
// When an op runs on inputs that require grad, it returns an output whose
// grad_fn is a Node. The Node remembers the inputs (in order) and a closure
// that, given dL/d(output), returns dL/d(input) for each of them (a Gradient,
// autograd/gradient.hpp). The closure captures whatever the backward formula
// needs (inputs, the output's values); it must never capture the output
// tensor itself, which would make a cycle output → node → output and leak
// the graph.
#pragma once

#include <vector>

#include "autograd/gradient.hpp"
#include "tensor/tensor.hpp"

namespace attograd {

// A backward closure: grad_output (the output's shape) -> one Gradient per
// input. SharedFunction is std::function whose copies share the callable.
using BackwardFn = SharedFunction<Gradients(const Tensor&)>;

struct Node {
  // grad_output has the output's shape, but not necessarily a contiguous
  // layout (it may be a transposed or broadcast view): read its raw data()
  // only through contiguous_data(). Returns one Gradient per input: a tensor
  // in the input's shape or any shape that broadcasts to it (the engine sums
  // broadcast axes away), or an undefined one for "no gradient".
  using BackwardFn = attograd::BackwardFn;
  using Inputs = ObjectVector<Tensor>;

  const char* name = "";  // the op, e.g. "matmul"; shown in error messages
  Inputs inputs;          // what this node's gradients flow into
  BackwardFn backward;
  bool released = false;  // set when backward() frees the graph

  ~Node();
};

}  // namespace attograd
