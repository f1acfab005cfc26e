// Error checking: library code throws, the CLI catches at the top and prints one line.
// CUGYM_CUDA_CHECK names the failing call, file and line (only usable where CUDA headers are).
#pragma once

#include <stdexcept>
#include <string>

namespace cugym {

[[noreturn]] void ThrowCudaError(const char* call, const char* message, const char* file, int line);

}  // namespace cugym

#define CUGYM_CUDA_CHECK(call)                                                               \
  do {                                                                                       \
    cudaError_t cugym_status_ = (call);                                                      \
    if (cugym_status_ != cudaSuccess)                                                        \
      ::cugym::ThrowCudaError(#call, cudaGetErrorString(cugym_status_), __FILE__, __LINE__); \
  } while (0)

// Checks the last error after a raw kernel launch.
#define CUGYM_CUDA_CHECK_LAST() CUGYM_CUDA_CHECK(cudaGetLastError())
