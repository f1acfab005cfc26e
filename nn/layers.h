// Linear (+ ReLU or tanh) and Conv2d (+ ReLU) layers, forward and backward written out on the back end's
// primitives.
//
// Shapes (row-major, docs/nn.md): x [n x in], weight [out x in] (PyTorch's layout), bias [out],
// y [n x out]. y = act(x W^T + b): one GEMM and one fused bias + activation pass.
//
// Conv2d (ConvSpec: stride 1, no padding) is im2col + the same Linear on the patches: images x
// [n x H*W*C] (NHWC), patches [n*Ho*Wo x C*k*k] (Backend::Im2Col), weight [out x C*k*k] (PyTorch's
// [out][C][k][k] flattened), y [n*Ho*Wo x out], which is [n x Ho*Wo*out] NHWC: flattened in
// (y, x, c) order, where PyTorch's NCHW flattens (c, y, x).
#pragma once

#include "nn/backend.h"
#include "nn/tensor.h"

namespace cugym::nn {

using WeightView = MatrixView<float, Layout::kRowMajor>;
using ConstWeightView = MatrixView<const float, Layout::kRowMajor>;

struct LinearParams {
  ConstWeightView weight;        // [out x in]
  VectorView<const float> bias;  // [out]
};

struct LinearGrads {
  WeightView weight;       // [out x in], overwritten
  VectorView<float> bias;  // [out], overwritten
};

// K replicas of one layer (MlpOptions::replicas): replica r's weight and bias, and their
// gradients, lie r * stride floats after those the LinearParams / LinearGrads view, and x, y, dy
// and dx hold K equal blocks of rows, replica r's after replica r - 1's. One batched GEMM per
// product and one bias pass for all K. count 1: a plain layer.
struct LayerReplicas {
  int64_t count = 1;
  int64_t stride = 0;
};

// y = act(x W^T + b). 2 * n * in * out flops.
void LinearForward(Backend& backend, const LinearParams& params, ConstBatchView x, BatchView y, Activation act,
                   const LayerReplicas& replicas = {});

// Backward of LinearForward. On entry dy holds dL/dy; on return it holds dL/dz (z = x W^T + b).
// Writes grads (dW = dz^T x, db = column sums of dz) and, when dx is not empty, dx = dz W.
// y is the forward output (ReLU's mask, tanh's 1 - y^2; unused for kNone). With bias_grad_ready
// (only for kNone) grads.bias already holds the column sums of dy (the fused loss kernel wrote
// them) and the reduction pass is skipped. 4 * n * in * out flops with dx, half without.
void LinearBackward(Backend& backend, const LinearParams& params, ConstBatchView x, ConstBatchView y, BatchView dy,
                    Activation act, const LinearGrads& grads, BatchView dx, bool bias_grad_ready = false,
                    const LayerReplicas& replicas = {});

// Conv2d's parameters and gradients are a LinearParams / LinearGrads with weight [out x C*k*k].
// y [n x Ho*Wo*out] = act(conv(x) + b) for x [n x H*W*C]; `patches` [n*Ho*Wo x C*k*k] is
// scratch that keeps the im2col of x for Conv2dBackward. 2 * n * Ho*Wo * out * C*k*k flops. With
// replicas, x holds K equal blocks of images and replica r's filters lie r * stride floats on.
void Conv2dForward(Backend& backend, const ConvSpec& conv, const LinearParams& params, ConstBatchView x,
                   BatchView patches, BatchView y, Activation act, const LayerReplicas& replicas = {});

// Backward of Conv2dForward: as LinearBackward on the patches (dy holds dL/dy on entry, dL/dz on
// return; grads overwritten). With dx [n x H*W*C] not empty, also the input gradient: dpatches
// [n*Ho*Wo x C*k*k] (scratch) = dz W, then dx = Col2Im(dpatches). A first layer needs neither.
void Conv2dBackward(Backend& backend, const ConvSpec& conv, const LinearParams& params, ConstBatchView patches,
                    ConstBatchView y, BatchView dy, Activation act, const LinearGrads& grads, BatchView dpatches,
                    BatchView dx, const LayerReplicas& replicas = {});

}  // namespace cugym::nn
