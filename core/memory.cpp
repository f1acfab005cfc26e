// Host and CUDA memory for Buffer.
#include "core/memory.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <stdexcept>
#include <string>

#include "core/error.h"

#ifdef CUGYM_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace cugym {
namespace {

#ifndef CUGYM_HAVE_CUDA
[[noreturn]] void NoCuda() { throw std::runtime_error("CUDA memory requested, but this cugym was built without CUDA"); }
#endif

std::string Mib(std::size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

void* AllocateBytes(Device device, std::size_t bytes) {
  if (bytes == 0) return nullptr;
  if (device == Device::kCpu) {
    std::size_t rounded = (bytes + 63) / 64 * 64;
    void* ptr = std::aligned_alloc(64, rounded);
    if (ptr == nullptr) throw std::runtime_error("cannot allocate " + Mib(bytes) + " of host memory");
    return ptr;
  }
#ifdef CUGYM_HAVE_CUDA
  void* ptr = nullptr;
  cudaError_t status = cudaMalloc(&ptr, bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error("cannot allocate " + Mib(bytes) + " of GPU memory (" + cudaGetErrorString(status) + ")");
  }
  return ptr;
#else
  NoCuda();
#endif
}

void FreeBytes(Device device, void* ptr) noexcept {
  if (ptr == nullptr) return;
  if (device == Device::kCpu) {
    std::free(ptr);
    return;
  }
#ifdef CUGYM_HAVE_CUDA
  cudaFree(ptr);  // destructors never throw; a failure here only leaks
#endif
}

void CopyBytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_device == Device::kCpu && src_device == Device::kCpu) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef CUGYM_HAVE_CUDA
  CUGYM_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
#else
  NoCuda();
#endif
}

void ZeroBytes(Device device, void* ptr, std::size_t bytes) {
  if (bytes == 0) return;
  if (device == Device::kCpu) {
    std::memset(ptr, 0, bytes);
    return;
  }
#ifdef CUGYM_HAVE_CUDA
  CUGYM_CUDA_CHECK(cudaMemset(ptr, 0, bytes));
#else
  NoCuda();
#endif
}

std::size_t AvailableBytes(Device device) {
  if (device == Device::kCpu) {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    std::size_t kib = 0;
    std::string unit;
    while (meminfo >> key >> kib >> unit) {
      if (key == "MemAvailable:") return kib * 1024;
    }
    long pages = sysconf(_SC_AVPHYS_PAGES);
    long page_size = sysconf(_SC_PAGESIZE);
    return pages > 0 && page_size > 0 ? static_cast<std::size_t>(pages) * page_size : SIZE_MAX;
  }
#ifdef CUGYM_HAVE_CUDA
  std::size_t free_bytes = 0, total_bytes = 0;
  CUGYM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
#else
  NoCuda();
#endif
}

void CheckMemoryFits(const std::string& what, int64_t count, double bytes_each, Device device,
                     const std::string& detail) {
  const double needed = static_cast<double>(count) * bytes_each;
  const std::size_t available = AvailableBytes(device);
  if (needed <= 0.9 * static_cast<double>(available)) return;
  const std::string each = std::to_string(static_cast<long long>(bytes_each / (1 << 20)));
  throw std::invalid_argument(what + (count == 1 ? " needs " : " need " + std::to_string(count) + " x ") + each +
                              " MiB of " + DeviceName(device) + " memory but only " + std::to_string(available >> 20) +
                              " MiB is free" + (detail.empty() ? "" : " (" + detail + ")"));
}

void Synchronize(Device device) {
  if (device == Device::kCpu) return;
#ifdef CUGYM_HAVE_CUDA
  CUGYM_CUDA_CHECK(cudaDeviceSynchronize());
#else
  NoCuda();
#endif
}

void SynchronizeStream(Device device, void* stream) {
  if (device == Device::kCpu) return;
#ifdef CUGYM_HAVE_CUDA
  CUGYM_CUDA_CHECK(cudaStreamSynchronize(stream != nullptr ? static_cast<cudaStream_t>(stream) : cudaStreamPerThread));
#else
  (void)stream;
  NoCuda();
#endif
}

void CheckBlockingStream(Device device, void* stream) {
  if (device == Device::kCpu || stream == nullptr) return;
#ifdef CUGYM_HAVE_CUDA
  const auto s = static_cast<cudaStream_t>(stream);
  if (s == cudaStreamLegacy || s == cudaStreamPerThread) return;
  unsigned int flags = 0;
  CUGYM_CUDA_CHECK(cudaStreamGetFlags(s, &flags));
  if ((flags & cudaStreamNonBlocking) != 0) {
    char address[32];
    std::snprintf(address, sizeof(address), "%p", stream);
    throw std::invalid_argument(std::string("CUDA stream ") + address +
                                " was created with cudaStreamNonBlocking; cugym needs a blocking stream "
                                "(cudaStreamCreate, or cudaStreamDefault flags): its synchronous copies run on the "
                                "legacy default stream and are ordered with the stream's work only through it");
  }
#else
  NoCuda();
#endif
}

Stream::Stream(Device device) {
  if (device == Device::kCpu) return;
#ifdef CUGYM_HAVE_CUDA
  cudaStream_t s = nullptr;
  CUGYM_CUDA_CHECK(cudaStreamCreate(&s));
  handle_ = s;
#else
  NoCuda();
#endif
}

Stream::~Stream() {
#ifdef CUGYM_HAVE_CUDA
  if (handle_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(handle_));  // never throws; a failure leaks
#endif
}

void* AllocatePinned(std::size_t bytes) {
  if (bytes == 0) return nullptr;
#ifdef CUGYM_HAVE_CUDA
  void* ptr = nullptr;
  cudaError_t status = cudaMallocHost(&ptr, bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error("cannot allocate " + Mib(bytes) + " of pinned host memory (" + cudaGetErrorString(status) +
                             ")");
  }
  return ptr;
#else
  NoCuda();
#endif
}

void FreePinned(void* ptr) noexcept {
#ifdef CUGYM_HAVE_CUDA
  if (ptr != nullptr) cudaFreeHost(ptr);  // destructors never throw; a failure here only leaks
#else
  (void)ptr;
#endif
}

void CopyBytesAsync(void* dst, const void* src, std::size_t bytes, Device device, void* stream) {
  if (bytes == 0) return;
  if (device == Device::kCpu) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef CUGYM_HAVE_CUDA
  cudaStream_t s = stream != nullptr ? static_cast<cudaStream_t>(stream) : cudaStreamPerThread;
  CUGYM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
#else
  (void)stream;
  NoCuda();
#endif
}

}  // namespace cugym
