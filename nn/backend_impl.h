// Internal to nn/: the factories of the two back ends (defined in backend_cpu.cpp and
// backend_cuda.cu) and the sizes they agree on. Not installed, no CUDA types.
#pragma once

#include <memory>

#include "nn/backend.h"

namespace cugym::nn::internal {

std::shared_ptr<Backend> MakeCpuBackend(const BackendOptions& options);
#ifdef CUGYM_HAVE_CUDA
std::shared_ptr<Backend> MakeCudaBackend(const BackendOptions& options);
#endif

// PyTorch's clip_grad_norm_ adds this to the norm before dividing.
constexpr float kClipEps = 1e-6f;

}  // namespace cugym::nn::internal
