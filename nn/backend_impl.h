// Internal to nn/: the factories of the two back ends (defined in backend_cpu.cpp and
// backend_cuda.cu) and the sizes they agree on. Not installed, no CUDA types.
#pragma once

#include <memory>

#include "core/macros.h"
#include "nn/backend.h"

namespace cugym::nn::internal {

std::shared_ptr<Backend> MakeCpuBackend();
#ifdef CUGYM_HAVE_CUDA
std::shared_ptr<Backend> MakeCudaBackend();
#endif

// PyTorch's clip_grad_norm_ adds this to the norm before dividing.
constexpr float kClipEps = 1e-6f;

// Adam's moments are flushed to zero below the smallest normal float. A parameter whose gradient
// stays 0 (a dead ReLU's weights) decays its first moment by 0.9 per step into the subnormal range
// and then sticks there (0.1 of the smallest subnormals rounds to 0), where every CPU instruction
// that touches it takes a microcode assist: without the flush Adam took a third of a CartPole DQN
// update on an Intel Xeon. The flushed values are below 1.2e-38; the step they would take is below
// lr * 1e-30. Both back ends run this.
CUGYM_HD inline float FlushSubnormal(float x) { return (x < 0.0f ? -x : x) < 1.17549435e-38f ? 0.0f : x; }

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
