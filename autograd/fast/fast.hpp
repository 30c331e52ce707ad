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
//   sentence products    autograd/fast/sentence_products.hpp   a teacher-forced sentence's
//                                                               inputs through a weight at once
//   gradient stealing    autograd/fast/gradient_stealing.hpp   a gradient nothing else sees
//                                                               kept without a copy
//   pooled allocation    tensor/fast/pool.hpp,                 small objects and storages
//                        tensor/fast/storage_cache.hpp          recycled
//
//   {
//     const fast::ReferencePath reference;  // everything below runs the reference path
//     …
//   }
#pragma once

#include "autograd/fast/deferred_gradient.hpp"
#include "autograd/fast/forward_values.hpp"
#include "autograd/fast/fused.hpp"
#include "autograd/fast/gradient_stealing.hpp"
#include "autograd/fast/sentence_products.hpp"

namespace attograd::fast {

// The switches above, as one thread has them. They are per thread: a
// thread that trains on another's behalf (a copy of the model taking part of
// the batch) takes the caller's settings with a UseSwitches guard.
struct Switches {
  bool deferred_gradients = true;
  bool reuse_forward_values = true;
  bool fused_ops = true;
  bool pooling = true;
  bool sentence_products = true;
  bool gradient_stealing = true;

  static Switches current();  // this thread's
  static Switches reference() { return {false, false, false, false, false, false}; }  // all off
};

// While alive, this thread runs with `switches`; restores its own when it ends.
class UseSwitches {
 public:
  explicit UseSwitches(const Switches& switches);
  ~UseSwitches();
  UseSwitches(const UseSwitches&) = delete;
  UseSwitches& operator=(const UseSwitches&) = delete;

 private:
  Switches previous_;
};

// While alive, this thread runs the reference path: every mechanism above is
// off. Restores the previous settings when it ends.
class ReferencePath : public UseSwitches {
 public:
  ReferencePath() : UseSwitches(Switches::reference()) {}
};

}  // namespace attograd::fast
