// Internal to nn/: the factories of the two back ends (defined in backend_cpu.cpp and
// backend_cuda.cu) and the sizes they agree on. Not installed, no CUDA types.
#pragma once

#include <memory>

#include "core/macros.h"
#include "nn/backend.h"

namespace cugym::nn::internal {

std::shared_ptr<Backend> MakeCpuBackend(const BackendOptions& options);
#ifdef CUGYM_HAVE_CUDA
std::shared_ptr<Backend> MakeCudaBackend(const BackendOptions& options);
#endif

// PyTorch's clip_grad_norm_ adds this to the norm before dividing.
constexpr float kClipEps = 1e-6f;

// One row of Backend::ValueAdvantage and of its backward: both back ends run these, so they agree
// bit for bit (the sums run in the same order).
CUGYM_HD inline void ValueAdvantageRow(const float* x, float* y, int k) {
  float sum = 0.0f;
  for (int j = 0; j < k; ++j) sum += x[1 + j];
  const float base = x[0] - sum / static_cast<float>(k);
  for (int j = 0; j < k; ++j) y[j] = base + x[1 + j];
}
CUGYM_HD inline void ValueAdvantageBackwardRow(const float* dy, float* dx, int k) {
  float sum = 0.0f;
  for (int j = 0; j < k; ++j) sum += dy[j];
  const float mean = sum / static_cast<float>(k);
  dx[0] = sum;
  for (int j = 0; j < k; ++j) dx[1 + j] = dy[j] - mean;
}

}  // namespace cugym::nn::internal
