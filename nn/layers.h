// Linear (+ ReLU) layers, forward and backward written out on the back end's primitives.
//
// Shapes (row-major, docs/nn.md): x [n x in], weight [out x in] (PyTorch's layout), bias [out],
// y [n x out]. y = act(x W^T + b): one GEMM and one fused bias + activation pass.
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

// y = act(x W^T + b). 2 * n * in * out flops.
void LinearForward(Backend& backend, const LinearParams& params, ConstBatchView x, BatchView y, Activation act);

// Backward of LinearForward. On entry dy holds dL/dy; on return it holds dL/dz (z = x W^T + b).
// Writes grads (dW = dz^T x, db = column sums of dz) and, when dx is not empty, dx = dz W.
// y is the forward output (its sign is the ReLU mask; unused for kNone). With bias_grad_ready
// (only for kNone) grads.bias already holds the column sums of dy (the fused loss kernel wrote
// them) and the reduction pass is skipped. 4 * n * in * out flops with dx, half without.
void LinearBackward(Backend& backend, const LinearParams& params, ConstBatchView x, ConstBatchView y, BatchView dy,
                    Activation act, const LinearGrads& grads, BatchView dx, bool bias_grad_ready = false);

}  // namespace cugym::nn
