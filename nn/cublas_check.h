// CUGYM_CUBLAS_CHECK: throws std::runtime_error naming the failing cuBLAS call, its status, file
// and line, like CUGYM_CUDA_CHECK. Internal to nn/ (only CUDA translation units include it).
#pragma once

#include <cublas_v2.h>

#include <stdexcept>
#include <string>

namespace cugym::nn::internal {

[[noreturn]] inline void ThrowCublasError(const char* call, cublasStatus_t status, const char* file, int line) {
  throw std::runtime_error(std::string("cuBLAS error: ") + cublasGetStatusString(status) + " in " + call + " (" + file +
                           ":" + std::to_string(line) + ")");
}

}  // namespace cugym::nn::internal

#define CUGYM_CUBLAS_CHECK(call)                                                                \
  do {                                                                                          \
    cublasStatus_t cugym_cublas_status_ = (call);                                               \
    if (cugym_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                          \
      ::cugym::nn::internal::ThrowCublasError(#call, cugym_cublas_status_, __FILE__, __LINE__); \
  } while (0)
