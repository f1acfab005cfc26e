// Typed, move-only buffers on one device (host memory for the CPU, cudaMalloc for CUDA), and
// the few copies the host needs. No CUDA types here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/device.h"

namespace cugym {

// Allocates `bytes` on `device` (64-byte aligned on the host). Throws std::runtime_error when
// memory is short. Zero bytes gives nullptr.
void* AllocateBytes(Device device, std::size_t bytes);
void FreeBytes(Device device, void* ptr) noexcept;
void CopyBytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes);
void ZeroBytes(Device device, void* ptr, std::size_t bytes);
// Memory that can still be allocated on `device`: MemAvailable for the host, cudaMemGetInfo's
// free bytes for CUDA. Used to refuse a request before allocating.
std::size_t AvailableBytes(Device device);
// Waits until all work queued on `device` is done (a no-op on the CPU).
void Synchronize(Device device);

// Page-locked host memory (cudaMallocHost), from which copies to the GPU run asynchronously;
// 64-byte aligned or better. Throws std::runtime_error without CUDA. Zero bytes gives nullptr.
void* AllocatePinned(std::size_t bytes);
void FreePinned(void* ptr) noexcept;
// For `device` CUDA: queues a copy on `stream` (a cudaStream_t; nullptr: the per-thread default
// stream) and returns, so the host can queue further work (and a CUDA graph can capture it);
// Synchronize, or a later synchronous copy, waits for it. Either side may be the GPU; host memory
// must be pinned for the copy to be truly asynchronous. For the CPU: a plain memcpy.
void CopyBytesAsync(void* dst, const void* src, std::size_t bytes, Device device, void* stream);

template <class T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(Device device, std::size_t size)
      : device_(device), size_(size), data_(static_cast<T*>(AllocateBytes(device, size * sizeof(T)))) {}
  ~Buffer() { FreeBytes(device_, data_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept { Swap(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    Buffer(std::move(other)).Swap(*this);
    return *this;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  Device device() const { return device_; }

  void Zero() { ZeroBytes(device_, data_, size_ * sizeof(T)); }
  // Copies elements [first, first + count) to the host.
  std::vector<T> ToHost(std::size_t first = 0, std::size_t count = SIZE_MAX) const {
    if (count == SIZE_MAX) count = size_ - first;
    std::vector<T> out(count);
    CopyBytes(out.data(), Device::kCpu, data_ + first, device_, count * sizeof(T));
    return out;
  }
  void FromHost(const T* src, std::size_t count, std::size_t first = 0) {
    CopyBytes(data_ + first, device_, src, Device::kCpu, count * sizeof(T));
  }

 private:
  void Swap(Buffer& other) noexcept {
    std::swap(device_, other.device_);
    std::swap(size_, other.size_);
    std::swap(data_, other.data_);
  }

  Device device_ = Device::kCpu;
  std::size_t size_ = 0;
  T* data_ = nullptr;
};

}  // namespace cugym
