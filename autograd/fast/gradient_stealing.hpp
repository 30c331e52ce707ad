// autograd/fast/gradient_stealing.hpp — keeping a gradient without a copy
// when nothing else can see it.
//
// The plain algorithm copies a gradient before it writes into it: a leaf's
// .grad is a tensor of its own (an optimizer scales it in place), and a
// tensor's pending sum is added to in place only once it is a copy, because
// the first gradient may be a view some closure still reads. Most gradients
// are seen by nothing else: a closure made them and returned the only handle.
// Such a gradient is kept as it is and written in place — what PyTorch's
// AccumulateGrad calls stealing the gradient. The values are the same bits
// either way; only a copy per gradient is saved.
//
// Where it is reached: Gradient::own (autograd/gradient.cpp) asks steal()
// before it copies.
// What it saves: one copy of each gradient kept or summed — 0.7 % of a
// teacher-forced and 1.9 % of a greedy iteration of the tutorial's recipe
// (the "without gradient stealing" row of `build/bench/bench_seq2seq`,
// median of three runs; docs/fast_paths.md), within the host's noise.
// Switch: fast::set_gradient_stealing(false), or a fast::ReferencePath guard
// (autograd/fast/fast.hpp): every gradient is then copied.
#pragma once

#include "tensor/tensor.hpp"

namespace attograd::fast {

// Whether a gradient nothing else sees is kept without a copy (on by
// default). Per thread.
bool gradient_stealing();
void set_gradient_stealing(bool on);

// True when the switch is on and `t` is the only way to reach its values —
// no other handle, view or closure shares them — and it fills its whole
// storage in row-major order: then it can be kept, and later written in
// place, without a copy.
bool steal(const Tensor& t);

}  // namespace attograd::fast
