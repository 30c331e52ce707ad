// attograd.hpp — everything a program needs: #include "attograd.hpp".
//
// A two-minute tour (examples/autograd_basics.cpp has the whole program):
//
//   using namespace attograd;
//   Tensor a = requires_grad_(scalar(-4));
//   Tensor b = requires_grad_(scalar(2));
//   Tensor c = a + b;            // each op computes a value and records a Node
//   Tensor d = a * b + pow(b, 3);
//   Tensor g = c * d;
//   backward(g);                 // walks the Nodes from g back to a and b
//   grad(a).item();              // dg/da
//
// The layers, bottom up: tensor/ (storage, views, kernels), autograd/ (the
// graph, the ops, gradcheck, and fast/: every speed mechanism, proved equal
// to the reference path), nn/ (modules, losses, optimizers, checkpoints),
// models/ (the attention models). docs/architecture.md draws them.
//
// This header includes every public header of tensor/, autograd/ and nn/
// (tests/architecture/test_public_headers.cpp keeps it so). models/ and the
// SVG charts (plot/svg_plot.hpp, library attograd::plot) are included on
// their own. autograd/op_helpers.hpp is what writing an op of one's own
// takes (docs/extending.md).
#pragma once

#include "autograd/engine.hpp"
#include "autograd/fast/fast.hpp"
#include "autograd/gradcheck.hpp"
#include "autograd/inspect/anomaly.hpp"
#include "autograd/inspect/dot.hpp"
#include "autograd/inspect/graph_picture.hpp"
#include "autograd/inspect/profiler.hpp"
#include "autograd/op_helpers.hpp"
#include "autograd/ops.hpp"
#include "nn/activation.hpp"
#include "nn/attention.hpp"
#include "nn/checkpoint.hpp"
#include "nn/data_parallel.hpp"
#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/gradient_penalty.hpp"
#include "nn/gru.hpp"
#include "nn/init.hpp"
#include "nn/layer.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linear.hpp"
#include "nn/loss.hpp"
#include "nn/lr_scheduler.hpp"
#include "nn/module.hpp"
#include "nn/multihead_attention.hpp"
#include "nn/optim.hpp"
#include "nn/safetensors.hpp"
#include "nn/sequential.hpp"
#include "nn/transformer.hpp"
#include "tensor/atomic_file.hpp"
#include "tensor/factory.hpp"
#include "tensor/fast/storage_cache.hpp"
#include "tensor/input_file.hpp"
#include "tensor/kernels.hpp"
#include "tensor/kernels_gru.hpp"
#include "tensor/kernels_matvec.hpp"
#include "tensor/parallel.hpp"
#include "tensor/print.hpp"
#include "tensor/printable.hpp"
#include "tensor/random.hpp"
#include "tensor/tensor.hpp"
