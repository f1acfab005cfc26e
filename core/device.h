// Run-time device selection: `--device auto|cpu|cuda`. No CUDA types here.
#pragma once

#include <string>

namespace cugym {

enum class Device { kCpu, kCuda };

const char* DeviceName(Device device);

// True when this binary was built with the CUDA back end.
bool CudaBuilt();
// True when CUDA was built in and at least one GPU is usable. Never throws.
bool CudaAvailable();
// Why CUDA cannot be used ("" when it can): no CUDA build, no driver, no GPU.
std::string CudaUnavailableReason();
// Name of GPU 0 ("" without one).
std::string CudaDeviceName();
// The calling thread's current CUDA device (cudaGetDevice): where cudaMalloc puts memory and
// kernels run. Throws std::runtime_error without CUDA.
int CudaCurrentDevice();

// Makes CUDA device `id` the calling thread's current one for the life of this object (cudaSetDevice
// where it is another) and restores the previous one at the end, so that memory and launches of
// an object made on device `id` stay there whatever the caller made current since (PyTorch's
// torch.cuda.set_device, say). Does nothing for Device::kCpu.
class ScopedCudaDevice {
 public:
  ScopedCudaDevice(Device device, int id);
  ~ScopedCudaDevice();
  ScopedCudaDevice(const ScopedCudaDevice&) = delete;
  ScopedCudaDevice& operator=(const ScopedCudaDevice&) = delete;

 private:
  int previous_ = -1;  // the device to restore; -1: none changed
};

// Parses "auto", "cpu" or "cuda". "auto" picks CUDA when a GPU is usable, else the CPU.
// Throws std::invalid_argument for an unknown name or a CUDA request that cannot be met.
Device ResolveDevice(const std::string& name);

}  // namespace cugym
