// autograd/fast/fast.hpp — every speed mechanism, and the one switch that
// turns them all off.
//
// The reference path is the specification: plain ops whose backward returns
// dense gradients, an optimizer that reads grad() and updates in step(), a
// malloc per object. Each mechanism here computes the same training, and a
// test runs the same training with it on and off and compares
// (tests/autograd/test_fast_paths.cpp, tests/models/test_fast_paths_training.cpp).
// docs/fast_paths.md says what each saves, measured.
//
//   deferred gradients   autograd/fast/deferred_gradient.hpp   a weight's dyᵀx kept as its
//                                                               factors, a table's rows as rows
//   forward values       autograd/fast/forward_values.hpp      values computed once, recorded later
//   fused ops            autograd/fast/fused.hpp               softmax and bmm as one node
//   pooled allocation    tensor/fast/pool.hpp                       small objects and storages
//   recycled
//
//   {
//     const fast::ReferencePath reference;  // everything below runs the reference path
//     …
//   }
#pragma once

#include "autograd/fast/deferred_gradient.hpp"
#include "autograd/fast/forward_values.hpp"
#include "autograd/fast/fused.hpp"

namespace attograd::fast {

// While alive, this thread runs the reference path: every mechanism above is
// off. Restores the previous settings when it ends.
class ReferencePath {
 public:
  ReferencePath();
  ~ReferencePath();
  ReferencePath(const ReferencePath&) = delete;
  ReferencePath& operator=(const ReferencePath&) = delete;

 private:
  bool deferred_, reuse_, fused_, pooling_;
};

}  // namespace attograd::fast
