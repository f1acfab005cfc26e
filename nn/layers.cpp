// Linear layers as GEMMs on column-major views of row-major data (see nn/tensor.h).
//
// With X = x^T (column-major [in x n]), W^T (column-major [in x out], what W [out x in] row-major
// is) and Y = y^T (column-major [out x n]):
//   forward   Y   = (W^T)^T X        Gemm(kT, W^T, kN, X)
//   input     dX  = W^T dZ           Gemm(kN, W^T, kN, dZ)
//   weight    dW^T = X dZ^T          Gemm(kN, X, kT, dZ)
#include "nn/layers.h"

#include <stdexcept>
#include <string>

namespace cugym::nn {
namespace {

void CheckShapes(const char* op, const LinearParams& p, int64_t x_cols, int64_t y_cols) {
  const int64_t out = p.weight.rows(), in = p.weight.cols();
  if (p.bias.size() != out || x_cols != in || y_cols != out) {
    throw std::invalid_argument(std::string(op) + ": weight " + std::to_string(out) + " x " + std::to_string(in) +
                                ", bias " + std::to_string(p.bias.size()) + ", input width " + std::to_string(x_cols) +
                                ", output width " + std::to_string(y_cols));
  }
}

// Rows per replica; throws unless `rows` splits into replicas.count equal blocks.
int64_t ReplicaRows(const char* op, int64_t rows, const LayerReplicas& replicas) {
  if (replicas.count < 1 || rows % replicas.count != 0) {
    throw std::invalid_argument(std::string(op) + ": " + std::to_string(rows) + " rows for " +
                                std::to_string(replicas.count) + " replicas (expected equal blocks)");
  }
  return rows / replicas.count;
}

// The first replica's block of a [K n x f] batch, column-major [f x n] (what the GEMMs take; with
// one replica, the whole batch: GemmBatched of one is Gemm).
template <class T>
MatrixView<T, Layout::kColMajor> FirstBlock(MatrixView<T, Layout::kRowMajor> v, int64_t rows) {
  return {v.data(), v.cols(), rows, v.device()};
}

}  // namespace

void LinearForward(Backend& backend, const LinearParams& params, ConstBatchView x, BatchView y, Activation act,
                   const LayerReplicas& replicas) {
  CheckShapes("LinearForward", params, x.cols(), y.cols());
  if (x.rows() != y.rows()) {
    throw std::invalid_argument("LinearForward: x has " + std::to_string(x.rows()) + " rows, y " +
                                std::to_string(y.rows()));
  }
  const int64_t n = ReplicaRows("LinearForward", x.rows(), replicas);
  const int64_t in = x.cols(), out = y.cols();
  backend.GemmBatched(replicas.count, Op::kT, params.weight.Transpose(), replicas.stride, Op::kN, FirstBlock(x, n),
                      n * in, 1.0f, 0.0f, FirstBlock(y, n), n * out);
  backend.BiasActivation(y, params.bias, act, replicas.count, replicas.stride);
}

void LinearBackward(Backend& backend, const LinearParams& params, ConstBatchView x, ConstBatchView y, BatchView dy,
                    Activation act, const LinearGrads& grads, BatchView dx, bool bias_grad_ready,
                    const LayerReplicas& replicas) {
  CheckShapes("LinearBackward", params, x.cols(), dy.cols());
  if (grads.weight.rows() != params.weight.rows() || grads.weight.cols() != params.weight.cols() ||
      grads.bias.size() != params.bias.size()) {
    throw std::invalid_argument("LinearBackward: gradient shapes differ from the parameters'");
  }
  if (x.rows() != dy.rows() || (dx.size() > 0 && (dx.rows() != x.rows() || dx.cols() != x.cols()))) {
    throw std::invalid_argument("LinearBackward: x has " + std::to_string(x.rows()) + " rows, dy " +
                                std::to_string(dy.rows()) + ", dx " + std::to_string(dx.rows()));
  }
  if (bias_grad_ready && act != Activation::kNone) {
    throw std::invalid_argument("LinearBackward: bias_grad_ready needs Activation::kNone (no mask to apply)");
  }
  const int64_t n = ReplicaRows("LinearBackward", x.rows(), replicas);
  const int64_t in = x.cols(), out = dy.cols(), k = replicas.count, stride = replicas.stride;
  if (!bias_grad_ready) backend.ActivationBackward(dy, y, grads.bias, act, k, stride);
  const ConstColMajorView dz = FirstBlock(ConstBatchView(dy), n);
  backend.GemmBatched(k, Op::kN, FirstBlock(x, n), n * in, Op::kT, dz, n * out, 1.0f, 0.0f, grads.weight.Transpose(),
                      stride);
  if (dx.size() > 0) {
    backend.GemmBatched(k, Op::kN, params.weight.Transpose(), stride, Op::kN, dz, n * out, 1.0f, 0.0f,
                        FirstBlock(dx, n), n * in);
  }
}

namespace {

// The convolution's output [n x Ho*Wo*out] as the patches' Linear output [n*Ho*Wo x out] (the same memory).
template <class View>
View AsPositions(const char* op, const ConvSpec& conv, View y, int64_t n) {
  CheckConvSpec(conv, op);
  if (y.rows() != n || y.cols() != conv.out_features()) {
    throw std::invalid_argument(std::string(op) + ": output " + std::to_string(y.rows()) + " x " +
                                std::to_string(y.cols()) + ", expected " + std::to_string(n) + " x " +
                                std::to_string(conv.out_features()));
  }
  const int64_t positions = static_cast<int64_t>(conv.out_height()) * conv.out_width();
  return View(y.data(), n * positions, conv.out_channels, y.device());
}

}  // namespace

void Conv2dForward(Backend& backend, const ConvSpec& conv, const LinearParams& params, ConstBatchView x,
                   BatchView patches, BatchView y, Activation act, const LayerReplicas& replicas) {
  BatchView out = AsPositions("Conv2dForward", conv, y, x.rows());
  backend.Im2Col(x, conv, patches);
  LinearForward(backend, params, patches, out, act, replicas);
}

void Conv2dBackward(Backend& backend, const ConvSpec& conv, const LinearParams& params, ConstBatchView patches,
                    ConstBatchView y, BatchView dy, Activation act, const LinearGrads& grads, BatchView dpatches,
                    BatchView dx, const LayerReplicas& replicas) {
  const int64_t n = y.rows();
  ConstBatchView out = AsPositions("Conv2dBackward", conv, y, n);
  BatchView dout = AsPositions("Conv2dBackward", conv, dy, n);
  LinearBackward(backend, params, patches, out, dout, act, grads, dx.size() > 0 ? dpatches : BatchView(), false,
                 replicas);
  if (dx.size() > 0) backend.Col2Im(dpatches, conv, dx);
}

}  // namespace cugym::nn
