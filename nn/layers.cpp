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

}  // namespace

void LinearForward(Backend& backend, const LinearParams& params, ConstBatchView x, BatchView y, Activation act) {
  CheckShapes("LinearForward", params, x.cols(), y.cols());
  if (x.rows() != y.rows()) {
    throw std::invalid_argument("LinearForward: x has " + std::to_string(x.rows()) + " rows, y " +
                                std::to_string(y.rows()));
  }
  backend.Gemm(Op::kT, params.weight.Transpose(), Op::kN, x.Transpose(), 1.0f, 0.0f, y.Transpose());
  backend.BiasActivation(y, params.bias, act);
}

void LinearBackward(Backend& backend, const LinearParams& params, ConstBatchView x, ConstBatchView y, BatchView dy,
                    Activation act, const LinearGrads& grads, BatchView dx, bool bias_grad_ready) {
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
  if (!bias_grad_ready) backend.ActivationBackward(dy, y, grads.bias, act);
  backend.Gemm(Op::kN, x.Transpose(), Op::kT, ConstBatchView(dy).Transpose(), 1.0f, 0.0f, grads.weight.Transpose());
  if (dx.size() > 0) {
    backend.Gemm(Op::kN, params.weight.Transpose(), Op::kN, ConstBatchView(dy).Transpose(), 1.0f, 0.0f, dx.Transpose());
  }
}

}  // namespace cugym::nn
