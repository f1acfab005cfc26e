// Typed, move-only buffers on one device (host memory for the CPU, cudaMalloc for CUDA), and
// the few copies the host needs. No CUDA types here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
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
// The one memory-fit check: refuses, before anything is allocated, `count` things of `bytes_each`
// bytes that would not fit in 90% of what `device` has free, with std::invalid_argument "WHAT need
// COUNT x B MiB of DEVICE memory but only F MiB is free (DETAIL)" ("WHAT needs B MiB ..." for a
// count of 1). `what` names the things and says how the count came about; `detail`, what to change.
void CheckMemoryFits(const std::string& what, int64_t count, double bytes_each, Device device,
                     const std::string& detail);
// Waits until all work queued on `device` is done (a no-op on the CPU), other users' streams
// included (PyTorch's, say): prefer SynchronizeStream where the work is on one stream.
void Synchronize(Device device);
// Waits until the work queued on `stream` (a cudaStream_t; nullptr: the per-thread default stream)
// is done. A no-op on the CPU.
void SynchronizeStream(Device device, void* stream);
// Throws std::invalid_argument, naming the stream, when `stream` (a cudaStream_t) was created with
// cudaStreamNonBlocking. cugym's synchronous copies and fills (CopyBytes, ZeroBytes, Buffer's
// ToHost/FromHost: cudaMemcpy and cudaMemset) run on the legacy default stream, and reach the
// kernels and asynchronous copies queued on a caller's stream in the right order only through the
// legacy stream's implicit synchronisation with blocking streams; a non-blocking stream would let
// a host read overtake the kernel that writes it, or a pinned buffer be rewritten while a copy
// from it is in flight. nullptr, cudaStreamLegacy and cudaStreamPerThread are blocking. Does
// nothing for Device::kCpu.
void CheckBlockingStream(Device device, void* stream);

// Page-locked host memory (cudaMallocHost), from which copies to the GPU run asynchronously;
// 64-byte aligned or better. Throws std::runtime_error without CUDA. Zero bytes gives nullptr.
void* AllocatePinned(std::size_t bytes);
void FreePinned(void* ptr) noexcept;
// For `device` CUDA: queues a copy on `stream` (a cudaStream_t; nullptr: the per-thread default
// stream) and returns, so the host can queue further work (and a CUDA graph can capture it);
// Synchronize, or a later synchronous copy, waits for it. Either side may be the GPU; host memory
// must be pinned for the copy to be truly asynchronous. For the CPU: a plain memcpy.
void CopyBytesAsync(void* dst, const void* src, std::size_t bytes, Device device, void* stream);

// A CUDA stream of cugym's own (cudaStreamCreate: a blocking stream, see CheckBlockingStream), for
// a caller that must not share the per-thread default stream with others; a null handle on the
// CPU. Move-only; destroyed with cudaStreamDestroy, which lets work still queued on it finish.
class Stream {
 public:
  Stream() = default;
  explicit Stream(Device device);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  void* get() const { return handle_; }  // a cudaStream_t; nullptr on the CPU

 private:
  void* handle_ = nullptr;
};

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
